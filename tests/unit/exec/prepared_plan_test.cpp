// PreparedPlan: nets instantiated once and reused between runs, recycled child workspaces that
// start empty, and fresh instantiation whenever the workspace changed or a run did not end cleanly.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "moka/moka.h"
#include "support/test_ops.h"

namespace moka {
namespace {

std::atomic<int> g_builds{0};
std::atomic<int> g_calls{0};
std::atomic<int> g_saw_stale{0};  // runs that found their private output already filled

// A callable that counts constructions and calls, and checks that its (private) output starts
// empty in every execution — as it would in a fresh child workspace.
void register_prepared_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_callable_operator(OpSchema("PreparedCounted").inputs(0).outputs(0, 1).doc("test: counts"), [] {
      g_builds++;
      return [](std::span<Blob* const>, std::span<Blob* const> out) {
        g_calls++;
        if (out.empty()) return;
        if (out[0]->is_initialized()) g_saw_stale++;
        out[0]->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
      };
    });
  });
}

ExecutionStepDef net_step(const std::string& name, std::vector<std::string> nets) {
  ExecutionStepDef s;
  s.name = name;
  s.network = std::move(nets);
  return s;
}

// `instances` concurrent instances, each in its own child workspace, running net "n" once.
PlanDef instances_plan(int32_t instances = 8) {
  PlanDef plan;
  plan.name = "instances";
  NetDef n;
  n.name = "n";
  n.op.push_back(make_op("PreparedCounted", {}, {"private_out"}));
  plan.network.push_back(n);
  ExecutionStepDef inst = net_step("instance", {"n"});
  inst.create_workspace = true;
  ExecutionStepDef par;
  par.name = "parallel";
  par.substep = {inst};
  par.num_concurrent_instances = instances;
  plan.execution_step.push_back(par);
  return plan;
}

void reset_counts() {
  g_builds = 0;
  g_calls = 0;
  g_saw_stale = 0;
}

TEST(PreparedPlan, ReusesNetsAndRecycledChildWorkspacesBetweenRuns) {
  register_prepared_test_ops();
  reset_counts();
  Workspace ws;
  PreparedPlan prepared(ws, instances_plan());
  prepared.run();
  EXPECT_EQ(g_builds.load(), 8);  // one construction per instance, as run_plan
  EXPECT_EQ(g_calls.load(), 8);
  for (int i = 0; i < 5; ++i) prepared.run();
  EXPECT_EQ(g_builds.load(), 8);  // later runs reuse the instances' operators
  EXPECT_EQ(g_calls.load(), 6 * 8);
  EXPECT_EQ(g_saw_stale.load(), 0) << "a recycled child workspace must start empty";
  EXPECT_EQ(prepared.num_instantiations(), 1);
  EXPECT_FALSE(ws.has_blob("private_out"));  // private blobs never reach the parent
}

// Adds `step` to the int64 blob "total" three times, with nets "init" (step into "one") and "add".
PlanDef count_plan(const std::string& name, int64_t step) {
  PlanDef plan;
  plan.name = name;
  NetDef init;
  init.name = "init";
  init.op.push_back(
      make_op("ConstantFill", {}, {"one"},
              {make_arg("shape", std::vector<int64_t>{}), make_arg("value", step), make_arg("dtype", int64_t{10})}));
  NetDef add;
  add.name = "add";
  add.op.push_back(make_op("Add", {"total", "one"}, {"total"}));
  plan.network = {init, add};
  ExecutionStepDef loop = net_step("loop", {"init", "add"});
  loop.num_iter = 3;
  plan.execution_step.push_back(loop);
  return plan;
}

TEST(PreparedPlan, GlobalBlobsPersistAndResultsMatchRunPlan) {
  const PlanDef plan = count_plan("count", 1);

  Workspace fresh, prepared_ws;
  for (Workspace* w : {&fresh, &prepared_ws})
    w->create_blob("total")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(0);
  PreparedPlan prepared(prepared_ws, plan);
  for (int i = 0; i < 4; ++i) {
    run_plan(fresh, plan);
    prepared.run();
    EXPECT_EQ(prepared_ws.blob("total").get<Tensor>(), fresh.blob("total").get<Tensor>());
  }
  EXPECT_EQ(prepared_ws.blob("total").get<Tensor>().item<int64_t>(), 12);
  EXPECT_EQ(prepared.num_instantiations(), 1);
}

TEST(PreparedPlan, ChangedWorkspaceMeansFreshInstantiation) {
  register_prepared_test_ops();
  reset_counts();
  Workspace ws;
  PreparedPlan prepared(ws, instances_plan(1));  // one instance: it may write a parent blob
  prepared.run();
  ws.create_blob("unrelated");  // the set of blobs changed: bindings may differ now
  prepared.run();
  EXPECT_EQ(prepared.num_instantiations(), 2);
  EXPECT_EQ(g_builds.load(), 2);
  // A parent blob named like an instance's output: a fresh instantiation writes it in place.
  ws.create_blob("private_out");
  prepared.run();
  EXPECT_EQ(prepared.num_instantiations(), 3);
  ASSERT_TRUE(ws.blob("private_out").is_initialized());
  EXPECT_EQ(ws.blob("private_out").get<Tensor>().item<int64_t>(), 1);
  prepared.run();
  EXPECT_EQ(prepared.num_instantiations(), 3);
  ws.remove_blob("unrelated");
  prepared.run();
  EXPECT_EQ(prepared.num_instantiations(), 4);
}

TEST(PreparedPlan, PlansTakingTurnsInOneWorkspaceEachInstantiateOnce) {
  // A job's epoch and its checkpoint nets, or a benchmark's reset and its pipe: the nets one plan
  // registers must not make the other instantiate afresh every time.
  register_prepared_test_ops();
  reset_counts();
  Workspace ws;
  ws.create_blob("total")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(0);
  PreparedPlan ones(ws, count_plan("ones", 1));
  PlanDef twos_def = count_plan("twos", 2);  // the same work under other net names
  twos_def.network[0].name = "twos_init";
  twos_def.network[1].name = "twos_add";
  twos_def.execution_step[0].network = {"twos_init", "twos_add"};
  PreparedPlan twos(ws, twos_def);
  PreparedPlan instances(ws, instances_plan(4));
  for (int i = 0; i < 5; ++i) {
    ones.run();
    twos.run();
    instances.run();
  }
  EXPECT_EQ(ones.num_instantiations(), 1);
  EXPECT_EQ(twos.num_instantiations(), 1);
  EXPECT_EQ(instances.num_instantiations(), 1);
  EXPECT_EQ(g_builds.load(), 4);
  EXPECT_EQ(g_calls.load(), 5 * 4);
  EXPECT_EQ(ws.blob("total").get<Tensor>().item<int64_t>(), 5 * (3 + 6));
}

TEST(PreparedPlan, ReplacedOrRemovedNetMeansFreshInstantiation) {
  // Two plans whose nets share names ("init", "add") but not definitions: each run must replace
  // the other's nets with its own, or a plan would run the other's operators (or freed ones).
  Workspace ws;
  ws.create_blob("total")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(0);
  PreparedPlan ones(ws, count_plan("ones", 1));
  PreparedPlan tens(ws, count_plan("tens", 10));
  int64_t expected = 0;
  for (int i = 0; i < 3; ++i) {
    ones.run();
    expected += 3;
    EXPECT_EQ(ws.blob("total").get<Tensor>().item<int64_t>(), expected);
    tens.run();
    expected += 30;
    EXPECT_EQ(ws.blob("total").get<Tensor>().item<int64_t>(), expected);
  }
  EXPECT_EQ(ones.num_instantiations(), 3);
  EXPECT_EQ(tens.num_instantiations(), 3);

  tens.run();  // its nets are in place now
  EXPECT_EQ(tens.num_instantiations(), 3);
  ASSERT_TRUE(ws.remove_net("add"));
  tens.run();
  EXPECT_EQ(tens.num_instantiations(), 4);
  // The same definition registered anew is a different net object (which may even sit at the
  // old one's address): the plan instantiates its own again rather than run one it did not make.
  create_net(ws, count_plan("tens", 10).network[1], /*overwrite=*/true);
  tens.run();
  EXPECT_EQ(tens.num_instantiations(), 5);
  expected += 3 * 30;
  EXPECT_EQ(ws.blob("total").get<Tensor>().item<int64_t>(), expected);
}

TEST(PreparedPlan, FailedOrCancelledRunIsNotReused) {
  testing::register_test_ops();
  testing::test_state().reset();
  PlanDef plan;
  plan.name = "fails";
  plan.network.push_back(testing::net_of("bad", {"ThrowStd"}));
  plan.execution_step.push_back(net_step("s", {"bad"}));
  Workspace ws;
  PreparedPlan prepared(ws, plan);
  EXPECT_THROW(prepared.run(), std::exception);
  EXPECT_THROW(prepared.run(), std::exception);
  EXPECT_EQ(prepared.num_instantiations(), 2);

  PlanDef noop;
  noop.name = "noop";
  noop.network.push_back(testing::net_of("n", {"Noop"}));
  noop.execution_step.push_back(net_step("s", {"n"}));
  PreparedPlan again(ws, noop);
  RunOptions cancelled;
  cancelled.cancel = std::make_shared<CancelToken>();
  cancelled.cancel->cancel();
  again.run(cancelled);  // stops before the first step, without an error
  again.run();
  again.run();
  EXPECT_EQ(again.num_instantiations(), 2);
}

TEST(PreparedPlan, MalformedPlanFailsAtConstruction) {
  PlanDef plan;
  plan.name = "bad";
  plan.execution_step.push_back(net_step("s", {"missing"}));
  Workspace ws;
  EXPECT_THROW(PreparedPlan(ws, plan), InvalidInput);
}

TEST(PreparedPlan, OneRunAtATime) {
  testing::register_test_ops();
  testing::test_state().reset();
  PlanDef plan;
  plan.name = "slow";
  NetDef n = testing::net_of("n", {});
  n.op.push_back(make_op("SleepMs", {}, {}, {make_arg("ms", int64_t{200})}));
  plan.network.push_back(n);
  plan.execution_step.push_back(net_step("s", {"n"}));
  Workspace ws;
  PreparedPlan prepared(ws, plan);
  std::thread t([&] { prepared.run(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_THROW(prepared.run(), InvalidInput);
  EXPECT_THROW(prepared.unregister_nets(), InvalidInput) << "its nets are in use";
  t.join();
  prepared.run();  // free again
  EXPECT_EQ(prepared.num_instantiations(), 1);

  // Between runs: its net leaves the workspace, and a later run instantiates afresh.
  ASSERT_NE(ws.get_net("n"), nullptr);
  prepared.unregister_nets();
  EXPECT_EQ(ws.get_net("n"), nullptr);
  prepared.run();
  EXPECT_EQ(prepared.num_instantiations(), 2);
  EXPECT_NE(ws.get_net("n"), nullptr);
}

TEST(PreparedPlan, WorkspaceGenerationTracksBlobsNotNets) {
  Workspace root;
  Workspace child(&root);
  const uint64_t g0 = root.generation(), c0 = child.chain_generation();
  root.create_blob("a");
  EXPECT_GT(root.generation(), g0);
  EXPECT_GT(child.chain_generation(), c0);
  const uint64_t g1 = root.generation();
  root.create_blob("a");                                                   // exists: no change
  root.get_blob("a")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);  // contents: no change
  EXPECT_EQ(root.generation(), g1);
  root.rename_blob("a", "b");
  EXPECT_GT(root.generation(), g1);
  const uint64_t g2 = root.generation();
  child.create_blob("b");  // the parent's blob: no change anywhere
  EXPECT_EQ(root.generation(), g2);
  EXPECT_EQ(child.generation(), 0u);
  // Nets: each object has its own serial; registering or replacing one leaves the generation alone.
  NetDef n;
  n.name = "n";
  const uint64_t s1 = create_net(root, n)->serial();
  const uint64_t s2 = create_net(root, n, /*overwrite=*/true)->serial();
  EXPECT_GT(s2, s1);
  EXPECT_TRUE(root.remove_net("n"));
  EXPECT_EQ(root.generation(), g2);
  child.create_local_blob("c");
  child.get_blob("c")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(2);
  child.reset_local_blobs();
  EXPECT_TRUE(child.has_blob("c"));
  EXPECT_FALSE(child.get_blob("c")->is_initialized());
}

TEST(PreparedPlan, LocalSessionCanInstantiateEveryRun) {
  register_prepared_test_ops();
  for (const bool reuse : {true, false}) {
    reset_counts();
    LocalSession session({.reuse_nets = reuse});
    Task task({.num_instances = 4}, [&] { ops::op("PreparedCounted", {}, {"private_out"}); });
    session.run(task);
    session.run(task);
    EXPECT_EQ(g_builds.load(), reuse ? 4 : 8);
    EXPECT_EQ(g_calls.load(), 8);
    EXPECT_EQ(g_saw_stale.load(), 0);
  }
}

}  // namespace
}  // namespace moka
