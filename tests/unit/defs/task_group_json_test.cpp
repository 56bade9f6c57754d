// JSON of compiled TaskGroups: lossless round trip, validation paths through nodes and their plans.
#include <gtest/gtest.h>

#include "moka/core/error.h"
#include "moka/defs/json.h"

namespace moka {
namespace {

std::string error_of(std::string_view text) {
  try {
    (void)task_group_from_json(text);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "no error";
}

TEST(TaskGroupJson, RoundTripIsLossless) {
  TaskGroupDef g;
  g.name = "tg";
  NodePlanDef a;
  a.node = "local";
  a.outputs = {"x", "local/task:output/ConstantFill:0"};
  a.plan.name = "task_group_plan";
  NetDef n;
  n.name = "net";
  n.op.push_back(make_op("ConstantFill", {}, {"x"}, {make_arg("value", int64_t{3})}));
  a.plan.network.push_back(n);
  ExecutionStepDef s;
  s.name = "local:body";
  s.network = {"net"};
  s.concurrent_substeps = false;
  a.plan.execution_step.push_back(s);
  NodePlanDef b;
  b.node = "n2";
  g.nodes = {a, b};
  EXPECT_EQ(task_group_from_json(to_json(g)), g);
  EXPECT_EQ(task_group_from_json(to_json(g, -1)), g);
  const RunnableDef doc = runnable_from_json(to_json(g));
  ASSERT_TRUE(std::holds_alternative<TaskGroupDef>(doc));
  EXPECT_TRUE(std::holds_alternative<PlanDef>(runnable_from_json(to_json(a.plan))));
}

TEST(TaskGroupJson, ErrorsNameTheirPath) {
  EXPECT_EQ(error_of(R"({"name": "x"})").rfind("nodes: missing field \"nodes\"", 0), 0u)
      << error_of(R"({"name": "x"})");
  const std::string dup = error_of(R"({"nodes": [{"node": "a"}, {"node": "a"}]})");
  EXPECT_EQ(dup.rfind("nodes[1].node: duplicate node \"a\"", 0), 0u) << dup;
  const std::string unknown = error_of(R"({"nodes": [{"node": "a", "plans": {}}]})");
  EXPECT_EQ(unknown.rfind("nodes[0]: unknown field \"plans\"", 0), 0u) << unknown;
  const std::string nested =
      error_of(R"({"nodes": [{"node": "a", "plan": {"execution_step": [{"name": "s", "num_iters": 2}]}}]})");
  EXPECT_EQ(nested.rfind("nodes[0].plan.execution_step[0]: unknown field \"num_iters\"", 0), 0u) << nested;
  const std::string missing_net =
      error_of(R"({"nodes": [{"node": "a", "plan": {"execution_step": [{"name": "s", "network": ["ghost"]}]}}]})");
  EXPECT_NE(missing_net.find("nodes[0].plan.execution_step[0].network[0]"), std::string::npos) << missing_net;
  const std::string twice = error_of(R"({"nodes": [{"node": "a", "outputs": ["x", "x"]}]})");
  EXPECT_EQ(twice.rfind("nodes[0].outputs: an output is listed twice", 0), 0u) << twice;
  const std::string no_node = error_of(R"({"nodes": [{"outputs": []}]})");
  EXPECT_EQ(no_node.rfind("nodes[0]: missing field \"node\"", 0), 0u) << no_node;
}

TEST(TaskGroupJson, CallablesRefuseToSerialiseNamingTheNode) {
  TaskGroupDef g;
  NodePlanDef a;
  a.node = "trainer";
  NetDef n;
  n.name = "net";
  n.op.push_back(make_op("Callable", {}, {}, {make_arg("token", int64_t{1})}));
  a.plan.network.push_back(n);
  g.nodes = {a};
  try {
    (void)to_json(g);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node \"trainer\"", 0), 0u) << e.what();
  }
}

// What MpiSession compares across ranks: callables written without their process-local token, so that two
// processes that built the same program compare equal whatever tokens their registries handed out.
TEST(TaskGroupJson, ComparisonJsonWritesCallablesWithoutTheirToken) {
  auto group = [](int64_t token, const char* output) {
    TaskGroupDef g;
    NodePlanDef a;
    a.node = "trainer";
    NetDef n;
    n.name = "net";
    n.op.push_back(make_op("Callable", {"x"}, {output}, {make_arg("token", token)}));
    a.plan.network.push_back(n);
    g.nodes = {a};
    return g;
  };
  const std::string one = comparison_json(group(1, "y"));
  EXPECT_EQ(one, comparison_json(group(7, "y")));
  EXPECT_NE(one, comparison_json(group(1, "z")));
  EXPECT_EQ(one.find("token"), std::string::npos) << one;
  EXPECT_NE(one.find("\"Callable\""), std::string::npos) << one;
  EXPECT_THROW((void)to_json(group(1, "y")), InvalidInput);  // still refused where it would be read back
}

}  // namespace
}  // namespace moka
