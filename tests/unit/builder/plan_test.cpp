// Unit tests of moka::Plan (net collection order, dropped steps, freezing) and end-to-end runs of
// builder-made plans in a Workspace, including the net-building parts of workspace_test.py's plan
// tests, hypothesis_test.py's step tests and net_builder_test's test_net_multi_use, rebuilt with the builders.
#include <gtest/gtest.h>

#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/plan.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"
#include "moka/operators/stats.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;

Net filled_net(const std::string& name) {
  Net n(name);
  n.op("ConstantFill", {}, {n.name() + "/x"});
  return n;
}

std::vector<std::string> names_of(const std::vector<Net>& nets) {
  std::vector<std::string> out;
  for (const Net& n : nets) out.push_back(n.name());
  return out;
}

int64_t i64(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<int64_t>(); }

TEST(PlanBuild, NetsInOrderOfFirstUse) {
  Net a = filled_net("PlanBuild.a"), b = filled_net("PlanBuild.b"), c = filled_net("PlanBuild.c");
  Net r = filled_net("PlanBuild.r"), e = filled_net("PlanBuild.e");
  ExecutionStep s1("PlanBuild.s1");
  s1.add_net(c).add_net(a).set_report_net(r, 1);
  ExecutionStep s21("PlanBuild.s21");
  s21.add_net(b).add_net(a);
  ExecutionStep s2("PlanBuild.s2");
  s2.add_substep(s21).set_report_net(e, 1);
  ExecutionStep top("PlanBuild.top");
  top.add_substep(s1).add_substep(s2);
  Plan plan("PlanBuild.plan");
  plan.add_step(top);
  const std::vector<std::string> expected{c.name(), a.name(), r.name(), b.name(), e.name()};
  EXPECT_EQ(names_of(plan.nets()), expected);
  PlanDef def = plan.proto();
  EXPECT_EQ(def.name, "PlanBuild.plan");
  std::vector<std::string> in_proto;
  for (const NetDef& n : def.network) in_proto.push_back(n.name);
  EXPECT_EQ(in_proto, expected);
  ASSERT_EQ(def.execution_step.size(), 1u);
  EXPECT_EQ(def.execution_step[0], top.proto());
  EXPECT_NO_THROW(check_plan(def));

  // A second step reusing a net adds only the new ones.
  Net f = filled_net("PlanBuild.f");
  plan.add_step(execution_step("PlanBuild.second", {f, a}));
  EXPECT_EQ(plan.nets().size(), 6u);
  EXPECT_EQ(plan.nets().back().name(), f.name());
  EXPECT_EQ(plan.steps().size(), 2u);
}

TEST(PlanBuild, MarksUsedDropsEmptyStepsAndFreezesNets) {
  Net net = filled_net("PlanBuild.freeze");
  ExecutionStep empty("PlanBuild.empty");
  ExecutionStep s = execution_step("PlanBuild.s", net);
  Plan plan("PlanBuild.p");
  plan.add_step(empty).add_step(s);
  EXPECT_TRUE(empty.is_used());
  EXPECT_TRUE(s.is_used());
  EXPECT_EQ(plan.proto().execution_step.size(), 1u);
  EXPECT_TRUE(net.is_frozen());
  EXPECT_THROW(net.op("ConstantFill"), InvalidInput);
  EXPECT_EQ(invalid_input([&] { s.set_iter(2); }), "Cannot mutate a step that has already been added to a plan/step.");
  // A step with only a report net does nothing and is dropped too.
  ExecutionStep report_only("PlanBuild.report_only");
  report_only.set_report_net(filled_net("PlanBuild.rn"), 1);
  plan.add_step(report_only);
  EXPECT_EQ(plan.steps().size(), 1u);
}

TEST(PlanBuild, PlanFromStepAndDuplicateNames) {
  Net a = filled_net("PlanBuild.dup");
  Net twin = Net::from_proto(a.proto(), /*unique_name=*/false);
  ExecutionStep s = execution_step("PlanBuild.from_step", a);
  Plan plan(s);
  EXPECT_EQ(plan.name(), "PlanBuild.from_step");
  EXPECT_EQ(plan.steps().size(), 1u);
  ExecutionStep other = execution_step("PlanBuild.other", twin);
  EXPECT_EQ(invalid_input([&] { plan.add_step(other); }), "Different nets with same name: " + a.name());
  EXPECT_EQ(plan.steps().size(), 1u);
  EXPECT_FALSE(twin.is_frozen());
}

struct Label : NetAttribute {
  explicit Label(int v) : value(v) {}
  int value;
};

TEST(PlanBuild, AttributesOfAllNets) {
  Net a = filled_net("PlanBuild.attr_a"), b = filled_net("PlanBuild.attr_b");
  a.add_attribute("k", std::make_shared<Label>(1));
  b.add_attribute("k", std::make_shared<Label>(2));
  Plan plan("PlanBuild.attrs");
  plan.add_step(execution_step("PlanBuild.attr_step", {b, a}));
  auto attrs = plan.get_all_attributes("k");
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(std::dynamic_pointer_cast<Label>(attrs[0])->value, 2);
}

// ---- end to end ----

TEST(PlanRun, NumIterLoopOfAdd) {
  Net init("PlanRun.init");
  BlobRef total = init.Const(0, {.blob_out = "PlanRun.total"});
  BlobRef one = init.Const(1);
  Net body("PlanRun.body");
  body.op("Add", {total, one}, {total});
  EXPECT_EQ(body.proto().external_input, (std::vector<std::string>{total.name(), one.name()}));
  Plan plan("PlanRun.loop");
  plan.add_step(execution_step("PlanRun.init_step", init));
  plan.add_step(execution_step("PlanRun.body_step", body, {.num_iter = 10}));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, total), 10);
  EXPECT_EQ(ws.blob(total.name()).get<Tensor>().shape(), std::vector<int64_t>{});
}

TEST(PlanRun, ShouldStopLoop) {
  Net init("PlanRun.stop_init");
  BlobRef i = init.Const(0);
  BlobRef limit = init.Const(5);
  BlobRef one = init.Const(1);
  Net body("PlanRun.stop_body");
  body.op("Add", {i, one}, {i});
  BlobRef stop = body.op("GE", {i, limit});
  Net after("PlanRun.stop_after");  // must not run on the stopping pass
  BlobRef runs = after.op("Add", {"PlanRun.runs", one}, {"PlanRun.runs"});
  init.Const(0, {.blob_out = runs});
  Plan plan("PlanRun.stop");
  plan.add_step(execution_step("PlanRun.s_init", init));
  plan.add_step(execution_step("PlanRun.s_loop", {body, after}, {.should_stop_blob = stop}));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, i), 5);
  EXPECT_EQ(i64(ws, runs), 4);
}

TEST(PlanRun, ConcurrentSubsteps) {
  Net init("PlanRun.conc_init");
  BlobRef one = init.Const(1);
  BlobRef a = init.Const(0, {.blob_out = "PlanRun.a"});
  BlobRef b = init.Const(0, {.blob_out = "PlanRun.b"});
  Net inc_a("PlanRun.inc_a"), inc_b("PlanRun.inc_b");
  inc_a.op("Add", {a, one}, {a});
  inc_b.op("Add", {b, one}, {b});
  ExecutionStep workers = execution_step(
      "PlanRun.workers",
      {execution_step("PlanRun.wa", inc_a, {.num_iter = 3}), execution_step("PlanRun.wb", inc_b, {.num_iter = 4})},
      {.num_iter = 2, .concurrent_substeps = true});
  Plan plan("PlanRun.concurrent");
  plan.add_step(execution_step("PlanRun.cinit", init));
  plan.add_step(workers);
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, a), 6);
  EXPECT_EQ(i64(ws, b), 8);
}

TEST(PlanRun, CreateWorkspaceKeepsBlobsLocal) {
  Net net("PlanRun.local");
  BlobRef x = net.Const(7, {.blob_out = "PlanRun.local_x"});
  Plan plan("PlanRun.ws");
  plan.add_step(execution_step("PlanRun.child", net, {.create_workspace = true}));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_FALSE(ws.has_blob(x.name()));
}

// Ports net_builder_test.py test_net_multi_use without the Task/Session layer: the same Net
// object added twice to a step runs twice.
TEST(PlanRun, NetMultiUse) {
  Net init("PlanRun.multi_init");
  BlobRef total = init.Const(0);
  Net net("my_net");
  net.op("Add", {total, net.Const(1)}, {total});
  ExecutionStep step("PlanRun.multi");
  step.add_net(net).add_net(net);
  Plan plan("PlanRun.multi_plan");
  plan.add_step(execution_step("PlanRun.multi_init_step", init));
  plan.add_step(step);
  EXPECT_EQ(plan.proto().network.size(), 2u);
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, total), 2);
}

// ---- workspace_test.py's plan tests ----

Net fill_net(const std::string& name, const BlobRef& blob, std::vector<int64_t> shape, double value) {
  Net net(name);
  net.op("ConstantFill", {}, {blob}, {{"shape", std::move(shape)}, {"value", value}});
  return net;
}

// testRunPlan.
TEST(PlanConformanceBuilders, RunPlan) {
  Net net = fill_net("testnet", "testblob", {1, 2, 3, 4}, 1.0);
  Plan plan("test-plan");
  plan.add_step(ExecutionStep("test-step", {net}));
  Workspace ws;
  run_plan(ws, plan.proto());
  ASSERT_TRUE(ws.has_blob("testblob"));
  EXPECT_EQ(ws.blob("testblob").get<Tensor>().shape(), (std::vector<int64_t>{1, 2, 3, 4}));
}

// testConstructPlanFromSteps: a bare step runs as a plan (Caffe2 wraps it in Plan(step)).
TEST(PlanConformanceBuilders, ConstructPlanFromSteps) {
  Net net = fill_net("testnet", "testblob", {1, 2, 3, 4}, 1.0);
  Workspace ws;
  run_plan(ws, Plan(ExecutionStep("test-step-as-plan", {net})).proto());
  EXPECT_TRUE(ws.has_blob("testblob"));
}

// test_plan_run: arbitrary names; the net stays registered in the workspace.
TEST(PlanConformanceBuilders, PlanRunKeepsNetAndBlob) {
  const std::vector<std::tuple<std::string, std::string, std::string, double>> cases = {
      {"p", "blob", "net", 0.5}, {"", "b l o b", "n/e/t:1", -1.0}, {"x", "\xe2\x98\x83", "\"quoted\"", 1e-4}};
  for (const auto& [plan_name, blob_name, net_name, value] : cases) {
    Net net = fill_net(net_name, blob_name, {1}, value);
    Plan plan(plan_name);
    plan.add_step(ExecutionStep("step", {net}, 1));
    Workspace ws;
    run_plan(ws, plan.proto());
    ASSERT_TRUE(ws.has_blob(blob_name)) << blob_name;
    EXPECT_NE(ws.get_net(net.name()), nullptr) << net.name();
    EXPECT_NEAR(ws.blob(blob_name).get<Tensor>().item<float>(), value, 1e-4);
  }
}

// ---- hypothesis_test.py's step tests, fixed grids ----

void set_iter_blob(Workspace& ws, const std::string& name, int64_t v) {
  ws.create_blob(name)->get_mutable<Tensor>() = Tensor::from_vector<int64_t>({1}, {v});
}

// test_should_stop_as_criteria_net_execution_step.
TEST(PlanConformanceBuilders, ShouldStopAsCriteriaNet) {
  for (int64_t initial : {0, 7, 100}) {
    for (int64_t max_iters : {0, 7, 100}) {
      Workspace ws;
      set_iter_blob(ws, "iter", initial);
      set_iter_blob(ws, "num_iters", max_iters);
      Net criteria("criteria");
      criteria.op("GE", {"iter", "num_iters"}, {"stop"});
      Net net("net");
      net.op("Iter", {"iter"}, {"iter"});
      Plan plan("plan");
      plan.add_step(ExecutionStep("step", {criteria, net}).set_should_stop_blob("stop"));
      run_plan(ws, plan.proto());
      const Tensor& iter = ws.blob("iter").get<Tensor>();
      ASSERT_EQ(iter.dtype(), DType::Int64);
      EXPECT_EQ(iter.values<int64_t>()[0], std::max(initial, max_iters));
    }
  }
}

// test_disabled_execution_step: the stop blob is checked after every net.
TEST(PlanConformanceBuilders, DisabledExecutionStep) {
  std::vector<ExecutionStep> steps;
  for (int i = 1; i <= 3; ++i) {
    const std::string idx = std::to_string(i);
    const BlobRef output = "output_" + idx, stop = "should_stop_" + idx;
    Net init("init_" + idx);
    init.op("ConstantFill", {}, {output}, {{"shape", {1}}, {"value", 0.0}});
    init.op("Cast", {output}, {stop}, {{"to", DType::Bool}});
    Net criterion("criterion_" + idx);
    criterion.op("ConstantFill", {}, {stop}, {{"shape", {1}}, {"value", i == 2 ? 1 : 0}, {"dtype", DType::Bool}});
    Net body("net_" + idx);
    body.op("ConstantFill", {}, {output}, {{"shape", {1}}, {"value", 1.0}});
    Net ender("ender_" + idx);
    ender.op("ConstantFill", {}, {stop}, {{"shape", {1}}, {"value", 1}, {"dtype", DType::Bool}});
    ExecutionStep s("step_" + idx, {init, criterion, body, ender});
    if (i != 3) s.set_should_stop_blob(stop);
    steps.push_back(s);
  }
  Plan plan("plan");
  plan.add_step(execution_step("all_steps", steps, {.num_iter = 3}));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(ws.blob("output_1").get<Tensor>().item<float>(), 1.0f);
  EXPECT_EQ(ws.blob("output_2").get<Tensor>().item<float>(), 0.0f);
  EXPECT_EQ(ws.blob("output_3").get<Tensor>().item<float>(), 1.0f);
}

// test_iter_count_with_execution_step.
TEST(PlanConformanceBuilders, IterCountWithExecutionStep) {
  for (int64_t initial : {0, 100}) {
    for (int64_t num_iters : {0, 1, 42}) {
      Workspace ws;
      set_iter_blob(ws, "iter", initial);
      Net net("net");
      net.op("Iter", {"iter"}, {"iter"});
      ExecutionStep step("step", {net});
      step.set_iter(num_iters);
      run_plan(ws, Plan(step).proto());
      EXPECT_EQ(ws.blob("iter").get<Tensor>().values<int64_t>()[0], initial + num_iters);
    }
  }
}

// test_atomic_iter_with_concurrent_steps (num_nets = 0: the step has no substeps and the
// plan drops it).
TEST(PlanConformanceBuilders, AtomicIterWithConcurrentSteps) {
  for (int64_t num_iters : {0, 1, 25}) {
    for (int num_nets : {0, 1, 3}) {
      Workspace ws;
      set_iter_blob(ws, "iter", 17);
      Net init("init");
      init.op("CreateMutex", {}, {"iter_mutex"});
      run_plan(ws, Plan(ExecutionStep("init", {init})).proto());
      StatRegistry::global().export_all(/*reset=*/true);
      ExecutionStep concurrent("concurrent_steps", {}, num_iters);
      for (int i = 0; i < num_nets; ++i) {
        Net net("atomic_iter_net");
        net.op("AtomicIter", {"iter_mutex", "iter"}, {"iter"});
        concurrent.add_substep(ExecutionStep("step", {net}));
      }
      concurrent.set_concurrent_substeps(true);
      Plan plan("plan");
      plan.add_step(concurrent);
      EXPECT_EQ(plan.proto().execution_step.size(), num_nets == 0 ? 0u : 1u);
      run_plan(ws, plan.proto());
      EXPECT_EQ(ws.blob("iter").get<Tensor>().values<int64_t>()[0], 17 + num_iters * num_nets);
    }
  }
}

}  // namespace
}  // namespace moka
