// Unit tests: check_plan checks the nets operators hold as arguments (If, While, Do), at any depth,
// naming the path to the bad operator as a run would.
#include <gtest/gtest.h>

#include <string>

#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/exec/plan_executor.h"

namespace moka {
namespace {

// Net "if<depth>" runs an If whose then_net is "if<depth-1>", down to "inner" holding `inner_ops`.
std::string nested_if_net(int depth, const std::string& inner_ops) {
  if (depth == 0) return R"({"name": "inner", "op": )" + inner_ops + "}";
  return R"({"name": "if)" + std::to_string(depth) + R"(", "op": [
      {"type": "ConstantFill", "output": ["c"], "arg": [{"name": "shape", "ints": []}, {"name": "dtype", "s": "BOOL"},
                                                         {"name": "value", "i": 1}]},
      {"type": "If", "input": ["c"], "arg": [{"name": "then_net", "n": )" +
         nested_if_net(depth - 1, inner_ops) + "}]}]}";
}

PlanDef plan_with(const std::string& net) {
  return plan_from_json(R"({"network": [)" + net + R"(], "execution_step": [{"name": "s", "network": ["if3"]}]})");
}

std::string check_error(const PlanDef& plan) {
  try {
    check_plan(plan);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "check_plan accepted the plan";
  return {};
}

TEST(PlanCheckNestedNets, AnUnknownOperatorInANestedNetIsFound) {
  EXPECT_EQ(
      check_error(plan_with(nested_if_net(3, R"([{"type": "Nope"}])"))),
      "network[0] \"if3\" > operator #1 (If) > net \"if2\" > operator #1 (If) > net \"if1\" > operator #1 (If) > "
      "net \"inner\" > operator #0 (Nope): unknown operator type \"Nope\" (`moka ops` lists the registered ones)");
}

TEST(PlanCheckNestedNets, WrongArityInAWhileBodyIsFound) {
  const std::string net = R"({"name": "if3", "op": [
      {"type": "ConstantFill", "output": ["c"], "arg": [{"name": "shape", "ints": []}, {"name": "dtype", "s": "BOOL"}]},
      {"type": "While", "input": ["c"], "arg": [{"name": "loop_net", "n": {"name": "body", "op": [
         {"type": "Add", "input": ["a"], "output": ["b"]}]}}]}]})";
  const std::string msg = check_error(plan_with(net));
  EXPECT_NE(msg.find("operator #1 (While) > net \"body\" > operator #0 (Add): Add takes 2 input(s), got 1"),
            std::string::npos)
      << msg;
}

TEST(PlanCheckNestedNets, ValidNestedNetsPass) {
  EXPECT_NO_THROW(check_plan(plan_with(nested_if_net(3, R"([{"type": "ConstantFill", "output": ["x"]}])"))));
}

}  // namespace
}  // namespace moka
