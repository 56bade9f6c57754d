// Unit tests of the moka::ops DSL: operators on the active builder, ops::net, stop/stop_if,
// loop, stop_guard, If/Elif/Else, setup and report blocks, callables — the generated
// definitions where they matter and the values that run_plan computes (docs/building-plans.md §9.2).
#include <gtest/gtest.h>

#include <atomic>
#include <span>

#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"
#include "moka/builder/plan.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;

int64_t i64(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<int64_t>(); }
bool boolean(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<bool>(); }

void run(Workspace& ws, NetBuilder& nb) {
  Plan plan("OpsDsl.plan");
  plan.add_step(to_execution_step(nb));
  run_plan(ws, plan.proto());
}

std::vector<std::string> op_types(const Net& net) {
  std::vector<std::string> out;
  for (const auto& op : net.proto().op) out.push_back(op.type);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(OpsDsl, OutsideABuilderIsAnError) {
  const std::string msg = "No active NetBuilder.";
  EXPECT_TRUE(starts_with(invalid_input([] { ops::Add({"a", "b"}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::op("Add", {"a", "b"}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::Const(1); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::net(); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::stop(); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::stop_if("x"); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::loop(3, [] {}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::If("c", [] {}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::stop_guard([] {}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::task_init([] {}); }), msg));
  EXPECT_TRUE(starts_with(invalid_input([] { ops::task_reporter([] {}); }), msg));
  EXPECT_TRUE(
      starts_with(invalid_input([] { ops::call([](std::span<Blob* const>, std::span<Blob* const>) {}); }), msg));
  EXPECT_NE(invalid_input([] { ops::CountUp("c"); }).find("ops::CountUp"), std::string::npos);
}

TEST(OpsDsl, OperatorsGoToTheCurrentNetWithCaffe2Names) {
  BlobRef a, b, s, n;
  BlobRefs none;
  NetBuilder nb({.name = "OpsNames"}, [&] {
    a = ops::Const(1);
    b = ops::Const(2);
    s = ops::Add({a, b});
    ops::Add({s, b}, {s});
    n = ops::Not(ops::Const(true));  // a single blob as input
    none = ops::Print(s);
    ops::op("Sub", {a, b}, {"OpsNames.diff"}, {{"broadcast", 1}});
  });
  EXPECT_EQ(a.name(), "OpsNames/GivenTensorInt64Fill:0");
  EXPECT_EQ(b.name(), "OpsNames/GivenTensorInt64Fill_2:0");
  EXPECT_EQ(s.name(), "OpsNames/Add");
  EXPECT_EQ(n.name(), "OpsNames/Not");
  EXPECT_TRUE(none.empty());
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 1u);
  EXPECT_EQ(op_types(std::get<Net>(children[0])),
            (std::vector<std::string>{"GivenTensorInt64Fill", "GivenTensorInt64Fill", "Add", "Add", "ConstantFill",
                                      "Not", "Print", "Sub"}));
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, s), 5);
  EXPECT_EQ(i64(ws, "OpsNames.diff"), -1);
  EXPECT_FALSE(boolean(ws, n));
}

TEST(OpsDsl, ConstOptions) {
  BlobRef x, y;
  NetBuilder nb({.name = "OpsConst"}, [&] {
    x = ops::Const(3, {.blob_out = "OpsConst.x", .dtype = DType::Int32});
    y = ops::Const(2.5);
  });
  EXPECT_EQ(x.name(), "OpsConst.x");
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(ws.blob("OpsConst.x").get<Tensor>().item<int32_t>(), 3);
  EXPECT_EQ(ws.blob(y.name()).get<Tensor>().item<double>(), 2.5);
}

TEST(OpsDsl, TypedHelpersReachTheBuiltInOperators) {
  BlobRef sub, mul, div, sum, eq, ne, lt, le, gt, ge, and_, or_, xor_, cast, copy, names, count, done, down, reset_prev,
      fill, i64fill, ifill, dfill, ffill, bfill, sfill, iter, aiter, elapsed;
  NetBuilder nb({.name = "OpsTyped"}, [&] {
    BlobRef six = ops::Const(6), two = ops::Const(2), t = ops::Const(true), f = ops::Const(false);
    sub = ops::Sub({six, two});
    mul = ops::Mul({six, two});
    div = ops::Div({six, two});
    sum = ops::Sum({six, two, two});
    eq = ops::EQ({six, two});
    ne = ops::NE({six, two});
    lt = ops::LT({six, two});
    le = ops::LE({two, two});
    gt = ops::GT({six, two});
    ge = ops::GE({two, six});
    and_ = ops::And({t, f});
    or_ = ops::Or({t, f});
    xor_ = ops::Xor({t, t});
    cast = ops::Cast(six, {}, {{"to", DType::Int32}});
    copy = ops::Copy(six);
    fill = ops::ConstantFill({}, {}, {{"dtype", DType::Int64}, {"value", 7}});
    i64fill = ops::GivenTensorInt64Fill({}, {}, {{"values", {8}}, {"shape", std::vector<int64_t>{}}});
    ifill = ops::GivenTensorIntFill({}, {}, {{"values", {9}}, {"shape", std::vector<int64_t>{}}});
    dfill = ops::GivenTensorDoubleFill({}, {}, {{"values", {1.5}}});
    ffill = ops::GivenTensorFill({}, {}, {{"values", {0.5}}});
    bfill = ops::GivenTensorBoolFill({}, {}, {{"values", {1}}});
    sfill = ops::GivenTensorStringFill({}, {}, {{"values", {"s"}}});
    BlobRef counter = ops::CreateCounter({}, {"OpsTyped.counter"}, {{"init_count", 2}});
    ops::CountUp(counter);
    down = ops::CountDown(counter);
    done = ops::CheckCounterDone(counter);
    count = ops::RetrieveCount(counter);
    reset_prev = ops::ResetCounter(counter, {}, {{"init_count", 5}}).single();
    iter = ops::Iter({}, {"OpsTyped.iter"});
    BlobRef mutex = ops::CreateMutex();
    aiter = ops::AtomicIter({mutex, iter}, {iter});
    BlobRef timer = ops::TimerBegin({}, {}, {{"counter_name", "OpsTyped.timer"}});
    elapsed = ops::TimerGet(timer);
    ops::TimerEnd(timer);
    ops::TimerBegin({}, {timer});
    ops::TimerGetAndEnd(timer);
    EXPECT_EQ(ops::StatRegistryExport().size(), 3u);
    names = ops::GetAllBlobNames();
  });
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, sub), 4);
  EXPECT_EQ(i64(ws, mul), 12);
  EXPECT_EQ(i64(ws, div), 3);
  EXPECT_EQ(i64(ws, sum), 10);
  EXPECT_FALSE(boolean(ws, eq));
  EXPECT_TRUE(boolean(ws, ne));
  EXPECT_FALSE(boolean(ws, lt));
  EXPECT_TRUE(boolean(ws, le));
  EXPECT_TRUE(boolean(ws, gt));
  EXPECT_FALSE(boolean(ws, ge));
  EXPECT_FALSE(boolean(ws, and_));
  EXPECT_TRUE(boolean(ws, or_));
  EXPECT_FALSE(boolean(ws, xor_));
  EXPECT_EQ(ws.blob(cast.name()).get<Tensor>().item<int32_t>(), 6);
  EXPECT_EQ(i64(ws, copy), 6);
  EXPECT_EQ(i64(ws, fill), 7);
  EXPECT_EQ(i64(ws, i64fill), 8);
  EXPECT_EQ(ws.blob(ifill.name()).get<Tensor>().item<int32_t>(), 9);
  EXPECT_EQ(ws.blob(dfill.name()).get<Tensor>().item<double>(), 1.5);
  EXPECT_EQ(ws.blob(ffill.name()).get<Tensor>().item<float>(), 0.5f);
  EXPECT_TRUE(boolean(ws, bfill));
  EXPECT_EQ(ws.blob(sfill.name()).get<Tensor>().item<std::string>(), "s");
  EXPECT_FALSE(boolean(ws, down));  // 3 -> 2
  EXPECT_FALSE(boolean(ws, done));
  EXPECT_EQ(i64(ws, count), 2);
  EXPECT_EQ(i64(ws, reset_prev), 2);
  EXPECT_EQ(ws.blob("OpsTyped.iter").get<Tensor>().item<int64_t>(), 2);
  EXPECT_GE(i64(ws, elapsed), 0);
  EXPECT_GT(ws.blob(names.name()).get<Tensor>().numel(), 0);
}

TEST(OpsDsl, NetAddsAUserNetThatBecomesCurrent) {
  // net_builder_test.py test_net_multi_use without the Task: the same net twice runs twice.
  BlobRef total, after;
  Net user("OpsNet.user");
  NetBuilder nb({.name = "OpsNet"}, [&] {
    total = ops::Const(0, {.blob_out = "OpsNet.total"});
    user.op("Add", {total, user.Const(1)}, {total});
    EXPECT_TRUE(ops::net(user) == user);
    ops::net(user);
    after = ops::Const(5);  // appended to the user's net
    Net named = ops::net({.name = "named"});
    EXPECT_EQ(named.name(), "OpsNet/named");
    EXPECT_TRUE(ops::net() == named);
    ops::net(execution_step("OpsNet.step", Net("OpsNet.stepnet")));
    EXPECT_FALSE(ops::net() == named);
  });
  EXPECT_EQ(op_types(user), (std::vector<std::string>{"GivenTensorInt64Fill", "Add", "GivenTensorInt64Fill"}));
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, total), 2);
  EXPECT_EQ(i64(ws, after), 5);
}

TEST(OpsDsl, LoopWithCountStructure) {
  BlobRef iter_blob;
  NetBuilder nb({.name = "OpsLoopDef"}, [&] {
    ops::loop(3, [&](ops::Loop& l) {
      iter_blob = l.iter();
      ops::Const(7);
    });
  });
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 2u);
  // The counter constants are in the parent's net: inc = 1, iter = 0, num_iters = 3.
  const Net& parent = std::get<Net>(children[0]);
  EXPECT_EQ(op_types(parent),
            (std::vector<std::string>{"GivenTensorInt64Fill", "GivenTensorInt64Fill", "GivenTensorInt64Fill"}));
  EXPECT_EQ(parent.proto().op[1].output[0], iter_blob.name());
  NetBuilder loop = std::get<NetBuilder>(children[1]);
  const auto& body = loop.get();
  ASSERT_EQ(body.size(), 2u);
  const Net& head = std::get<Net>(body[0]);
  EXPECT_EQ(op_types(head), (std::vector<std::string>{"GE", "ConstantFill", "Or"}));
  EXPECT_EQ(head.proto().op[0].input[0], iter_blob.name());
  const Net& tail = std::get<Net>(body[1]);
  EXPECT_EQ(op_types(tail), (std::vector<std::string>{"GivenTensorInt64Fill", "Add"}));
  EXPECT_EQ(tail.proto().op[1].output[0], iter_blob.name());
  ExecutionStepDef def = to_execution_step(nb).proto();
  ASSERT_EQ(def.substep.size(), 2u);
  EXPECT_EQ(def.substep[1].should_stop_blob, head.proto().op[1].output[0]);
}

TEST(OpsDsl, LoopCounts) {
  BlobRef sum10, sum0, sum_blob, nested;
  NetBuilder nb({.name = "OpsLoopRun"}, [&] {
    sum10 = ops::Const(0);
    ops::loop(10, [&](ops::Loop& l) { ops::Add({sum10, l.iter()}, {sum10}); });
    sum0 = ops::Const(0);
    ops::loop(0, [&] { ops::Add({sum0, ops::Const(1)}, {sum0}); });
    sum_blob = ops::Const(0);
    BlobRef n = ops::Const(4);
    ops::loop(n, [&] { ops::Add({sum_blob, ops::Const(1)}, {sum_blob}); });
    nested = ops::Const(0);
    ops::loop(4, [&] {
      // The inner counter restarts every time the outer body reaches the inner loop.
      ops::loop(3, [&] { ops::Add({nested, ops::Const(1)}, {nested}); });
    });
  });
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, sum10), 45);
  EXPECT_EQ(i64(ws, sum0), 0);
  EXPECT_EQ(i64(ws, sum_blob), 4);
  EXPECT_EQ(i64(ws, nested), 12);
}

TEST(OpsDsl, LoopMisuse) {
  EXPECT_EQ(invalid_input([] {
              NetBuilder nb({.name = "OpsLoopIter"}, [] {
                ops::loop([](ops::Loop& l) {
                  ops::stop();
                  l.iter();
                });
              });
            }),
            "This loop does not have a number of iterations.");
  EXPECT_EQ(invalid_input([] { NetBuilder nb({.name = "OpsLoopNoStop"}, [] { ops::loop([] { ops::Const(1); }); }); }),
            "This NetBuilder (OpsLoopNoStop) requires a stop condition to be set with `stop` or `stop_if`");
  NetBuilder named({.name = "OpsLoopNamed"}, [] {
    ops::Loop l = ops::loop(2, [] {}, {.name = "l"});
    EXPECT_EQ(l.builder().name(), "OpsLoopNamed/l");
    EXPECT_TRUE(l.num_iters());
  });
}

TEST(OpsDsl, LoopWithoutCountStopsOnStopIf) {
  BlobRef x, y;
  NetBuilder nb({.name = "OpsLoopStop"}, [&] {
    x = ops::Const(5);
    y = ops::Const(0);
    ops::loop([&] {
      ops::stop_if(ops::EQ({x, ops::Const(0)}));
      ops::Add({x, ops::Const(-1)}, {x});
      ops::Add({y, ops::Const(1)}, {y});
    });
  });
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, y), 5);
  EXPECT_EQ(i64(ws, x), 0);
}

TEST(OpsDsl, StopGuard) {
  BlobRef stopped, not_stopped, after;
  NetBuilder nb({.name = "OpsGuard"}, [&] {
    auto g1 = ops::stop_guard([&](ops::StopGuard& g) {
      EXPECT_EQ(invalid_input([&] { g.has_stopped(); }), "Context not used yet.");
      ops::stop();
      ops::Const(1, {.blob_out = "OpsGuard.never"});
    });
    stopped = g1.has_stopped();
    auto g2 = ops::stop_guard([&] { ops::Const(2); }, {.has_stopped_blob = "OpsGuard.flag", .name = "g2"});
    not_stopped = g2.has_stopped();
    EXPECT_EQ(g2.builder().name(), "OpsGuard/g2");
    after = ops::Const(3);  // the parent goes on after a stopped guard
  });
  EXPECT_EQ(not_stopped.name(), "OpsGuard.flag");
  Workspace ws;
  run(ws, nb);
  EXPECT_TRUE(boolean(ws, stopped));
  EXPECT_FALSE(boolean(ws, not_stopped));
  EXPECT_FALSE(ws.blob("OpsGuard.never").is_initialized());  // created at instantiation, never written
  EXPECT_EQ(i64(ws, after), 3);
}

TEST(OpsDsl, IfStructure) {
  BlobRef cond;
  ops::RunIf r = [&] {
    std::optional<ops::RunIf> out;
    NetBuilder nb({.name = "OpsIfDef"}, [&] {
      cond = ops::Const(true);
      out = ops::If(cond, [] { ops::Const(1); });
    });
    const auto& children = nb.get();
    EXPECT_EQ(children.size(), 2u);
    // In the parent: else_blob = Not(cond), already_ran = Const(false).
    EXPECT_EQ(op_types(std::get<Net>(children[0])), (std::vector<std::string>{"ConstantFill", "Not", "ConstantFill"}));
    return *out;
  }();
  EXPECT_FALSE(r.is_else());
  const auto& body = r.builder().get();
  ASSERT_EQ(body.size(), 2u);
  // stop_if(else_blob) first, then already_ran = true and the body, then the stop of _RunOnce.
  EXPECT_EQ(op_types(std::get<Net>(body[0])), (std::vector<std::string>{"ConstantFill", "Or"}));
  EXPECT_EQ(std::get<Net>(body[0]).proto().op[1].input[1], r.else_blob().name());
  EXPECT_EQ(op_types(std::get<Net>(body[1])),
            (std::vector<std::string>{"ConstantFill", "GivenTensorInt64Fill", "ConstantFill", "Or"}));
  EXPECT_EQ(std::get<Net>(body[1]).proto().op[0].output[0], r.already_ran().name());
}

TEST(OpsDsl, IfElifElseValues) {
  std::vector<BlobRef> results;
  NetBuilder nb({.name = "OpsIfRun"}, [&] {
    for (int x : {90, 60, 10}) {
      BlobRef v = ops::Const(x);
      BlobRef out = ops::Const(0);
      ops::If(ops::GE({v, ops::Const(80)}), [&] {
        ops::Const(1, {.blob_out = out});
      }).Elif(ops::GE({v, ops::Const(50)}), [&] {
          ops::Const(2, {.blob_out = out});
        }).Else([&] { ops::Const(3, {.blob_out = out}); });
      results.push_back(out);
    }
    // Only the first true branch runs, even when a later condition also holds.
    BlobRef first = ops::Const(0);
    ops::If(ops::Const(true), [&] {
      ops::Add({first, ops::Const(1)}, {first});
    }).Elif(ops::Const(true), [&] {
      ops::Add({first, ops::Const(10)}, {first});
    });
    results.push_back(first);
    // A stop inside a branch ends that branch only.
    BlobRef y = ops::Const(1);
    ops::If(ops::Const(true), [&] {
      ops::Const(3, {.blob_out = y});
      ops::stop();
      ops::Const(4, {.blob_out = y});
    });
    results.push_back(y);
    results.push_back(ops::Const(7));
  });
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, results[0]), 1);
  EXPECT_EQ(i64(ws, results[1]), 2);
  EXPECT_EQ(i64(ws, results[2]), 3);
  EXPECT_EQ(i64(ws, results[3]), 1);
  EXPECT_EQ(i64(ws, results[4]), 3);
  EXPECT_EQ(i64(ws, results[5]), 7);
}

TEST(OpsDsl, IfMisuseAndNames) {
  NetBuilder nb({.name = "OpsIfMisuse"}, [&] {
    ops::RunIf r = ops::If(ops::Const(true), [] {}, {.name = "c"});
    EXPECT_EQ(r.builder().name(), "OpsIfMisuse/c");
    ops::RunIf e = r.Elif(ops::Const(false), [] {});
    EXPECT_EQ(e.builder().name(), "OpsIfMisuse/c");  // Elif/Else default to the If's name
    EXPECT_TRUE(e.already_ran() == r.already_ran());
    ops::RunIf el = e.Else([] {}, {.name = "other"});
    EXPECT_EQ(el.builder().name(), "OpsIfMisuse/other");
    EXPECT_TRUE(el.is_else());
    EXPECT_TRUE(el.else_blob() == r.already_ran());
    EXPECT_EQ(invalid_input([&] { el.Elif(ops::Const(true), [] {}); }), "Elif not allowed for an Else.");
    EXPECT_EQ(invalid_input([&] { el.Else([] {}); }), "Else not allowed for an Else.");
  });
  EXPECT_EQ(invalid_input([] { NetBuilder b({.name = "OpsIfEmpty"}, [] { ops::If(BlobRef(), [] {}); }); }),
            "ops::If: the condition is an empty BlobRef");
}

TEST(OpsDsl, SetupBlocksAreAttributesNotChildren) {
  std::shared_ptr<SetupBuilder> init, exit, inst_init, inst_exit, local_init, local_exit;
  BlobRef one;
  NetBuilder nb({.name = "OpsSetup"}, [&] {
    init = ops::task_init([&] { one = ops::Const(1); });
    ops::Add({one, one});
    exit = ops::task_exit([&] { ops::Const(2); });
    inst_init = ops::task_instance_init([&] { ops::Const(3); });
    inst_exit = ops::task_instance_exit([&] { ops::Const(4); });
    local_init = ops::local_init([&] { ops::Const(5); });
    local_exit = ops::local_exit([&] { ops::Const(6); }, {.name = "bye"});
  });
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 1u);  // only the body's net
  const Net& body = std::get<Net>(children[0]);
  EXPECT_EQ(op_types(body), std::vector<std::string>{"Add"});
  ASSERT_EQ(body.get_attributes(kTaskSetup).size(), 2u);
  EXPECT_EQ(body.get_attributes(kTaskSetup)[0], init);
  EXPECT_EQ(body.get_attributes(kTaskSetup)[1], exit);
  ASSERT_EQ(body.get_attributes(kTaskInstanceSetup).size(), 2u);
  EXPECT_EQ(body.get_attributes(kTaskInstanceSetup)[0], inst_init);
  ASSERT_EQ(body.get_attributes(kLocalSetup).size(), 2u);
  EXPECT_EQ(body.get_attributes(kLocalSetup)[1], local_exit);
  EXPECT_EQ(init->type(), SetupBuilder::Type::Init);
  EXPECT_EQ(exit->type(), SetupBuilder::Type::Exit);
  EXPECT_EQ(local_exit->builder().name(), "OpsSetup/bye");
  EXPECT_TRUE(init->builder().is_frozen());
  EXPECT_FALSE(init->setup_used());

  // setup() gives the Init block's step, exit() the Exit block's; the other gives nothing.
  Net init_net("OpsSetup.init"), exit_net("OpsSetup.exit");
  EXPECT_TRUE(init->exit(exit_net).empty());
  EXPECT_TRUE(exit->setup(init_net).empty());
  auto init_steps = init->setup(init_net);
  ASSERT_EQ(init_steps.size(), 1u);
  ExecutionStep init_step = init_steps[0].to_step();
  EXPECT_EQ(init_step.name(), "OpsSetup");
  auto exit_steps = exit->exit(exit_net);
  ASSERT_EQ(exit_steps.size(), 1u);

  // Run as a Task would: init, body, exit.
  Plan plan("OpsSetup.plan");
  plan.add_step(init_step);
  plan.add_step(to_execution_step(nb));
  plan.add_step(exit_steps[0].to_step());
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, one), 1);
}

TEST(OpsDsl, TaskReporterAttachesAPeriodicStep) {
  std::shared_ptr<ReportStep> r1, r2;
  NetBuilder nb({.name = "OpsReport"}, [&] {
    ops::Const(0);
    r1 = ops::task_reporter(250, [] { ops::Const(1); }, {.name = "rep"});
    r2 = ops::task_reporter([] { ops::Const(2); });
  });
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 1u);
  const auto& attrs = std::get<Net>(children[0]).get_attributes(kReportStep);
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(attrs[0], r1);
  EXPECT_EQ(r1->step().name(), "OpsReport/rep");
  EXPECT_EQ(r1->step().proto().run_every_ms, 250);
  EXPECT_EQ(r2->step().proto().run_every_ms, 1000);
  EXPECT_EQ(r1->step().proto().network.size(), 1u);
  EXPECT_FALSE(r1->used());
}

TEST(OpsDsl, CallRunsAFunctionEveryRun) {
  std::atomic<int> calls{0};
  std::atomic<int> built{0};
  std::atomic<int> built_calls{0};
  NetBuilder nb({.name = "OpsCall"}, [&] {
    ops::loop(4, [&] {
      ops::call(
          [&](std::span<Blob* const> in, std::span<Blob* const> out) {
            EXPECT_EQ(in.size(), 1u);
            EXPECT_EQ(out.size(), 0u);
            ++calls;
          },
          {"OpsCall.in"});
      ops::call(CallableBuilder([&]() -> CallableFn {
        ++built;
        return [&](std::span<Blob* const>, std::span<Blob* const>) { ++built_calls; };
      }));
    });
  });
  Workspace ws;
  ws.create_blob("OpsCall.in");
  run(ws, nb);
  EXPECT_EQ(calls.load(), 4);
  EXPECT_EQ(built.load(), 1);  // once per net instantiation
  EXPECT_EQ(built_calls.load(), 4);
}

TEST(OpsDsl, DocsExample) {
  // The first example of docs/building-plans.md §9.
  BlobRef total, large, small;
  NetBuilder nb({.name = "OpsDocs.sums"}, [&] {
    total = ops::Const(0);
    large = ops::Const(0);
    small = ops::Const(0);
    ops::loop(10, [&](ops::Loop& i) {
      BlobRef v = ops::Mul({i.iter(), ops::Const(10)});
      ops::If(ops::GE({v, ops::Const(50)}), [&] {
        ops::Add({large, v}, {large});
      }).Else([&] {
        ops::Add({small, v}, {small});
      });
      ops::Add({total, v}, {total});
    });
  });
  EXPECT_EQ(to_execution_step(nb).name(), "OpsDocs.sums");
  Workspace ws;
  run(ws, nb);
  EXPECT_EQ(i64(ws, total), 450);
  EXPECT_EQ(i64(ws, large), 350);
  EXPECT_EQ(i64(ws, small), 100);
}

}  // namespace
}  // namespace moka
