// Unit tests of the control-op DSL blocks ops::IfNet / Else / WhileNet / Condition, the control-op mode of
// NetBuilder (lexical scope, merging, refusals) and control_ops_util's functions on NetDefs
// (docs/building-plans.md §10; docs/operators.md §5).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "moka/builder/control_ops_util.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"
#include "moka/builder/plan.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"
#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using ops::Const;

using testing::invalid_input;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int64_t i64(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<int64_t>(); }

void run(Workspace& ws, NetBuilder& nb, const std::string& name) {
  Plan plan(name);
  plan.add_step(to_execution_step(nb));
  run_plan(ws, plan.proto());
}

// The one net a finished control-op block holds.
Net only_net(const NetBuilder& block) {
  EXPECT_EQ(block.children().size(), 1u);
  return std::get<Net>(block.children().front());
}

std::vector<std::string> op_types(const NetDef& def) {
  std::vector<std::string> out;
  for (const auto& op : def.op) out.push_back(op.type);
  return out;
}

const NetDef& net_arg(const OperatorDef& op, const std::string& name) {
  for (const auto& a : op.arg)
    if (a.name == name && a.n) return *a.n;
  throw std::runtime_error("no net argument " + name);
}

bool in_workspace(const Workspace& ws, const std::string& name) {
  const auto blobs = ws.blobs();
  return std::find(blobs.begin(), blobs.end(), name) != blobs.end();
}

// ---- IfNet / Else ----

TEST(OpsControlNet, IfNetAddsOneNetWithCreateScopeAndIf) {
  BlobRef cond, y;
  NetBuilder block;
  NetBuilder nb({.name = "IfGen"}, [&] {
    y = Const(0);
    cond = Const(true);
    block = ops::IfNet(cond, [&] { ops::Add({y, Const(5)}, {y}); });
  });
  ASSERT_EQ(nb.children().size(), 2u);
  EXPECT_TRUE(std::get<NetBuilder>(nb.children()[1]) == block);
  EXPECT_TRUE(block.use_control_ops());
  const Net if_net = only_net(block);
  EXPECT_EQ(if_net.name(), "IfGen/if_net");
  EXPECT_EQ(op_types(if_net.proto()), (std::vector<std::string>{"CreateScope", "If"}));
  const OperatorDef& if_op = if_net.proto().op.back();
  EXPECT_EQ(if_op.input, (std::vector<std::string>{cond.name(), y.name(), "IfGen/if_net/workspace_if_then"}));
  EXPECT_EQ(if_op.output, (std::vector<std::string>{y.name(), "IfGen/if_net/workspace_if_then"}));
  // Only the outer blob stays an external output of the block's net.
  EXPECT_EQ(if_net.proto().external_output, (std::vector<std::string>{y.name()}));
  const NetDef& do_net = net_arg(if_op, "then_net");
  ASSERT_EQ(op_types(do_net), (std::vector<std::string>{"Do"}));
  EXPECT_EQ(op_types(net_arg(do_net.op[0], "net")), (std::vector<std::string>{"GivenTensorInt64Fill", "Add"}));

  Workspace ws;
  run(ws, nb, "IfGen.plan");
  EXPECT_EQ(i64(ws, y), 5);
}

TEST(OpsControlNet, ElseRewritesTheIfNetWithBothBranches) {
  BlobRef r;
  NetBuilder if_block, returned;
  NetBuilder nb({.name = "IfElse"}, [&] {
    r = Const(0);
    if_block = ops::IfNet(ops::GT({r, Const(1)}), [&] { Const(1, {.blob_out = r}); });
    returned = ops::Else([&] { Const(2, {.blob_out = r}); });
  });
  EXPECT_TRUE(returned == if_block);
  const Net net = only_net(if_block);
  EXPECT_EQ(net.name(), "IfElse/if_else_net");
  EXPECT_EQ(op_types(net.proto()), (std::vector<std::string>{"CreateScope", "CreateScope", "If"}));
  const OperatorDef& if_op = net.proto().op.back();
  EXPECT_NO_THROW(net_arg(if_op, "then_net"));
  EXPECT_NO_THROW(net_arg(if_op, "else_net"));
  Workspace ws;
  run(ws, nb, "IfElse.plan");
  EXPECT_EQ(i64(ws, r), 2);
}

TEST(OpsControlNet, EmptyBranches) {
  BlobRef r;
  NetBuilder a, b;
  NetBuilder nb({.name = "IfEmpty"}, [&] {
    r = Const(3);
    a = ops::IfNet(Const(true), [] {});  // empty then: empty_then_net
    ops::Else([] {});                    // empty else: the then-only If stays
    b = ops::IfNet(Const(false), [] {});
    ops::Else([&] { Const(4, {.blob_out = r}); });
  });
  EXPECT_EQ(only_net(a).name(), "IfEmpty/if_net");
  EXPECT_EQ(net_arg(net_arg(only_net(a).proto().op.back(), "then_net").op[0], "net").op.size(), 0u);
  EXPECT_EQ(only_net(b).name(), "IfEmpty/if_else_net");
  Workspace ws;
  run(ws, nb, "IfEmpty.plan");
  EXPECT_EQ(i64(ws, r), 4);
}

TEST(OpsControlNet, NamedBlocks) {
  NetBuilder i, w;
  NetBuilder nb({.name = "Named"}, [&] {
    BlobRef x = Const(0);
    i = ops::IfNet(Const(true), [&] { ops::Add({x, Const(1)}, {x}); }, {.name = "branch"});
    w = ops::WhileNet(
        [&] {
          ops::Condition([&] { ops::LT({x, Const(3)}); }, {.name = "cond"});
          ops::Add({x, Const(1)}, {x});
        },
        {.name = "loop"});
  });
  EXPECT_EQ(i.name(), "Named/branch");
  EXPECT_EQ(only_net(i).name(), "Named/branch/if_net");
  EXPECT_EQ(w.name(), "Named/loop");
  EXPECT_EQ(only_net(w).name(), "Named/loop/while_net");
}

TEST(OpsControlNet, BranchBlobsAreLocalOuterBlobsAreWrittenInPlace) {
  BlobRef outer, local, nested_local;
  NetBuilder nb({.name = "IfScope"}, [&] {
    outer = Const(1);
    ops::IfNet(Const(true), [&] {
      local = Const(10);
      ops::Add({outer, local}, {outer});  // outer = 11
      ops::IfNet(Const(true), [&] {
        nested_local = Const(100);
        ops::Add({outer, nested_local}, {outer});  // outer = 111
        ops::Add({local, Const(1)}, {local});      // local is outer to the nested If: written in place
      });
      ops::Add({outer, local}, {outer});  // outer = 111 + 11
    });
  });
  Workspace ws;
  run(ws, nb, "IfScope.plan");
  EXPECT_EQ(i64(ws, outer), 122);
  EXPECT_FALSE(in_workspace(ws, local.name()));
  EXPECT_FALSE(in_workspace(ws, nested_local.name()));
}

TEST(OpsControlNet, PlanRunsTwice) {
  BlobRef y;
  NetBuilder nb({.name = "IfTwice"}, [&] {
    y = Const(0);
    ops::IfNet(Const(true), [&] { ops::Add({y, Const(2)}, {y}); });
  });
  Plan plan("IfTwice.plan");
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  for (int k = 0; k < 2; ++k) {
    run_plan(ws, plan.proto());
    EXPECT_EQ(i64(ws, y), 2);  // y = Const(0) runs again first
  }
}

TEST(OpsControlNet, BranchReadingAnUndefinedBlobIsAnError) {
  const std::string msg = invalid_input([] {
    NetBuilder nb({.name = "IfUndef"}, [] {
      ops::IfNet(Const(true), [] { ops::Add({"IfUndef.nowhere", Const(1)}); });
    });
  });
  EXPECT_TRUE(has(msg, "Input blob IfUndef.nowhere is undefined")) << msg;
}

TEST(OpsControlNet, InitialScopeAndStepBuildersInScope) {
  // initial_scope names a blob fed from outside; a blob made inside an ops::loop is not in the
  // lexical scope (Caffe2 only counts nets and control-op blocks).
  BlobRef y;
  NetBuilder nb({.name = "IfInit", .initial_scope = {"IfInit.fed"}}, [&] {
    y = Const(0);
    ops::IfNet(Const(true), [&] { ops::Add({BlobRef("IfInit.fed"), Const(1)}, {y}); });
  });
  EXPECT_TRUE(nb.lexical_scope().count("IfInit.fed"));
  Workspace ws;
  ws.create_blob("IfInit.fed")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(41);
  run(ws, nb, "IfInit.plan");
  EXPECT_EQ(i64(ws, y), 42);

  const std::string msg = invalid_input([] {
    NetBuilder b({.name = "IfLoopScope"}, [] {
      BlobRef inner;
      ops::loop(1, [&] { inner = Const(1); });
      ops::IfNet(Const(true), [&] { ops::Add({inner, inner}); });
    });
  });
  EXPECT_TRUE(has(msg, "is undefined")) << msg;
}

TEST(OpsControlNet, LexicalScopeOfABuilder) {
  NetBuilder nb({.name = "Scope"}, [] {
    BlobRef a = Const(1, {.blob_out = "Scope.a"});
    ops::Add({a, a}, {"Scope.b"});
    ops::IfNet(Const(true), [] { Const(2, {.blob_out = "Scope.c"}); });
    ops::loop(1, [] { Const(3, {.blob_out = "Scope.d"}); });
  });
  nb.update_lexical_scope();
  const BlobNameSet& s = nb.lexical_scope();
  EXPECT_TRUE(s.count("Scope.a"));
  EXPECT_TRUE(s.count("Scope.b"));
  EXPECT_FALSE(s.count("Scope.c"));  // first created inside the IfNet
  EXPECT_FALSE(s.count("Scope.d"));  // inside a loop
}

TEST(OpsControlNet, ElseMisuse) {
  EXPECT_TRUE(has(invalid_input([] { ops::Else([] {}); }), "No active NetBuilder."));
  const std::string first = invalid_input([] { NetBuilder nb({.name = "ElseFirst"}, [] { ops::Else([] {}); }); });
  EXPECT_TRUE(has(first, "Invalid use of Else builder")) << first;
  EXPECT_TRUE(has(first, "ElseFirst")) << first;
  const std::string after_op = invalid_input([] {
    NetBuilder nb([] {
      ops::IfNet(Const(true), [] {});
      Const(1);
      ops::Else([] {});
    });
  });
  EXPECT_TRUE(has(after_op, "Invalid use of Else builder")) << after_op;
  const std::string after_if = invalid_input([] {
    NetBuilder nb([] {
      ops::If(Const(true), [] {});
      ops::Else([] {});
    });
  });
  EXPECT_TRUE(has(after_if, "Invalid use of Else builder")) << after_if;
  const std::string twice = invalid_input([] {
    NetBuilder nb([] {
      ops::IfNet(Const(true), [] {});
      ops::Else([] {});
      ops::Else([] {});
    });
  });
  EXPECT_TRUE(has(twice, "already has an ops::Else")) << twice;
  const std::string inside =
      invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::Else([] {}); }); }); });
  EXPECT_TRUE(has(inside, "Invalid use of Else builder")) << inside;
}

TEST(OpsControlNet, IfNetMisuse) {
  EXPECT_TRUE(has(invalid_input([] { ops::IfNet(BlobRef("c"), [] {}); }), "No active NetBuilder."));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::IfNet(BlobRef(), [] {}); }); }),
                  "Conditional blob is not specified"));
  const std::string expected = "Expected Net or NetBuilder with control ops";
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::loop(2, [] {}); }); }); }),
                  expected));
  EXPECT_TRUE(
      has(invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::If(Const(true), [] {}); }); }); }),
          expected));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::stop_guard([] {}); }); }); }),
                  expected));
  EXPECT_TRUE(has(invalid_input([] {
                    NetBuilder nb([] {
                      ops::IfNet(Const(true),
                                 [] { ops::net(execution_step("IfNetMisuse.step", Net("IfNetMisuse.n"))); });
                    });
                  }),
                  expected));
  const std::string stop = "Stop blobs are not used with control operators";
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::stop(); }); }); }), stop));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::Else([] {}); }); }), "Invalid use of Else builder"));
  EXPECT_TRUE(has(
      invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::stop_if(Const(true)); }); }); }), stop));
  const std::string setup =
      invalid_input([] { NetBuilder nb([] { ops::IfNet(Const(true), [] { ops::task_init([] { Const(1); }); }); }); });
  EXPECT_TRUE(has(setup, "cannot be used inside a control-op block")) << setup;
}

TEST(OpsControlNet, ControlOpBuilderOptions) {
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb({.stop_blob_required = true, .use_control_ops = true}); }),
                  "Stop blobs are not used with control operators"));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb({.stop_blob = BlobRef("s"), .use_control_ops = true}); }),
                  "Stop blobs are not used with control operators"));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb({.initial_scope = {BlobRef()}}); }), "empty BlobRef"));
  // A plain control-op builder merges its nets into one; external outputs only within its scope.
  NetBuilder cb({.name = "Merge", .initial_scope = {"Merge.out"}, .use_control_ops = true}, [] {
    ops::net(ops::NetOptions{.name = "first"});
    Const(1, {.blob_out = "Merge.out"});
    ops::net(ops::NetOptions{.name = "second"});
    Const(2, {.blob_out = "Merge.local"});
  });
  const Net merged = only_net(cb);
  EXPECT_EQ(merged.name(), "Merge/first");
  EXPECT_EQ(merged.proto().op.size(), 2u);
}

TEST(OpsControlNet, BodyExceptionPropagatesAndFreezes) {
  NetBuilder block;
  NetBuilder nb([&] {
    try {
      ops::IfNet(Const(true), [] { throw std::runtime_error("boom"); });
    } catch (const std::runtime_error&) {
    }
    // The failed IfNet is the last child, but it did not complete: no Else for it.
    EXPECT_TRUE(has(invalid_input([] { ops::Else([] {}); }), "did not complete"));
  });
  EXPECT_TRUE(nb.is_frozen());
}

// ---- WhileNet / Condition ----

TEST(OpsControlNet, WhileNetGeneratesWhileWithConditionNet) {
  BlobRef x, c;
  NetBuilder w;
  NetBuilder nb({.name = "WGen"}, [&] {
    x = Const(0);
    w = ops::WhileNet([&] {
      c = ops::Condition([&] { ops::LT({x, Const(4)}); });
      ops::Add({x, Const(1)}, {x});
    });
  });
  const Net net = only_net(w);
  EXPECT_EQ(net.name(), "WGen/while_net");
  // The condition blob is not in scope: it is initialised to false first.
  EXPECT_EQ(op_types(net.proto()), (std::vector<std::string>{"ConstantFill", "CreateScope", "CreateScope", "While"}));
  const OperatorDef& wop = net.proto().op.back();
  EXPECT_EQ(wop.input.front(), c.name());
  EXPECT_NO_THROW(net_arg(wop, "loop_net"));
  EXPECT_NO_THROW(net_arg(wop, "cond_net"));
  Workspace ws;
  run(ws, nb, "WGen.plan");
  EXPECT_EQ(i64(ws, x), 4);
}

TEST(OpsControlNet, WhileNetConditionBlobInScopeAndEmptyBody) {
  BlobRef x, go;
  NetBuilder w;
  NetBuilder nb({.name = "WEmpty"}, [&] {
    x = Const(0);
    go = Const(true);
    w = ops::WhileNet([&] {
      ops::Condition([&] {
        ops::Add({x, Const(1)}, {x});
        ops::LT({x, Const(5)}, {go});
      });
    });
  });
  EXPECT_EQ(op_types(only_net(w).proto()), (std::vector<std::string>{"CreateScope", "CreateScope", "While"}));
  Workspace ws;
  run(ws, nb, "WEmpty.plan");
  EXPECT_EQ(i64(ws, x), 5);
}

TEST(OpsControlNet, NestedIfNetAndWhileNet) {
  BlobRef i, evens, odds, odd;
  NetBuilder nb({.name = "Nested"}, [&] {
    i = Const(0);
    odd = Const(false);
    evens = Const(0);
    odds = Const(0);
    ops::WhileNet([&] {
      ops::Condition([&] { ops::LT({i, Const(10)}); });
      ops::IfNet(odd, [&] { ops::Add({odds, i}, {odds}); });
      ops::Else([&] { ops::Add({evens, i}, {evens}); });
      ops::Add({i, Const(1)}, {i});
      ops::Not(odd, {odd});
    });
  });
  Workspace ws;
  run(ws, nb, "Nested.plan");
  EXPECT_EQ(i64(ws, i), 10);
  EXPECT_EQ(i64(ws, evens), 0 + 2 + 4 + 6 + 8);
  EXPECT_EQ(i64(ws, odds), 1 + 3 + 5 + 7 + 9);
}

TEST(OpsControlNet, ConditionMisuse) {
  EXPECT_TRUE(has(invalid_input([] { ops::Condition([] {}); }), "Use of Condition outside of WhileNet"));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::Condition([] { Const(true); }); }); }),
                  "Use of Condition outside of WhileNet"));
  EXPECT_TRUE(has(invalid_input([] {
                    NetBuilder nb([] {
                      ops::WhileNet([] { ops::IfNet(Const(true), [] { ops::Condition([] { Const(true); }); }); });
                    });
                  }),
                  "Use of Condition outside of WhileNet"));
  EXPECT_TRUE(has(invalid_input([] {
                    NetBuilder nb([] {
                      ops::WhileNet([] {
                        ops::Condition([] { Const(false); });
                        ops::Condition([] { Const(false); });
                      });
                    });
                  }),
                  "Multiple loop condition builders specified"));
  EXPECT_TRUE(has(invalid_input([] {
                    NetBuilder nb([] {
                      ops::WhileNet([] {
                        Const(1);
                        ops::Condition([] { Const(false); });
                      });
                    });
                  }),
                  "Condition definition must be specified before the loop's body"));
  EXPECT_TRUE(has(invalid_input([] { NetBuilder nb([] { ops::WhileNet([] { ops::Condition([] {}); }); }); }),
                  "Invalid loop condition specified"));
  EXPECT_TRUE(
      has(invalid_input([] { NetBuilder nb([] { ops::WhileNet([] { ops::Condition([] { ops::net(); }); }); }); }),
          "Invalid condition net"));
  const std::string two = invalid_input(
      [] { NetBuilder nb([] { ops::WhileNet([] { ops::Condition([] { ops::StatRegistryExport(); }); }); }); });
  EXPECT_TRUE(has(two, "Invalid condition net")) << two;
  const std::string none = invalid_input([] { NetBuilder nb([] { ops::WhileNet([] { Const(1); }); }); });
  EXPECT_TRUE(has(none, "Condition builder must be specified in While op")) << none;
  EXPECT_TRUE(has(invalid_input([] { ops::WhileNet([] {}); }), "No active NetBuilder."));
  EXPECT_TRUE(
      has(invalid_input([] { NetBuilder nb([] { ops::WhileNet([] { ops::Condition([] { ops::stop(); }); }); }); }),
          "Stop blobs are not used with control operators"));
}

TEST(OpsControlNet, InsideATaskRunByLocalSession) {
  TaskOutput sum, flag;
  Task task([&] {
    BlobRef i = Const(0), total = Const(0), big = Const(false);
    ops::WhileNet([&] {
      ops::Condition([&] { ops::LT({i, Const(5)}); });
      ops::Add({i, Const(1)}, {i});
      ops::Add({total, i}, {total});
    });
    ops::IfNet(ops::GT({total, Const(10)}), [&] { Const(true, {.blob_out = big}); });
    sum = final_output(total);
    flag = final_output(big);
  });
  LocalSession session;
  session.run(task);
  EXPECT_EQ(sum.fetch<int64_t>(), 15);
  EXPECT_TRUE(flag.fetch<bool>());
}

// ---- control_ops_util on NetDefs ----

NetDef def_of(const std::string& name, std::vector<OperatorDef> ops) {
  NetDef n;
  n.name = name;
  n.op = std::move(ops);
  n.external_input = undefined_inputs(n);
  return n;
}

TEST(ControlOpsUtil, ExternalBlobNames) {
  const NetDef n = def_of("n", {make_op("Add", {"a", "b"}, {"t"}), make_op("Add", {"t", "c"}, {"a"}),
                                make_op("Add", {"t", "t"}, {"local"})});
  EXPECT_EQ(undefined_inputs(n), (std::vector<std::string>{"a", "b", "c"}));
  const ExternalBlobNames e = get_external_blob_names(n, {"a", "b", "c", "zzz"});
  EXPECT_EQ(e.inputs, (BlobNameSet{"a", "b", "c"}));
  EXPECT_EQ(e.outputs, (BlobNameSet{"a"}));
  const std::string msg = invalid_input([&] { get_external_blob_names(n, {"a", "b"}); });
  EXPECT_TRUE(has(msg, "Input blob c is undefined")) << msg;
  EXPECT_EQ(used_blob_names(n), (BlobNameSet{"a", "b", "c", "local", "t"}));
}

TEST(ControlOpsUtil, MergeNets) {
  NetDef a = def_of("a", {make_op("Add", {"x", "y"}, {"t"})});
  a.external_output = {"t"};
  NetDef b = def_of("b", {make_op("Add", {"t", "z"}, {"x"})});
  b.external_output = {"x", "t"};
  const NetDef m = merge_nets({a, b}, {"x", "y", "z"});
  EXPECT_EQ(m.name, "a");
  EXPECT_EQ(m.op.size(), 2u);
  EXPECT_EQ(m.external_input, (std::vector<std::string>{"x", "y", "z"}));  // t is computed by a
  EXPECT_EQ(m.external_output, (std::vector<std::string>{"x"}));           // t is local
  EXPECT_TRUE(has(invalid_input([] { merge_nets(std::vector<NetDef>{}, {}); }), "no nets"));
  EXPECT_FALSE(merge_nets(std::vector<NetBuilderChild>{}, {}).has_value());
  const std::string plain = invalid_input([] {
    NetBuilder loose({.name = "MergePlain"});
    merge_nets(std::vector<NetBuilderChild>{loose}, {});
  });
  EXPECT_TRUE(has(plain, "Merging of NetBuilder supported only for control ops")) << plain;
  const std::string empty = invalid_input([] {
    NetBuilder cb({.name = "MergeEmpty", .use_control_ops = true});
    merge_nets(std::vector<NetBuilderChild>{cb}, {});
  });
  EXPECT_TRUE(has(empty, "Invalid control op net builder")) << empty;
}

TEST(ControlOpsUtil, AddIfOpOnNetDefs) {
  NetDef if_net;
  if_net.name = "ifn";
  add_if_op(if_net, "c", {"c", "y"}, def_of("then", {make_op("Add", {"y", "y"}, {"y"})}),
            def_of("else", {make_op("Add", {"y", "y"}, {"tmp"})}));
  EXPECT_EQ(op_types(if_net), (std::vector<std::string>{"CreateScope", "CreateScope", "If"}));
  EXPECT_EQ(if_net.op.back().input,
            (std::vector<std::string>{"c", "y", "ifn/workspace_if_then", "ifn/workspace_if_else"}));
  EXPECT_EQ(if_net.op.back().output, (std::vector<std::string>{"y", "ifn/workspace_if_then", "ifn/workspace_if_else"}));
  EXPECT_EQ(if_net.external_input, (std::vector<std::string>{"c", "y"}));
  // A second If in the same net gets fresh scope blobs.
  add_if_op(if_net, "c", {"c", "y"}, def_of("then2", {}));
  EXPECT_EQ(if_net.op.back().input.back(), "ifn/workspace_if_then_2");
  EXPECT_TRUE(has(invalid_input([&] { add_if_op(if_net, "", {}, def_of("t", {})); }), "condition blob is empty"));
}

TEST(ControlOpsUtil, AddWhileOpConditionMustWriteTheConditionBlob) {
  NetDef w;
  w.name = "w";
  const std::string msg = invalid_input([&] {
    add_while_op(w, "c", {"x"}, def_of("body", {}), def_of("cond", {make_op("LT", {"x", "x"}, {"other"})}));
  });
  EXPECT_TRUE(has(msg, "Condition net does not write into condition blob")) << msg;
}

}  // namespace
}  // namespace moka
