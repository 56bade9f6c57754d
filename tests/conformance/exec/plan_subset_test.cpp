// Conformance: plan-related ports of workspace_test.cc (RunEmptyPlan), workspace_test.py and hypothesis_test.py
// (their plan tests; docs/testing.md §1). Hypothesis' random draws become fixed grids covering the same ranges and
// edges.
#include <gtest/gtest.h>

#include <cmath>

#include "moka/moka.h"
#include "moka/operators/stats.h"

namespace moka {
namespace {

NetDef net(const std::string& name, std::vector<OperatorDef> ops) {
  NetDef n;
  n.name = name;
  n.op = std::move(ops);
  return n;
}

ExecutionStepDef step(const std::string& name, std::vector<std::string> nets) {
  ExecutionStepDef s;
  s.name = name;
  s.network = std::move(nets);
  return s;
}

OperatorDef fill(const std::string& out, std::vector<int64_t> shape, double value, int64_t dtype = 1) {
  return make_op("ConstantFill", {}, {out},
                 {make_arg("shape", std::move(shape)), make_arg("value", value), make_arg("dtype", dtype)});
}

void set_i64(Workspace& ws, const std::string& name, int64_t v) {
  ws.create_blob(name)->get_mutable<Tensor>() = Tensor::from_vector<int64_t>({1}, {v});
}

// Ports workspace_test.cc WorkspaceTest.RunEmptyPlan.
TEST(PlanConformance, RunEmptyPlan) {
  Workspace ws;
  EXPECT_NO_THROW(run_plan(ws, PlanDef{}));
}

// Ports workspace_test.py testRunPlan.
TEST(PlanConformance, RunPlanCreatesBlob) {
  Workspace ws;
  PlanDef plan;
  plan.name = "test-plan";
  plan.network.push_back(net("testnet", {fill("testblob", {1, 2, 3, 4}, 1.0)}));
  plan.execution_step.push_back(step("test-step", {"testnet"}));
  run_plan(ws, plan);
  ASSERT_TRUE(ws.has_blob("testblob"));
  const Tensor& t = ws.blob("testblob").get<Tensor>();
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, 2, 3, 4}));
  for (float v : t.values<float>()) EXPECT_EQ(v, 1.0f);
}

// Ports workspace_test.py testConstructPlanFromSteps (a bare step runs as a plan).
TEST(PlanConformance, RunStepAsPlan) {
  Workspace ws;
  run_step(ws, step("test-step-as-plan", {"testnet"}), {net("testnet", {fill("testblob", {1, 2, 3, 4}, 1.0)})});
  EXPECT_TRUE(ws.has_blob("testblob"));
}

// Ports workspace_test.py test_plan_run (hypothesis over names and values): the blob exists, the net
// stays registered in the workspace, the value matches.
TEST(PlanConformance, PlanRunKeepsNetAndBlob) {
  const std::vector<std::tuple<std::string, std::string, std::string, double>> cases = {
      {"p", "blob", "net", 0.5},
      {"", "b l o b", "n/e/t:1", -1.0},
      {"plan \xc3\xa9", "\xe2\x98\x83", "\xf0\x9f\x90\x8d net", 1.0},
      {"x", "_", "\"quoted\"", 1e-4},
  };
  for (const auto& [plan_name, blob_name, net_name, value] : cases) {
    Workspace ws;
    PlanDef plan;
    plan.name = plan_name;
    plan.network.push_back(net(net_name, {fill(blob_name, {1}, value)}));
    auto s = step("step", {net_name});
    s.num_iter = 1;
    plan.execution_step.push_back(s);
    run_plan(ws, plan);
    ASSERT_TRUE(ws.has_blob(blob_name)) << blob_name;
    EXPECT_NE(ws.get_net(net_name), nullptr) << net_name;
    EXPECT_NEAR(ws.blob(blob_name).get<Tensor>().item<float>(), value, 1e-4);
  }
}

// Ports hypothesis_test.py test_should_stop_as_criteria_net_execution_step.
TEST(PlanConformance, ShouldStopAsCriteriaNet) {
  for (int64_t initial : {0, 1, 7, 50, 100}) {
    for (int64_t max_iters : {0, 1, 7, 50, 100}) {
      Workspace ws;
      set_i64(ws, "iter", initial);
      set_i64(ws, "num_iters", max_iters);
      PlanDef plan;
      plan.network.push_back(net("criteria", {make_op("GE", {"iter", "num_iters"}, {"stop"})}));
      plan.network.push_back(net("net", {make_op("Iter", {"iter"}, {"iter"})}));
      auto s = step("step", {"criteria", "net"});
      s.should_stop_blob = "stop";
      plan.execution_step.push_back(s);
      run_plan(ws, plan);
      const Tensor& iter = ws.blob("iter").get<Tensor>();
      ASSERT_EQ(iter.dtype(), DType::Int64);
      EXPECT_EQ(iter.values<int64_t>()[0], std::max(initial, max_iters)) << initial << " " << max_iters;
    }
  }
}

// Ports hypothesis_test.py test_disabled_execution_step: the stop blob is checked after every net.
TEST(PlanConformance, DisabledExecutionStep) {
  Workspace ws;
  PlanDef plan;
  ExecutionStepDef all;
  all.name = "all_steps";
  all.num_iter = 3;
  for (int i = 1; i <= 3; ++i) {
    const std::string idx = std::to_string(i);
    const std::string output = "output_" + idx, stop = "should_stop_" + idx;
    const bool disabled = (i == 2);
    plan.network.push_back(
        net("init_" + idx, {fill(output, {1}, 0.0), make_op("Cast", {output}, {stop}, {make_arg("to", int64_t{5})})}));
    plan.network.push_back(net("criterion_" + idx, {fill(stop, {1}, disabled ? 1 : 0, 5)}));
    plan.network.push_back(net("net_" + idx, {fill(output, {1}, 1.0)}));
    plan.network.push_back(net("ender_" + idx, {fill(stop, {1}, 1, 5)}));
    auto s = step("step_" + idx, {"init_" + idx, "criterion_" + idx, "net_" + idx, "ender_" + idx});
    if (i != 3) s.should_stop_blob = stop;
    all.substep.push_back(s);
  }
  plan.execution_step.push_back(all);
  run_plan(ws, plan);
  EXPECT_EQ(ws.blob("output_1").get<Tensor>().item<float>(), 1.0f);
  EXPECT_EQ(ws.blob("output_2").get<Tensor>().item<float>(), 0.0f);
  EXPECT_EQ(ws.blob("output_3").get<Tensor>().item<float>(), 1.0f);
}

// Ports hypothesis_test.py test_iter_count_with_execution_step.
TEST(PlanConformance, IterCountWithExecutionStep) {
  for (int64_t initial : {0, 3, 100}) {
    for (int64_t num_iters : {0, 1, 42, 100}) {
      Workspace ws;
      set_i64(ws, "iter", initial);
      auto s = step("step", {"net"});
      s.num_iter = num_iters;
      run_step(ws, s, {net("net", {make_op("Iter", {"iter"}, {"iter"})})});
      const Tensor& iter = ws.blob("iter").get<Tensor>();
      ASSERT_EQ(iter.dtype(), DType::Int64);
      EXPECT_EQ(iter.values<int64_t>()[0], initial + num_iters);
    }
  }
}

// Ports hypothesis_test.py test_atomic_iter_with_concurrent_steps.
TEST(PlanConformance, AtomicIterWithConcurrentSteps) {
  for (int64_t initial : {0, 17}) {
    for (int64_t num_iters : {0, 1, 25, 100}) {
      for (int num_nets : {0, 1, 3, 5}) {
        Workspace ws;
        set_i64(ws, "iter", initial);
        run_net_once(ws, net("init", {make_op("CreateMutex", {}, {"iter_mutex"})}));
        StatRegistry::global().export_all(/*reset=*/true);
        PlanDef plan;
        ExecutionStepDef concurrent;
        concurrent.name = "concurrent_steps";
        concurrent.num_iter = num_iters;
        concurrent.concurrent_substeps = true;
        for (int i = 0; i < num_nets; ++i) {
          const std::string n = "atomic_iter_net_" + std::to_string(i);
          plan.network.push_back(net(n, {make_op("AtomicIter", {"iter_mutex", "iter"}, {"iter"})}));
          concurrent.substep.push_back(step("step", {n}));
        }
        plan.execution_step.push_back(concurrent);
        run_plan(ws, plan);
        EXPECT_EQ(ws.blob("iter").get<Tensor>().values<int64_t>()[0], initial + num_iters * num_nets);
        if (num_iters * num_nets > 0) {
          Workspace stats_ws;
          run_operator_once(stats_ws, make_op("StatRegistryExport", {}, {"k", "v", "ts"}));
          const auto keys = stats_ws.blob("k").get<Tensor>().values<std::string>();
          const auto vals = stats_ws.blob("v").get<Tensor>().values<int64_t>();
          ASSERT_GE(keys.size(), 1u);
          EXPECT_EQ(keys[0], "atomic_iter/stats/iter/num_iter");
          EXPECT_EQ(vals[0], num_iters * num_nets);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moka
