// Unit tests of the plan executor: iteration rules, stop blobs, workspaces, reporters, errors and their paths.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "moka/exec/worker_pool.h"
#include "moka/operators/stats.h"
#include "support/test_ops_impl.h"

namespace moka {
namespace {

using testing::net_of;
using testing::register_test_ops;
using testing::step_with_nets;
using testing::step_with_substeps;
using testing::test_state;

class PlanExec : public ::testing::Test {
 protected:
  void SetUp() override {
    register_test_ops();
    test_state().reset();
  }
  void TearDown() override { test_state().release_blocked = true; }
};

PlanDef plan_of(std::vector<NetDef> nets, std::vector<ExecutionStepDef> steps) {
  PlanDef p;
  p.name = "plan";
  p.network = std::move(nets);
  p.execution_step = std::move(steps);
  return p;
}

NetDef net(const std::string& name, std::vector<OperatorDef> ops) {
  NetDef n;
  n.name = name;
  n.op = std::move(ops);
  return n;
}

OperatorDef fill_i64(const std::string& out, int64_t v) {
  return make_op("ConstantFill", {}, {out},
                 {make_arg("shape", std::vector<int64_t>{}), make_arg("value", v), make_arg("dtype", int64_t{10})});
}
OperatorDef fill_bool(const std::string& out, bool v) {
  return make_op("ConstantFill", {}, {out},
                 {make_arg("shape", std::vector<int64_t>{}), make_arg("value", v), make_arg("dtype", int64_t{5})});
}

int64_t i64(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

TEST_F(PlanExec, NumIterRunsNetsThatManyTimes) {
  Workspace ws;
  auto s = step_with_nets("s", {"n"});
  s.num_iter = 5;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {s}));
  EXPECT_EQ(test_state().counter.load(), 5);
}

// A step with a stats_key counts its executions and their time (decision 69), failed ones too; a substep of a
// loop counts once per iteration.
TEST_F(PlanExec, AStepWithAStatsKeyCountsItsRunsAndBusyTime) {
  Workspace ws;
  auto inner = step_with_nets("inner", {"n"});
  inner.stats_key = "plan_exec_test/inner";
  auto outer = step_with_substeps("outer", {inner});
  outer.num_iter = 4;
  outer.stats_key = "plan_exec_test/outer";
  StatRegistry& stats = StatRegistry::global();
  const int64_t busy_before = stats.get("plan_exec_test/outer/busy_ns");
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {outer}));
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {outer}));
  EXPECT_EQ(stats.get("plan_exec_test/outer/runs"), 2);
  EXPECT_EQ(stats.get("plan_exec_test/inner/runs"), 8);
  EXPECT_GT(stats.get("plan_exec_test/outer/busy_ns"), busy_before);
  EXPECT_GE(stats.get("plan_exec_test/outer/busy_ns"), stats.get("plan_exec_test/inner/busy_ns"));
  auto failing = step_with_nets("failing", {"bad"});
  failing.stats_key = "plan_exec_test/failing";
  test_state().stuck_run = true;  // Error throws at once
  EXPECT_THROW(run_plan(ws, plan_of({net_of("bad", {"Error"})}, {failing})), testing::TestError);
  EXPECT_EQ(stats.get("plan_exec_test/failing/runs"), 1);
  failing.stats_key = "";
  EXPECT_THROW(run_plan(ws, plan_of({net_of("bad", {"Error"})}, {failing})), InvalidInput);  // named by the check
}

TEST_F(PlanExec, NumIterZeroNeverRunsAndDefaultRunsOnce) {
  Workspace ws;
  auto zero = step_with_nets("zero", {"n"});
  zero.num_iter = 0;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {zero}));
  EXPECT_EQ(test_state().counter.load(), 0);
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {step_with_nets("once", {"n"})}));
  EXPECT_EQ(test_state().counter.load(), 1);
}

TEST_F(PlanExec, SameNetListedTwiceRunsTwice) {
  Workspace ws;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {step_with_nets("s", {"n", "n"})}));
  EXPECT_EQ(test_state().counter.load(), 2);
}

TEST_F(PlanExec, ShouldStopBlobIsCheckedAfterEveryNet) {
  Workspace ws;
  // iter counts up; stop once iter >= 7; the counting net after the check net must not run on the stopping pass.
  auto init = net("init", {fill_i64("iter", 0), fill_i64("limit", 7), fill_bool("stop", false)});
  auto check = net("check", {make_op("Add", {"iter", "one"}, {"iter"}), make_op("GE", {"iter", "limit"}, {"stop"})});
  init.op.push_back(fill_i64("one", 1));
  auto after = net_of("after", {"CountCalls"});
  auto loop = step_with_nets("loop", {"check", "after"});
  loop.should_stop_blob = "stop";
  run_plan(ws, plan_of({init, check, after}, {step_with_nets("init", {"init"}), loop}));
  EXPECT_EQ(i64(ws, "iter"), 7);
  EXPECT_EQ(test_state().counter.load(), 6);
}

// Concurrent substeps on fibers where one loops until the other sets its stop blob, without ever
// waiting on a queue: the looping fiber yields when its turn is over, so the setter runs (both orders).
TEST_F(PlanExec, OnFibersALoopThatNeverWaitsLetsItsSiblingStopIt) {
  for (bool looper_first : {true, false}) {
    Workspace ws;
    auto init = net("init", {fill_i64("n", 0), fill_i64("one", 1), fill_bool("stop", false)});
    auto spin = net("spin", {make_op("Add", {"n", "one"}, {"n"})});
    auto set = net("set", {fill_bool("stop", true)});
    auto looper = step_with_nets("looper", {"spin"});
    looper.should_stop_blob = "stop";
    auto setter = step_with_nets("setter", {"set"});
    auto both =
        looper_first ? step_with_substeps("both", {looper, setter}) : step_with_substeps("both", {setter, looper});
    both.concurrent_substeps = true;
    RunOptions o;
    o.concurrency = Concurrency::fibers;
    run_plan(ws, plan_of({init, spin, set}, {step_with_nets("init", {"init"}), both}), o);
    EXPECT_EQ(ws.blob("stop").get<Tensor>().item<bool>(), true);
    if (!looper_first) {
      EXPECT_EQ(i64(ws, "n"), 1) << "the stop blob was set before the loop began";
    }
  }
}

TEST_F(PlanExec, OnlyOnceRunsOneIteration) {
  Workspace ws;
  auto init = net("init", {fill_bool("stop", false)});
  auto s = step_with_nets("s", {"n"});
  s.should_stop_blob = "stop";
  s.only_once = true;
  run_plan(ws, plan_of({init, net_of("n", {"CountCalls"})}, {step_with_nets("i", {"init"}), s}));
  EXPECT_EQ(test_state().counter.load(), 1);
}

TEST_F(PlanExec, UnfilledShouldStopBlobMeansContinue) {
  Workspace ws;
  ws.create_blob("stop");  // exists but holds nothing: Caffe2 treats that as "do not stop"
  auto s = step_with_nets("s", {"n"});
  s.should_stop_blob = "stop";
  s.only_once = true;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {s}));
  EXPECT_EQ(test_state().counter.load(), 1);
}

TEST_F(PlanExec, ShouldStopBlobMustBeScalarBool) {
  Workspace ws;
  ws.create_blob("stop")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  auto s = step_with_nets("s", {"n"});
  s.should_stop_blob = "stop";
  try {
    run_plan(ws, plan_of({net_of("n", {"Noop"})}, {s}));
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects a scalar boolean"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step \"s\""), std::string::npos) << e.what();
  }
}

TEST_F(PlanExec, MissingShouldStopBlobIsAnError) {
  Workspace ws;
  auto s = step_with_nets("s", {"n"});
  s.should_stop_blob = "nowhere";
  EXPECT_THROW(run_plan(ws, plan_of({net_of("n", {"Noop"})}, {s})), InvalidInput);
}

TEST_F(PlanExec, CreateWorkspaceWritesParentBlobsAndDropsItsOwn) {
  Workspace ws;
  ws.create_blob("acc")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(10);
  auto n = net("n", {fill_i64("tmp", 5), make_op("Add", {"acc", "tmp"}, {"acc"})});
  auto s = step_with_nets("child", {"n"});
  s.create_workspace = true;
  s.num_iter = 1;
  auto outer = step_with_substeps("outer", {s});
  outer.num_iter = 3;  // three executions, each in a fresh child workspace
  run_plan(ws, plan_of({n}, {outer}));
  EXPECT_EQ(i64(ws, "acc"), 25);
  EXPECT_FALSE(ws.has_blob("tmp"));
  EXPECT_EQ(ws.get_net("n"), nullptr);  // the net lived in the child workspaces
}

TEST_F(PlanExec, NetsStayRegisteredInTheWorkspace) {
  Workspace ws;
  run_plan(ws, plan_of({net_of("keep_me", {"Noop"})}, {step_with_nets("s", {"keep_me"})}));
  EXPECT_NE(ws.get_net("keep_me"), nullptr);
  // A second run re-creates it (Caffe2's needsOverride) instead of failing.
  run_plan(ws, plan_of({net_of("keep_me", {"CountCalls"})}, {step_with_nets("s", {"keep_me"})}));
  EXPECT_EQ(test_state().counter.load(), 1);
}

TEST_F(PlanExec, NetInstantiationNeedsExistingInputs) {
  Workspace ws;
  auto n = net("n", {make_op("Add", {"a", "b"}, {"c"})});
  try {
    run_plan(ws, plan_of({n}, {step_with_nets("s", {"n"})}));
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("Encountered a non-existing input blob: a"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("net \"n\""), std::string::npos) << e.what();
  }
}

TEST_F(PlanExec, EagerCompileLetsLaterSubstepsUseEarlierOutputs) {
  Workspace ws;
  auto a = net("a", {fill_i64("x", 3)});
  auto b = net("b", {make_op("Add", {"x", "x"}, {"y"})});
  run_plan(ws, plan_of({a, b}, {step_with_substeps("s", {step_with_nets("sa", {"a"}), step_with_nets("sb", {"b"})})}));
  EXPECT_EQ(i64(ws, "y"), 6);
}

TEST_F(PlanExec, ErrorsCarryTheirPath) {
  Workspace ws;
  auto inner = step_with_nets("inner", {"bad"});
  try {
    run_plan(ws, plan_of({net("bad", {make_op("Noop", {}, {}), make_op("ReturnFalse", {}, {}, {}, "label")})},
                         {step_with_substeps("outer", {inner})}));
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "step \"outer\" > step \"inner\" > net \"bad\" > operator #1 (ReturnFalse \"label\"): the operator "
              "reported failure");
  }
}

TEST_F(PlanExec, StdExceptionsAreWrappedAndNested) {
  Workspace ws;
  try {
    run_plan(ws, plan_of({net_of("n", {"ThrowStd"})}, {step_with_nets("s", {"n"})}));
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("operator #0 (ThrowStd): plain std error"), std::string::npos) << e.what();
    try {
      std::rethrow_if_nested(e);
      FAIL() << "no nested exception";
    } catch (const std::runtime_error& inner) {
      EXPECT_STREQ(inner.what(), "plain std error");
    }
  }
}

TEST_F(PlanExec, ConcurrentInstancesRunEachIteration) {
  Workspace ws;
  auto sub = step_with_nets("sub", {"n"});
  auto s = step_with_substeps("s", {sub});
  s.num_concurrent_instances = 4;
  s.num_iter = 3;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {s}));
  EXPECT_EQ(test_state().counter.load(), 12);
}

TEST_F(PlanExec, ConcurrentSubstepsReuseWorkerThreads) {
  Workspace ws;
  std::vector<ExecutionStepDef> subs;
  std::vector<NetDef> nets;
  for (int i = 0; i < 8; ++i) {
    nets.push_back(net_of("n" + std::to_string(i), {"CountCalls"}));
    subs.push_back(step_with_nets("sub" + std::to_string(i), {"n" + std::to_string(i)}));
  }
  auto s = step_with_substeps("s", subs);
  s.concurrent_substeps = true;
  s.num_iter = 200;
  run_plan(ws, plan_of(nets, {s}));
  EXPECT_EQ(test_state().counter.load(), 1600);
  // 1600 substep executions, but threads only for the concurrency (plus other tests' leftovers).
  EXPECT_LE(detail::WorkerPool::global().num_threads(), 64u);
}

TEST_F(PlanExec, ReportStepRunsOnceMoreAfterSiblingsFinished) {
  Workspace ws;
  static std::atomic<bool> body_done{false};
  static std::atomic<int> runs_after_done{0};
  body_done = false;
  runs_after_done = 0;
  const int64_t body_token = register_callable([] {
    return [](std::span<Blob* const>, std::span<Blob* const>) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      body_done = true;
    };
  });
  const int64_t report_token = register_callable([] {
    return [](std::span<Blob* const>, std::span<Blob* const>) {
      if (body_done) runs_after_done++;
    };
  });
  auto body = net("body", {make_op("Callable", {}, {}, {make_arg("token", body_token)})});
  auto report = net("report", {make_op("Callable", {}, {}, {make_arg("token", report_token)})});
  auto rs = step_with_nets("report", {"report"});
  rs.run_every_ms = 100000;  // would never fire during a 30 ms body
  auto s = step_with_substeps("s", {step_with_nets("body", {"body"}), rs});
  s.concurrent_substeps = true;
  run_plan(ws, plan_of({body, report}, {s}));
  EXPECT_EQ(runs_after_done.load(), 1);
}

TEST_F(PlanExec, ReporterInSequentialStepRunsPeriodicallyAndAtTheEnd) {
  Workspace ws;
  auto body = net("body", {make_op("SleepMs", {}, {}, {make_arg("ms", int64_t{60})})});
  auto rs = step_with_nets("report", {"count"});
  rs.run_every_ms = 10;
  run_plan(ws, plan_of({body, net_of("count", {"CountCalls"})},
                       {step_with_substeps("s", {step_with_nets("body", {"body"}), rs})}));
  EXPECT_GE(test_state().counter.load(), 2);  // some periodic runs and the final one
}

TEST_F(PlanExec, ReportNetNeedsInterval) {
  Workspace ws;
  auto s = step_with_nets("s", {"n"});
  s.report_net = "n";
  EXPECT_THROW(run_plan(ws, plan_of({net_of("n", {"Noop"})}, {s})), InvalidInput);
}

TEST_F(PlanExec, GlobalWorkspaceIdIsInjectedIntoChildWorkspaces) {
  Workspace ws;
  ws.create_blob("NODE_ID")->get_mutable<Tensor>() = Tensor::scalar<int32_t>(3);
  ws.create_blob("seen")->get_mutable<Tensor>() = Tensor::scalar<int32_t>(0);
  auto copy = net("copy", {make_op("Copy", {"GLOBAL_WORKSPACE_ID"}, {"seen"})});
  auto s = step_with_nets("child", {"copy"});
  s.create_workspace = true;
  run_plan(ws, plan_of({copy}, {s}));
  EXPECT_EQ(ws.blob("seen").get<Tensor>().item<int32_t>(), 3 << 16);
  EXPECT_FALSE(ws.has_blob("GLOBAL_WORKSPACE_ID"));
}

TEST_F(PlanExec, ExternalStopEndsThePlanWithoutError) {
  Workspace ws;
  std::atomic<int> checks{0};
  RunOptions opts;
  opts.should_continue = [&] { return ++checks < 4; };
  auto s = step_with_nets("s", {"n"});
  s.num_iter = 1000;
  run_plan(ws, plan_of({net_of("n", {"CountCalls"})}, {s}), opts);
  EXPECT_LT(test_state().counter.load(), 10);
}

TEST_F(PlanExec, CheckPlanRejectsMalformedPlans) {
  auto expect_invalid = [](const PlanDef& p, const std::string& needle) {
    try {
      check_plan(p);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto both = step_with_nets("both", {"n"});
  both.substep.push_back(step_with_nets("x", {"n"}));
  expect_invalid(plan_of({net_of("n", {"Noop"})}, {both}), "either have substep or networks");
  expect_invalid(plan_of({}, {step_with_nets("s", {"ghost"})}), "uses undefined net ghost");
  expect_invalid(plan_of({net_of("n", {"Noop"}), net_of("n", {"Noop"})}, {}), "networks of the same name \"n\"");
  auto stop_and_iter = step_with_nets("s", {"n"});
  stop_and_iter.should_stop_blob = "b";
  stop_and_iter.num_iter = 2;
  expect_invalid(plan_of({net_of("n", {"Noop"})}, {stop_and_iter}), "Must not specify num_iter");
  auto once = step_with_nets("s", {"n"});
  once.only_once = true;
  expect_invalid(plan_of({net_of("n", {"Noop"})}, {once}), "only_once");
  expect_invalid(plan_of({net_of("n", {"Nope"})}, {}), "network[0] \"n\" > operator #0 (Nope): unknown operator type");
  auto nested = step_with_substeps("outer", {step_with_nets("inner", {"zz"})});
  expect_invalid(plan_of({}, {nested}), "execution_step[0] \"outer\".substep[0] \"inner\"");
  auto neg = step_with_nets("s", {"n"});
  neg.num_iter = -1;
  expect_invalid(plan_of({net_of("n", {"Noop"})}, {neg}), "num_iter must be >= 0");
}

TEST_F(PlanExec, NetExternalInputsAreChecked) {
  Workspace ws;
  ws.create_blob("a")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  NetDef n = net("n", {make_op("Add", {"a", "b"}, {"c"})});
  n.external_input = {"a"};
  ws.create_blob("b")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  try {
    create_net(ws, n);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("Source for input b is unknown for net n"), std::string::npos) << e.what();
  }
  n.external_input = {"a", "b"};
  n.external_output = {"d"};
  try {
    create_net(ws, n);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("never produced by the net n, the first one is d"), std::string::npos)
        << e.what();
  }
  n.external_output = {"c"};
  create_net(ws, n);
  try {
    create_net(ws, n);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("I respectfully refuse to overwrite"), std::string::npos);
  }
  EXPECT_NO_THROW(create_net(ws, n, /*overwrite=*/true));
  run_net(ws, "n");
  EXPECT_EQ(i64(ws, "c"), 2);
}

}  // namespace
}  // namespace moka
