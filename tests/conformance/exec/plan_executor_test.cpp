// Conformance: ports of caffe2/core/plan_executor_test.cc (docs/testing.md §1), adapted to moka's decision 7.
#include <gtest/gtest.h>

#include "support/test_ops_impl.h"

namespace moka {
namespace {

using testing::register_test_ops;
using testing::step_with_nets;
using testing::step_with_substeps;
using testing::test_state;
using testing::TestError;

class PlanExecutor : public ::testing::Test {
 protected:
  void SetUp() override {
    register_test_ops();
    test_state().reset();
  }
  void TearDown() override { test_state().release_blocked = true; }
};

// Ports PlanExecutorTest.EmptyPlan.
TEST_F(PlanExecutor, EmptyPlan) {
  Workspace ws;
  PlanDef plan;
  EXPECT_NO_THROW(run_plan(ws, plan));
}

// Ports PlanExecutorTest.ErrorAsyncPlan: moka runs async_scheduling nets sequentially, so the
// never-finishing async op becomes a blocking op that is woken by cancel().
TEST_F(PlanExecutor, ErrorAsyncPlan) {
  Workspace ws;
  PlanDef plan;
  plan.network.push_back(testing::net_of("stuck_net", {"StuckBlocking"}));
  plan.network.back().type = "async_scheduling";
  plan.network.push_back(testing::net_of("error_net", {"Error"}));
  plan.network.back().type = "async_scheduling";
  auto step =
      step_with_substeps("step", {step_with_nets("stuck", {"stuck_net"}), step_with_nets("error", {"error_net"})});
  step.concurrent_substeps = true;
  plan.execution_step.push_back(step);
  EXPECT_THROW(run_plan(ws, plan), TestError);
  EXPECT_EQ(test_state().cancel_count.load(), 1);
}

// Ports PlanExecutorTest.BlockingErrorPlan. Caffe2 killed the process after the timeout; moka
// (decision 7) reports the error and the process survives.
TEST_F(PlanExecutor, BlockingErrorPlanReportsAndSurvives) {
  Workspace ws;
  PlanDef plan;
  plan.network.push_back(testing::net_of("net", {"BlockingError"}));
  ExecutionStepDef step = step_with_substeps("step", {step_with_nets("substep", {"net"})});
  step.num_concurrent_instances = 2;
  plan.execution_step.push_back(step);
  test_state().blocking_error_runs = 1;
  RunOptions opts;
  opts.exception_timeout = std::chrono::milliseconds(1000);
  try {
    run_plan(ws, plan, opts);
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("failed to stop concurrent workers after exception: "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("test error"), std::string::npos) << e.what();
  }
}

// Ports PlanExecutorTest.ErrorPlanWithCancellableStuckNet.
TEST_F(PlanExecutor, ErrorPlanWithCancellableStuckNet) {
  Workspace ws;
  PlanDef plan;
  plan.network.push_back(testing::net_of("stuck_blocking_net", {"StuckBlocking"}));
  plan.network.push_back(testing::net_of("error_net", {"Error"}));
  auto step = step_with_substeps(
      "step", {step_with_nets("stuck", {"stuck_blocking_net"}), step_with_nets("error", {"error_net"})});
  step.concurrent_substeps = true;
  plan.execution_step.push_back(step);
  EXPECT_THROW(run_plan(ws, plan), TestError);
  EXPECT_EQ(test_state().cancel_count.load(), 1);
}

// Ports PlanExecutorTest.ReporterErrorPlanWithCancellableStuckNet.
TEST_F(PlanExecutor, ReporterErrorPlanWithCancellableStuckNet) {
  Workspace ws;
  PlanDef plan;
  plan.network.push_back(testing::net_of("stuck_blocking_net", {"StuckBlocking"}));
  plan.network.push_back(testing::net_of("error_net", {"Error"}));
  auto reporter = step_with_nets("report", {"error_net"});
  reporter.run_every_ms = 1;
  auto step = step_with_substeps("step", {step_with_nets("stuck", {"stuck_blocking_net"}), reporter});
  step.concurrent_substeps = true;
  plan.execution_step.push_back(step);
  EXPECT_THROW(run_plan(ws, plan), TestError);
  EXPECT_EQ(test_state().cancel_count.load(), 1);
}

// Ports PlanExecutorTest.ShouldStopWithCancel.
TEST_F(PlanExecutor, ShouldStopWithCancel) {
  Workspace ws;
  ws.create_blob("should_stop_blob")->get_mutable<Tensor>() = Tensor::from_vector<bool>({1}, {false});
  PlanDef plan;
  plan.network.push_back(testing::net_of("should_stop_net", {"Noop"}));
  plan.network.back().type = "async_scheduling";
  plan.network.push_back(testing::net_of("error_net", {"Error"}));
  auto inner = step_with_nets("should_stop_net_step", {"should_stop_net"});
  inner.num_iter = 10;
  auto looping = step_with_substeps("concurrent_should_stop", {inner});
  looping.should_stop_blob = "should_stop_blob";
  auto step = step_with_substeps("step", {looping, step_with_nets("error_step", {"error_net"})});
  step.concurrent_substeps = true;
  plan.execution_step.push_back(step);
  EXPECT_THROW(run_plan(ws, plan), TestError);
  EXPECT_TRUE(test_state().stuck_run.load());
}

}  // namespace
}  // namespace moka
