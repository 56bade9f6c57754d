// run_task_group: nodes run concurrently in their own workspaces; a failure cancels the others; errors name the node.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/test_ops_impl.h"

namespace moka {
namespace {

using testing::net_of;
using testing::step_with_nets;
using testing::test_state;

class RunTaskGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::register_test_ops();
    test_state().reset();
  }
  void TearDown() override { test_state().release_blocked = true; }
};

OperatorDef fill_i64(const std::string& out, int64_t v) {
  return make_op("ConstantFill", {}, {out},
                 {make_arg("shape", std::vector<int64_t>{}), make_arg("value", v), make_arg("dtype", int64_t{10})});
}

NodePlanDef node_plan(const std::string& node, std::vector<OperatorDef> ops, std::vector<std::string> outputs = {},
                      const std::string& net_name = "net") {
  NodePlanDef n;
  n.node = node;
  NetDef net;
  net.name = net_name;
  net.op = std::move(ops);
  n.plan.network.push_back(net);
  n.plan.execution_step.push_back(step_with_nets("step", {net_name}));
  n.outputs = std::move(outputs);
  return n;
}

TEST_F(RunTaskGroup, EveryNodeHasItsOwnWorkspace) {
  TaskGroupDef g;
  g.nodes.push_back(node_plan("local", {fill_i64("x", 1)}, {"out_a"}));
  g.nodes.push_back(node_plan("n2", {fill_i64("x", 2)}, {"out_b"}));
  NodeWorkspaces ws;
  run_task_group(g, ws, {});
  EXPECT_EQ(ws.node("local").blob("x").get<Tensor>().item<int64_t>(), 1);
  EXPECT_EQ(ws.node("n2").blob("x").get<Tensor>().item<int64_t>(), 2);
  EXPECT_TRUE(ws.node("local").has_blob("out_a"));  // outputs are pre-created on their node only
  EXPECT_FALSE(ws.node("local").has_blob("out_b"));
  EXPECT_EQ(ws.nodes(), (std::vector<std::string>{"local", "n2"}));
}

TEST_F(RunTaskGroup, SharedWorkspaceOptionPutsEveryNodeInOne) {
  TaskGroupDef g;
  g.nodes.push_back(node_plan("local", {fill_i64("a", 1)}, {}, "net_a"));
  g.nodes.push_back(node_plan("n2", {fill_i64("b", 2)}, {}, "net_b"));
  NodeWorkspaces ws(/*shared=*/true);
  run_task_group(g, ws, {});
  EXPECT_EQ(&ws.node("local"), &ws.node("n2"));
  EXPECT_TRUE(ws.node("local").has_blob("a"));
  EXPECT_TRUE(ws.node("local").has_blob("b"));
  // The same net name on two nodes would race in one workspace: refused before anything runs.
  g.nodes[1].plan.network[0].name = "net_a";
  g.nodes[1].plan.execution_step[0].network = {"net_a"};
  EXPECT_THROW(run_task_group(g, ws, {}), InvalidInput);
}

TEST_F(RunTaskGroup, NodesRunConcurrently) {
  // Node a waits for node b; run one after the other this would time out and fail.
  static std::atomic<bool> b_ran{false};
  b_ran = false;
  const int64_t wait_token = register_callable([] {
    return [](std::span<Blob* const>, std::span<Blob* const>) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!b_ran) {
        if (std::chrono::steady_clock::now() > deadline) throw RuntimeError("node b never ran");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
  });
  const int64_t set_token =
      register_callable([] { return [](std::span<Blob* const>, std::span<Blob* const>) { b_ran = true; }; });
  TaskGroupDef g;
  g.nodes.push_back(node_plan("a", {make_op("Callable", {}, {}, {make_arg("token", wait_token)})}));
  g.nodes.push_back(node_plan("b", {make_op("Callable", {}, {}, {make_arg("token", set_token)})}));
  NodeWorkspaces ws;
  EXPECT_NO_THROW(run_task_group(g, ws, {}));
}

TEST_F(RunTaskGroup, FirstFailureCancelsTheOtherNodesAndNamesItsNode) {
  TaskGroupDef g;
  g.nodes.push_back(node_plan("blocked", {make_op("StuckBlocking", {}, {})}));
  g.nodes.push_back(node_plan("failing", {make_op("Error", {}, {})}));
  NodeWorkspaces ws;
  try {
    run_task_group(g, ws, {});
    FAIL();
  } catch (const testing::TestError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node \"failing\" > step \"step\" > net \"net\"", 0), 0u) << e.what();
  }
  EXPECT_EQ(test_state().cancel_count.load(), 1);
}

TEST_F(RunTaskGroup, InvalidPlanOnOneNodeRunsNothing) {
  TaskGroupDef g;
  g.nodes.push_back(node_plan("good", {make_op("CountCalls", {}, {})}));
  g.nodes.push_back(node_plan("bad", {make_op("NoSuchOp", {}, {})}));
  NodeWorkspaces ws;
  try {
    run_task_group(g, ws, {});
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node \"bad\" > ", 0), 0u) << e.what();
  }
  EXPECT_EQ(test_state().counter.load(), 0);
}

TEST_F(RunTaskGroup, ExternalCancelStopsEveryNodeWithoutError) {
  TaskGroupDef g;
  g.nodes.push_back(node_plan("a", {make_op("StuckBlocking", {}, {})}));
  g.nodes.push_back(node_plan("b", {make_op("StuckBlocking", {}, {})}));
  NodeWorkspaces ws;
  RunOptions opts;
  opts.cancel = std::make_shared<CancelToken>();
  // Cancel once both nodes' operators are running (a fixed delay after the first one started was
  // too short under TSan for the second node to start: then only one operator saw cancel()).
  std::thread canceller([&] {
    while (test_state().stuck_blocking_runs < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    opts.cancel->cancel();
  });
  EXPECT_NO_THROW(run_task_group(g, ws, opts));
  canceller.join();
  EXPECT_EQ(test_state().cancel_count.load(), 2);
}

TEST_F(RunTaskGroup, CancelTokenStopsAPlanLoop) {
  Workspace ws;
  PlanDef p;
  p.network.push_back(net_of("n", {"CountCalls"}));
  auto s = step_with_nets("s", {"n"});
  s.num_iter = 1'000'000'000;
  p.execution_step.push_back(s);
  RunOptions opts;
  opts.cancel = std::make_shared<CancelToken>();
  std::thread canceller([&] {
    while (test_state().counter < 1000) std::this_thread::yield();
    opts.cancel->cancel();
  });
  run_plan(ws, p, opts);
  canceller.join();
  EXPECT_GE(test_state().counter.load(), 1000);
  EXPECT_LT(test_state().counter.load(), 1'000'000'000);
}

}  // namespace
}  // namespace moka
