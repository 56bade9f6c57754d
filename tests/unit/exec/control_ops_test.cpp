// Unit tests of the control operators If, While, Do, CreateScope and HasScope: semantics, every
// error path with its context, cancellation, reuse of Do's scope across runs, and concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "moka/exec/control_ops.h"
#include "moka/moka.h"
#include "support/test_ops.h"

namespace moka {
namespace {

using testing::register_test_ops;
using testing::test_state;

NetDef net(const std::string& name, std::vector<OperatorDef> ops) {
  NetDef n;
  n.name = name;
  n.op = std::move(ops);
  return n;
}

OperatorDef i64_const(const std::string& out, int64_t v) {
  return make_op("GivenTensorInt64Fill", {}, {out},
                 {make_arg("values", std::vector<int64_t>{v}), make_arg("shape", std::vector<int64_t>{})});
}

OperatorDef bool_const(const std::string& out, bool v) {
  return make_op("ConstantFill", {}, {out}, {make_arg("dtype", int64_t{5}), make_arg("value", int64_t{v})});
}

void set_i64(Workspace& ws, const std::string& name, int64_t v) {
  ws.create_blob(name)->get_mutable<Tensor>() = Tensor::scalar<int64_t>(v);
}

void set_bool(Workspace& ws, const std::string& name, bool v) {
  ws.create_blob(name)->get_mutable<Tensor>() = Tensor::scalar<bool>(v);
}

int64_t get_i64(const Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

OperatorDef if_op(const std::string& cond, std::vector<std::string> ins, std::vector<std::string> outs, NetDef then_net,
                  std::optional<NetDef> else_net = std::nullopt) {
  ins.insert(ins.begin(), cond);
  std::vector<Argument> args{make_arg("then_net", std::move(then_net))};
  if (else_net) args.push_back(make_arg("else_net", std::move(*else_net)));
  return make_op("If", std::move(ins), std::move(outs), std::move(args));
}

OperatorDef while_op(const std::string& cond, std::vector<std::string> ins, std::vector<std::string> outs,
                     NetDef loop_net, std::optional<NetDef> cond_net = std::nullopt) {
  ins.insert(ins.begin(), cond);
  std::vector<Argument> args{make_arg("loop_net", std::move(loop_net))};
  if (cond_net) args.push_back(make_arg("cond_net", std::move(*cond_net)));
  return make_op("While", std::move(ins), std::move(outs), std::move(args));
}

// Do(ins + [scope], outs + [scope]) binding inner[k] to outer blob idx[k].
OperatorDef do_op(std::vector<std::string> ins, std::vector<std::string> outs, const std::string& scope, NetDef body,
                  std::vector<std::string> inner, std::vector<int64_t> idx, std::vector<Argument> extra = {}) {
  ins.push_back(scope);
  outs.push_back(scope);
  std::vector<Argument> args{make_arg("net", std::move(body)), make_arg("inner_blobs", std::move(inner)),
                             make_arg("outer_blobs_idx", std::move(idx))};
  for (auto& a : extra) args.push_back(std::move(a));
  return make_op("Do", std::move(ins), std::move(outs), std::move(args));
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception";
  return {};
}

std::size_t live_workspaces() {
  std::size_t n = 0;
  Workspace::for_each([&](Workspace*) { ++n; });
  return n;
}

// ---- registration ----

TEST(ControlOps, RegisteredWithSchemas) {
  register_control_operators();
  register_control_operators();  // idempotent
  const auto& reg = OperatorRegistry::global();
  for (const char* t : {"If", "While", "Do", "CreateScope", "HasScope"}) EXPECT_TRUE(reg.has(t)) << t;
  const ArgSpec* then_net = reg.schema("If")->find_arg("then_net");
  ASSERT_NE(then_net, nullptr);
  EXPECT_EQ(then_net->type, ArgType::Net);
  EXPECT_TRUE(then_net->required);
  EXPECT_EQ(reg.schema("While")->find_arg("cond_net")->type, ArgType::Net);
  EXPECT_FALSE(reg.schema("While")->find_arg("cond_net")->required);
  EXPECT_EQ(reg.schema("Do")->find_arg("outer_blobs_idx")->type, ArgType::Ints);
  EXPECT_EQ(reg.schema("Do")->find_arg("reuse_workspace")->type, ArgType::Bool);
  EXPECT_EQ(reg.schema("CreateScope")->max_inputs(), 0);
  EXPECT_FALSE(reg.schema("Do")->doc().empty());
}

// ---- If ----

TEST(ControlOps, IfRunsThenOrElse) {
  Workspace ws;
  set_bool(ws, "c", true);
  auto* n = create_net(
      ws, net("outer", {if_op("c", {}, {"r"}, net("then", {i64_const("r", 1)}), net("else", {i64_const("r", 2)}))}));
  n->run();
  EXPECT_EQ(get_i64(ws, "r"), 1);
  set_bool(ws, "c", false);
  n->run();
  EXPECT_EQ(get_i64(ws, "r"), 2);
  // A condition of shape [1] is a single value too.
  ws.blob("c").get_mutable<Tensor>() = Tensor::from_vector<bool>({1}, {true});
  n->run();
  EXPECT_EQ(get_i64(ws, "r"), 1);
}

TEST(ControlOps, IfWithoutElseDoesNothingWhenFalse) {
  Workspace ws;
  set_bool(ws, "c", false);
  set_i64(ws, "r", 7);
  run_net_once(ws, net("outer", {if_op("c", {}, {"r"}, net("then", {i64_const("r", 1)}))}));
  EXPECT_EQ(get_i64(ws, "r"), 7);
}

TEST(ControlOps, IfBranchRunsInTheIfWorkspace) {
  // Blobs the branch creates are the If workspace's own (no scoping without Do).
  Workspace ws;
  set_bool(ws, "c", true);
  run_net_once(ws, net("outer", {if_op("c", {}, {}, net("then", {i64_const("made_inside", 3)}))}));
  EXPECT_EQ(get_i64(ws, "made_inside"), 3);
}

TEST(ControlOps, IfConditionMustBeScalarBool) {
  Workspace ws;
  ws.create_blob("c");
  auto* n = create_net(ws, net("outer", {if_op("c", {}, {}, net("then", {}))}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("net \"outer\" > operator #0 (If): If: the condition (input 0, \"c\") must be a bool tensor "
                     "with one element, got an empty blob"),
            std::string::npos)
      << msg;
  set_i64(ws, "c", 1);
  msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("got int64[]"), std::string::npos) << msg;
  ws.blob("c").get_mutable<Tensor>() = Tensor::from_vector<bool>({2}, {true, true});
  msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("bool tensor with one element"), std::string::npos) << msg;
  ws.blob("c").emplace<int>(3);
  msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("got int (not a tensor)"), std::string::npos) << msg;
}

TEST(ControlOps, IfArgumentErrors) {
  Workspace ws;
  set_bool(ws, "c", true);
  std::string msg = error_of<InvalidInput>([&] { create_net(ws, net("outer", {make_op("If", {"c"}, {}, {})})); });
  EXPECT_NE(msg.find("net \"outer\" > operator #0 (If)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("then_net"), std::string::npos) << msg;
  msg = error_of<InvalidInput>(
      [&] { create_net(ws, net("outer2", {make_op("If", {"c"}, {}, {make_arg("then_net", int64_t{1})})})); });
  EXPECT_NE(msg.find("then_net"), std::string::npos) << msg;
  msg = error_of<InvalidInput>(
      [&] { create_net(ws, net("outer3", {make_op("If", {}, {}, {make_arg("then_net", net("t", {}))})})); });
  EXPECT_NE(msg.find("operator #0 (If)"), std::string::npos) << msg;
}

TEST(ControlOps, IfInnerNetIsInstantiatedWithTheIf) {
  Workspace ws;
  set_bool(ws, "c", false);  // the branch never runs, yet its error is found
  std::string msg = error_of<InvalidInput>([&] {
    create_net(ws, net("outer", {i64_const("a", 1), if_op("c", {}, {}, net("then", {make_op("NoSuchOp", {}, {})}))}));
  });
  EXPECT_NE(msg.find("net \"outer\" > operator #1 (If) > net \"then\" > operator #0 (NoSuchOp)"), std::string::npos)
      << msg;
}

TEST(ControlOps, IfErrorNamesTheIfAndTheInnerNet) {
  Workspace ws;
  set_bool(ws, "c", true);
  ws.create_blob("empty");
  auto* n = create_net(
      ws, net("outer", {i64_const("a", 1), i64_const("b", 2), i64_const("one", 1),
                        if_op("c", {"empty", "one"}, {"z"}, net("then", {make_op("Add", {"empty", "one"}, {"z"})}))}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_EQ(msg.rfind("net \"outer\" > operator #3 (If) > net \"then\" > operator #0 (Add): ", 0), 0u) << msg;
}

TEST(ControlOps, IfCancelReachesTheBranch) {
  register_test_ops();
  test_state().reset();
  Workspace ws;
  set_bool(ws, "c", true);
  auto* n = create_net(ws, net("outer", {if_op("c", {}, {}, net("then", {make_op("StuckBlocking", {}, {})}))}));
  std::thread t([&] { n->run(); });
  while (!test_state().stuck_run) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  n->cancel();
  t.join();
  EXPECT_GE(test_state().cancel_count.load(), 1);
}

// ---- While ----

TEST(ControlOps, WhileWithCondNet) {
  Workspace ws;
  set_i64(ws, "x", 0);
  set_i64(ws, "y", 0);
  set_i64(ws, "one", 1);
  set_i64(ws, "seven", 7);
  ws.create_blob("c");  // filled by the condition net before it is first read
  auto cond = net("cond", {make_op("Add", {"x", "one"}, {"x"}), make_op("LT", {"x", "seven"}, {"c"})});
  auto body = net("body", {make_op("Add", {"x", "y"}, {"y"})});
  run_net_once(ws, net("outer", {while_op("c", {"x", "y"}, {"x", "y"}, body, cond)}));
  EXPECT_EQ(get_i64(ws, "x"), 7);
  EXPECT_EQ(get_i64(ws, "y"), 21);
}

TEST(ControlOps, WhileWithoutCondNet) {
  Workspace ws;
  set_i64(ws, "i", 0);
  set_i64(ws, "one", 1);
  set_i64(ws, "five", 5);
  set_bool(ws, "c", true);
  auto body = net("body", {make_op("Add", {"i", "one"}, {"i"}), make_op("LT", {"i", "five"}, {"c"})});
  auto* n = create_net(ws, net("outer", {while_op("c", {"i"}, {"i"}, body)}));
  n->run();
  EXPECT_EQ(get_i64(ws, "i"), 5);
  n->run();  // the condition is false now: the body does not run
  EXPECT_EQ(get_i64(ws, "i"), 5);
}

TEST(ControlOps, WhileErrors) {
  Workspace ws;
  set_i64(ws, "c", 1);
  auto* n = create_net(ws, net("outer", {while_op("c", {}, {}, net("body", {}))}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("net \"outer\" > operator #0 (While): While: the condition"), std::string::npos) << msg;
  msg = error_of<InvalidInput>([&] { create_net(ws, net("outer2", {make_op("While", {"c"}, {}, {})})); });
  EXPECT_NE(msg.find("loop_net"), std::string::npos) << msg;

  set_bool(ws, "b", true);
  ws.create_blob("empty");
  set_i64(ws, "one", 1);
  auto* failing =
      create_net(ws, net("outer3", {while_op("b", {}, {}, net("body", {make_op("Add", {"empty", "one"}, {"z"})}))}));
  msg = error_of<TypeError>([&] { failing->run(); });
  EXPECT_EQ(msg.rfind("net \"outer3\" > operator #0 (While) > net \"body\" > operator #0 (Add): ", 0), 0u) << msg;
  auto* failing_cond = create_net(
      ws,
      net("outer4", {while_op("b", {}, {}, net("body", {}), net("cond", {make_op("Add", {"empty", "one"}, {"z"})}))}));
  msg = error_of<TypeError>([&] { failing_cond->run(); });
  EXPECT_EQ(msg.rfind("net \"outer4\" > operator #0 (While) > net \"cond\" > operator #0 (Add): ", 0), 0u) << msg;
}

TEST(ControlOps, WhileCancelEndsAnEndlessLoop) {
  Workspace ws;
  set_bool(ws, "c", true);
  set_i64(ws, "i", 0);
  set_i64(ws, "one", 1);
  auto* n =
      create_net(ws, net("outer", {while_op("c", {"i"}, {"i"}, net("body", {make_op("Add", {"i", "one"}, {"i"})}))}));
  std::string msg;
  std::thread t([&] { msg = error_of<Cancelled>([&] { n->run(); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  n->cancel();
  t.join();
  EXPECT_NE(msg.find("net \"outer\" > operator #0 (While): While: cancelled"), std::string::npos) << msg;
  EXPECT_GT(get_i64(ws, "i"), 0);
  // The cancellation belonged to that run: the next one runs normally.
  set_bool(ws, "c", false);
  EXPECT_NO_THROW(n->run());
}

TEST(ControlOps, WhileCancelReachesTheBody) {
  register_test_ops();
  test_state().reset();
  Workspace ws;
  set_bool(ws, "c", true);
  auto* n = create_net(ws, net("outer", {while_op("c", {}, {}, net("body", {make_op("StuckBlocking", {}, {})}))}));
  std::string msg;
  std::thread t([&] { msg = error_of<Cancelled>([&] { n->run(); }); });
  while (!test_state().stuck_run) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  n->cancel();
  t.join();
  EXPECT_EQ(test_state().cancel_count.load(), 1);
  EXPECT_NE(msg.find("While: cancelled"), std::string::npos) << msg;
}

// ---- CreateScope / HasScope ----

TEST(ControlOps, CreateScopeAndHasScope) {
  Workspace ws;
  set_i64(ws, "x", 1);
  auto* n =
      create_net(ws, net("outer", {make_op("CreateScope", {}, {"s"}), make_op("HasScope", {"s"}, {"h0"}),
                                   do_op({"x"}, {}, "s", net("body", {make_op("Copy", {"x"}, {"t"})}), {"x"}, {0}),
                                   make_op("HasScope", {"s"}, {"h1"})}));
  n->run();
  EXPECT_FALSE(ws.blob("h0").get<Tensor>().item<bool>());
  EXPECT_TRUE(ws.blob("h1").get<Tensor>().item<bool>());
  auto& stack = ws.blob("s").get<WorkspaceStack>();
  EXPECT_FALSE(stack.empty());
  run_operator_once(ws, make_op("CreateScope", {}, {"s"}));
  EXPECT_EQ(&ws.blob("s").get<WorkspaceStack>(), &stack);  // cleared in place
  EXPECT_TRUE(stack.empty());
  EXPECT_EQ(stack.current_workspace(), nullptr);
  // CreateScope replaces whatever the blob held.
  set_i64(ws, "s2", 3);
  run_operator_once(ws, make_op("CreateScope", {}, {"s2"}));
  EXPECT_TRUE(ws.blob("s2").is_type<WorkspaceStack>());
  std::string msg = error_of<TypeError>([&] { run_operator_once(ws, make_op("HasScope", {"x"}, {"h"})); });
  EXPECT_NE(msg.find("WorkspaceStack"), std::string::npos) << msg;
}

// ---- Do ----

TEST(ControlOps, DoForwardsBlobsAndKeepsLocalsInside) {
  Workspace ws;
  set_i64(ws, "x", 5);
  set_i64(ws, "y", 0);
  auto body = net("body", {i64_const("tmp", 10), make_op("Add", {"in_x", "tmp"}, {"out_y"})});
  // The child workspace lives as long as the Do operator (create_net keeps the net in ws).
  create_net(
      ws, net("outer", {make_op("CreateScope", {}, {"s"}), do_op({"x"}, {"y"}, "s", body, {"in_x", "out_y"}, {0, 1})}))
      ->run();
  EXPECT_EQ(get_i64(ws, "y"), 15);
  EXPECT_FALSE(ws.has_blob("tmp"));
  EXPECT_FALSE(ws.has_blob("in_x"));
  EXPECT_FALSE(ws.has_blob("out_y"));
  auto inner = ws.blob("s").get<WorkspaceStack>().current_workspace();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->local_blobs(), std::vector<std::string>{"tmp"});
  EXPECT_EQ(get_i64(*inner, "tmp"), 10);
  EXPECT_EQ(inner->get_blob("out_y"), ws.get_blob("y"));
  EXPECT_FALSE(inner->has_blob("x"));  // only forwarded names are visible
}

TEST(ControlOps, DoNetSeesOnlyForwardedBlobs) {
  Workspace ws;
  set_i64(ws, "secret", 1);
  set_i64(ws, "y", 0);
  std::string msg = error_of<InvalidInput>([&] {
    create_net(ws,
               net("outer", {make_op("CreateScope", {}, {"s"}),
                             do_op({}, {"y"}, "s", net("body", {make_op("Copy", {"secret"}, {"y"})}), {"y"}, {0})}));
  });
  EXPECT_NE(msg.find("net \"outer\" > operator #1 (Do) > net \"body\" > operator #0 (Copy)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("non-existing input blob: secret"), std::string::npos) << msg;
}

// Inner net of the next two tests: a nested If writes local `loc` only when `cond` is true, then
// `loc` is copied out. A stale `loc` from an earlier run is observable only through such a skip.
NetDef conditional_local_body() {
  return net("body", {if_op("cond", {}, {}, net("set_loc", {i64_const("loc", 5)})), make_op("Copy", {"loc"}, {"out"})});
}

TEST(ControlOps, DoLocalsAreFreshOnEveryRun) {
  Workspace ws;
  set_bool(ws, "c", true);
  set_i64(ws, "y", 0);
  auto* n = create_net(ws, net("outer", {make_op("CreateScope", {}, {"s"}),
                                         do_op({"c"}, {"y"}, "s", conditional_local_body(), {"cond", "out"}, {0, 1})}));
  n->run();
  EXPECT_EQ(get_i64(ws, "y"), 5);
  set_bool(ws, "c", false);
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("operator #1 (Do) > net \"body\" > operator #1 (Copy)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"loc\") is empty"), std::string::npos) << msg;
}

TEST(ControlOps, DoReuseWorkspaceKeepsLocals) {
  Workspace ws;
  set_bool(ws, "c", true);
  set_i64(ws, "y", 0);
  auto do_def =
      do_op({"c"}, {"y"}, "s", conditional_local_body(), {"cond", "out"}, {0, 1}, {make_arg("reuse_workspace", true)});
  auto* n = create_net(ws, net("outer", {make_op("CreateScope", {}, {"s"}), do_def}));
  auto* just_do = create_net(ws, net("only_do", {do_def}));
  n->run();
  EXPECT_EQ(get_i64(ws, "y"), 5);
  set_bool(ws, "c", false);
  set_i64(ws, "y", 0);
  just_do->run();  // same scope, not cleared: `loc` from the previous run is still there
  EXPECT_EQ(get_i64(ws, "y"), 5);
  set_i64(ws, "y", 0);
  EXPECT_THROW(n->run(), TypeError);  // CreateScope cleared the scope: fresh locals again
}

TEST(ControlOps, DoReuseWorkspaceSharesTheScopeBetweenDoOps) {
  Workspace ws;
  set_i64(ws, "y", 0);
  auto writer = do_op({}, {}, "s", net("w", {i64_const("shared_loc", 42)}), {}, {});
  auto reader = do_op({}, {"y"}, "s", net("r", {make_op("Copy", {"shared_loc"}, {"out"})}), {"out"}, {0},
                      {make_arg("reuse_workspace", true)});
  run_net_once(ws, net("outer", {make_op("CreateScope", {}, {"s"}), writer, reader}));
  EXPECT_EQ(get_i64(ws, "y"), 42);
  EXPECT_FALSE(ws.has_blob("shared_loc"));
  // A reusing Do that binds a name the shared workspace uses for something else is refused.
  set_i64(ws, "z", 0);
  auto clash = do_op({}, {"z"}, "s", net("r2", {make_op("Copy", {"shared_loc"}, {"shared_loc2"})}), {"shared_loc"}, {0},
                     {make_arg("reuse_workspace", true)});
  std::string msg = error_of<InvalidInput>([&] {
    run_net_once(ws, net("outer2", {make_op("CreateScope", {}, {"s"}), writer, clash}));
  });
  EXPECT_NE(msg.find("operator #2 (Do): Do: cannot reuse the scope's workspace: inner blob \"shared_loc\" is a local "
                     "blob there"),
            std::string::npos)
      << msg;
}

TEST(ControlOps, DoBindingErrors) {
  Workspace ws;
  set_i64(ws, "a", 1);
  set_i64(ws, "b", 2);
  auto body = net("body", {});
  struct Case {
    OperatorDef op;
    std::string expect;
  };
  auto with_ends = [&](std::vector<std::string> ins, std::vector<std::string> outs, std::vector<Argument> args) {
    args.insert(args.begin(), make_arg("net", body));
    return make_op("Do", std::move(ins), std::move(outs), std::move(args));
  };
  const std::vector<Case> cases = {
      {do_op({"a"}, {}, "s", body, {"x", "y"}, {0}),
       "different inner/outer blobs lengths (2 inner_blobs, 1 outer_blobs_idx)"},
      {do_op({"a"}, {}, "s", body, {"x"}, {1}), "outer blob index (1, inner name: \"x\") is out of bounds [0, 0]"},
      {do_op({"a"}, {}, "s", body, {"x"}, {-1}), "out of bounds"},
      {do_op({"a", "b"}, {}, "s", body, {"x", "x"}, {0, 1}), "redefinition of inner blob \"x\""},
      {do_op({"a"}, {"a"}, "s", body, {"x", "y"}, {0, 1}), "Reusage of outer name \"a\""},
      {do_op({"a", "b"}, {}, "s", body, {"x"}, {0}), "\"b\" is not bound to an inner blob"},
      {with_ends({"a", "s"}, {"t"}, {}), "Expected same input/output workspace blob"},
      {do_op({"a", "a"}, {}, "s", body, {"x"}, {0}), "Duplicate input blobs"},
      {do_op({}, {"b", "b"}, "s", body, {"x"}, {0}), "Duplicate output blobs"},
      {do_op({}, {}, "s", body, {}, {}, {make_arg("reuse_workspace", true), make_arg("copy_external_blobs", true)}),
       "Reuse workspace and copy external blobs simultaneously"},
      {with_ends({}, {"s"}, {}), "Do"},              // no input at all: arity
      {make_op("Do", {"s"}, {"s"}, {}), "\"net\""},  // missing net
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::string msg = error_of<InvalidInput>([&] {
      create_net(ws, net(fmt::format("outer{}", i), {make_op("CreateScope", {}, {"s"}), cases[i].op}));
    });
    EXPECT_NE(msg.find(fmt::format("net \"outer{}\" > operator #1 (Do)", i)), std::string::npos) << i << ": " << msg;
    EXPECT_NE(msg.find(cases[i].expect), std::string::npos) << i << ": " << msg;
  }
}

TEST(ControlOps, DoScopeBlob) {
  Workspace ws;
  set_i64(ws, "s", 3);  // not a scope
  auto* n = create_net(ws, net("outer", {do_op({}, {}, "s", net("body", {}), {}, {})}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_NE(msg.find("net \"outer\" > operator #0 (Do): Do: the scope blob \"s\" holds Tensor, expected a "
                     "WorkspaceStack"),
            std::string::npos)
      << msg;
  // Without CreateScope the Do makes the scope itself, as Caffe2's Output<WorkspaceStack> does.
  ws.blob("s").reset();
  EXPECT_NO_THROW(n->run());
  EXPECT_TRUE(ws.blob("s").is_type<WorkspaceStack>());
}

TEST(ControlOps, DoErrorNamesTheDoAndTheInnerNet) {
  Workspace ws;
  ws.create_blob("empty");
  set_i64(ws, "one", 1);
  auto body = net("body", {i64_const("k", 1), make_op("Add", {"e", "k"}, {"z"})});
  auto* n =
      create_net(ws, net("outer", {make_op("CreateScope", {}, {"s"}), do_op({"empty"}, {}, "s", body, {"e"}, {0})}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_EQ(msg.rfind("net \"outer\" > operator #1 (Do) > net \"body\" > operator #1 (Add): ", 0), 0u) << msg;
}

// The shape add_if_op generates: If > Do > branch net. The error names every level.
TEST(ControlOps, NestedErrorNamesEveryLevel) {
  Workspace ws;
  set_bool(ws, "c", true);
  ws.create_blob("empty");
  set_i64(ws, "z", 0);
  auto branch = net("then", {make_op("Add", {"e", "e"}, {"out"})});
  auto do_then = net("do_then_net", {do_op({"empty"}, {"z"}, "s", branch, {"e", "out"}, {0, 1})});
  auto* n = create_net(
      ws, net("outer", {make_op("CreateScope", {}, {"s"}), if_op("c", {"empty", "s"}, {"z", "s"}, do_then)}));
  std::string msg = error_of<TypeError>([&] { n->run(); });
  EXPECT_EQ(msg.rfind("net \"outer\" > operator #1 (If) > net \"do_then_net\" > operator #0 (Do) > net \"then\" > "
                      "operator #0 (Add): ",
                      0),
            0u)
      << msg;
}

TEST(ControlOps, DoCancelReachesItsNet) {
  register_test_ops();
  test_state().reset();
  Workspace ws;
  auto* n = create_net(ws, net("outer", {make_op("CreateScope", {}, {"s"}),
                                         do_op({}, {}, "s", net("body", {make_op("StuckBlocking", {}, {})}), {}, {})}));
  std::thread t([&] { n->run(); });
  while (!test_state().stuck_run) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  n->cancel();
  t.join();
  EXPECT_EQ(test_state().cancel_count.load(), 1);
}

// A Do body re-run by a While loop: one child workspace and one instantiated net for all the
// iterations, nothing accumulating (Caffe2 pushed a workspace per iteration).
TEST(ControlOps, DoInsideWhileReusesItsWorkspace) {
  auto run_loop = [](int64_t n, std::size_t* live_inside, std::vector<std::string>* locals) {
    Workspace ws;
    set_i64(ws, "i", 0);
    set_i64(ws, "sum", 0);
    set_i64(ws, "n", n);
    set_bool(ws, "c", true);
    auto body = net("body", {i64_const("one", 1), make_op("Add", {"i", "one"}, {"i"}),
                             make_op("Add", {"sum", "i"}, {"sum"}), make_op("LT", {"i", "limit"}, {"c"})});
    auto do_body = do_op({"i", "sum", "n"}, {"i", "sum", "c"}, "s", body, {"i", "sum", "limit", "c"}, {0, 1, 2, 5});
    auto* outer = create_net(
        ws, net("outer", {make_op("CreateScope", {}, {"s"}),
                          while_op("c", {"i", "sum", "n", "s"}, {"i", "sum", "c", "s"}, net("loop", {do_body}))}));
    outer->run();
    *live_inside = live_workspaces();
    *locals = ws.blob("s").get<WorkspaceStack>().current_workspace()->local_blobs();
    EXPECT_EQ(get_i64(ws, "i"), n);
    EXPECT_EQ(get_i64(ws, "sum"), n * (n + 1) / 2);
    EXPECT_FALSE(ws.has_blob("one"));
  };
  std::size_t live_short = 0, live_long = 0;
  std::vector<std::string> locals_short, locals_long;
  run_loop(3, &live_short, &locals_short);
  run_loop(2000, &live_long, &locals_long);
  EXPECT_EQ(live_short, live_long);
  EXPECT_EQ(locals_long, std::vector<std::string>{"one"});
  EXPECT_EQ(locals_short, locals_long);
}

// Two concurrent substeps, each looping a While over a Do in its own blobs (run under TSan).
TEST(ControlOps, WhileLoopsInConcurrentSubsteps) {
  Workspace ws;
  PlanDef plan;
  plan.name = "concurrent_while";
  ExecutionStepDef parallel;
  parallel.name = "parallel";
  parallel.concurrent_substeps = true;
  for (int k = 0; k < 2; ++k) {
    const std::string p = fmt::format("w{}/", k);
    auto body = net(p + "body", {i64_const("one", 1), make_op("Add", {"x", "one"}, {"x"}),
                                 make_op("Add", {"y", "x"}, {"y"}), make_op("LT", {"x", "lim"}, {"c"})});
    auto do_body = do_op({p + "x", p + "y", p + "lim"}, {p + "x", p + "y", p + "c"}, p + "scope", body,
                         {"x", "y", "lim", "c"}, {0, 1, 2, 5});
    plan.network.push_back(
        net(p + "net", {i64_const(p + "x", 0), i64_const(p + "y", 0), i64_const(p + "lim", 500 + k),
                        bool_const(p + "c", true), make_op("CreateScope", {}, {p + "scope"}),
                        while_op(p + "c", {p + "x", p + "y", p + "lim", p + "scope"},
                                 {p + "x", p + "y", p + "c", p + "scope"}, net(p + "loop", {do_body}))}));
    ExecutionStepDef sub;
    sub.name = p + "step";
    sub.network = {p + "net"};
    parallel.substep.push_back(sub);
  }
  ExecutionStepDef top;
  top.name = "top";
  top.num_iter = 5;
  top.substep = {parallel};
  plan.execution_step.push_back(top);
  run_plan(ws, plan);
  for (int k = 0; k < 2; ++k) {
    const int64_t n = 500 + k;
    EXPECT_EQ(get_i64(ws, fmt::format("w{}/x", k)), n);
    EXPECT_EQ(get_i64(ws, fmt::format("w{}/y", k)), n * (n + 1) / 2);
  }
  EXPECT_FALSE(ws.has_blob("one"));
}

// A failure inside a While in one substep cancels a While spinning in its sibling.
TEST(ControlOps, FailureCancelsASiblingWhile) {
  Workspace ws;
  PlanDef plan;
  plan.name = "cancel_while";
  plan.network.push_back(
      net("spin", {bool_const("c", true), i64_const("i", 0), i64_const("one", 1),
                   while_op("c", {"i", "one"}, {"i"}, net("spin_body", {make_op("Add", {"i", "one"}, {"i"})}))}));
  plan.network.push_back(
      net("fail", {make_op("SleepMs", {}, {}, {make_arg("ms", int64_t{20})}), make_op("ThrowStd", {}, {})}));
  register_test_ops();
  ExecutionStepDef parallel;
  parallel.name = "parallel";
  parallel.concurrent_substeps = true;
  ExecutionStepDef a, b;
  a.name = "a";
  a.network = {"spin"};
  b.name = "b";
  b.network = {"fail"};
  parallel.substep = {a, b};
  plan.execution_step.push_back(parallel);
  std::string msg = error_of<Error>([&] { run_plan(ws, plan); });
  EXPECT_NE(msg.find("ThrowStd"), std::string::npos) << msg;
}

TEST(ControlOps, PlanJsonRoundTripWithNestedNets) {
  PlanDef plan;
  plan.name = "json";
  plan.network.push_back(net("n", {bool_const("c", true), if_op("c", {}, {"r"}, net("then", {i64_const("r", 1)}),
                                                                net("else", {i64_const("r", 2)}))}));
  ExecutionStepDef s;
  s.name = "s";
  s.network = {"n"};
  plan.execution_step.push_back(s);
  PlanDef back = plan_from_json(to_json(plan));
  EXPECT_EQ(back, plan);
  Workspace ws;
  run_plan(ws, back);
  EXPECT_EQ(get_i64(ws, "r"), 1);
}

}  // namespace
}  // namespace moka
