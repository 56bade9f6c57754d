// Unit tests: an error below concurrent instances of a step (num_concurrent_instances) names each step
// of its path once, however many instances rethrew it (they used to add their context to one shared
// exception object, from several threads at once).
#include <gtest/gtest.h>

#include <string>

#include "moka/core/error.h"
#include "moka/core/workspace.h"
#include "moka/defs/json.h"
#include "moka/exec/plan_executor.h"

namespace moka {
namespace {

// Steps l1..l<depth>, each running its inner step and a side step as concurrent substeps in two
// instances; the innermost step "leaf" divides by an integer zero.
std::string nested_step(int depth) {
  // Each instance of the leaf and side steps in a workspace of its own: instances sharing one
  // would write the same blobs at once (a data race of the plan, which TSan reports).
  if (depth == 0) return R"({"name": "leaf", "create_workspace": true, "network": ["bad"]})";
  const std::string d = std::to_string(depth);
  return R"({"name": "l)" + d + R"(", "concurrent_substeps": true, "num_concurrent_instances": 2, "substep": [)" +
         nested_step(depth - 1) + R"(, {"name": "side)" + d +
         R"(", "create_workspace": true, "network": ["ok"], "num_iter": 3}]})";
}

PlanDef nested_plan(int depth) {
  return plan_from_json(R"({"network": [
      {"name": "ok", "op": [{"type": "ConstantFill", "output": ["o"]}]},
      {"name": "bad", "op": [
        {"type": "GivenTensorInt64Fill", "output": ["a"], "arg": [{"name": "values", "ints": [7]}]},
        {"type": "GivenTensorInt64Fill", "output": ["z"], "arg": [{"name": "values", "ints": [0]}]},
        {"type": "Div", "input": ["a", "z"], "output": ["q"]}]}],
    "execution_step": [)" +
                        nested_step(depth) + "]}");
}

std::string error_of(const PlanDef& plan, Concurrency concurrency) {
  Workspace ws;
  RunOptions options;
  options.concurrency = concurrency;
  try {
    run_plan(ws, plan, options);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the plan did not fail";
  return {};
}

constexpr const char* kExpected =
    "step \"l4\" > step \"l3\" > step \"l2\" > step \"l1\" > step \"leaf\" > net \"bad\" > operator #2 (Div): "
    "Div: integer division by zero (inputs \"a\", \"z\")";

TEST(ConcurrentErrorContext, EachStepOfThePathIsNamedOnceOnThreads) {
  const PlanDef plan = nested_plan(4);
  for (int run = 0; run < 20; ++run) EXPECT_EQ(error_of(plan, Concurrency::threads), kExpected) << "run " << run;
}

TEST(ConcurrentErrorContext, EachStepOfThePathIsNamedOnceOnFibers) {
  const PlanDef plan = nested_plan(4);
  for (int run = 0; run < 20; ++run) EXPECT_EQ(error_of(plan, Concurrency::fibers), kExpected) << "run " << run;
}

}  // namespace
}  // namespace moka
