// Stress: 1,000 plans whose concurrent substeps throw at random points while siblings block, loop, nest
// and report — every run must end with the error, none may hang (ctest timeout), clean under TSan.
#include <gtest/gtest.h>

#include <random>

#include "support/test_ops_impl.h"

namespace moka {
namespace {

using testing::TestError;

// Throws TestError on its n-th run (n from the argument), counting per operator instance.
class ThrowOnRunOp final : public OperatorBase {
 public:
  ThrowOnRunOp(const OperatorDef& d, Workspace* ws) : OperatorBase(d, ws), n_(args().get_int("n", 0)) {}
  bool run() override {
    if (runs_++ == n_) throw TestError();
    return true;
  }

 private:
  int64_t n_;
  int64_t runs_ = 0;
};

void register_stress_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    testing::register_test_ops();
    register_operator<ThrowOnRunOp>(
        OpSchema("ThrowOnRun").arg("n", ArgType::Int, "run index that throws", "0").doc("stress: throws on run n"));
  });
}

NetDef net1(const std::string& name, OperatorDef op) {
  NetDef n;
  n.name = name;
  n.op.push_back(std::move(op));
  return n;
}

ExecutionStepDef leaf(const std::string& name, const std::string& net) {
  ExecutionStepDef s;
  s.name = name;
  s.network = {net};
  return s;
}

// A random plan: a concurrent top step whose substeps are one thrower plus a random mix of
// blockers, infinite loops, nested concurrent groups, task-like instance groups and reporters.
PlanDef random_plan(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PlanDef plan;
  plan.network.push_back(net1("block", make_op("StuckBlocking", {}, {})));
  plan.network.push_back(net1("noop", make_op("Noop", {}, {})));
  plan.network.push_back(net1("count", make_op("CountCalls", {}, {})));
  ExecutionStepDef top;
  top.name = "top";
  top.concurrent_substeps = true;

  int k = 0;
  auto sibling = [&](int depth, auto&& self) -> ExecutionStepDef {
    const std::string id = std::to_string(k++);
    switch (pick(0, depth > 1 ? 2 : 4)) {
      case 0:
        return leaf("block_" + id, "block");
      case 1: {  // loops until cancelled
        ExecutionStepDef s = leaf("loop_" + id, "noop");
        s.num_iter = 1'000'000'000;
        return s;
      }
      case 2: {  // reporter alongside a loop
        ExecutionStepDef r = leaf("report_" + id, "count");
        r.run_every_ms = pick(1, 5);
        ExecutionStepDef body = leaf("body_" + id, "noop");
        body.num_iter = 1'000'000'000;
        ExecutionStepDef s;
        s.name = "reported_" + id;
        s.substep = {body, r};
        return s;
      }
      case 3: {  // nested concurrent group
        ExecutionStepDef s;
        s.name = "group_" + id;
        s.concurrent_substeps = true;
        for (int i = pick(2, 3); i > 0; --i) s.substep.push_back(self(depth + 1, self));
        return s;
      }
      default: {  // task-like: instances in fresh child workspaces
        ExecutionStepDef inst = self(depth + 1, self);
        inst.create_workspace = true;
        ExecutionStepDef s;
        s.name = "instances_" + id;
        s.num_concurrent_instances = pick(2, 4);
        s.substep = {inst};
        return s;
      }
    }
  };

  const int throw_at = pick(0, 20);
  plan.network.push_back(net1("thrower", make_op("ThrowOnRun", {}, {}, {make_arg("n", int64_t{throw_at})})));
  ExecutionStepDef thrower = leaf("thrower", "thrower");
  thrower.num_iter = 1000;
  const int siblings = pick(1, 4);
  const int thrower_pos = pick(0, siblings);
  for (int i = 0; i <= siblings; ++i) top.substep.push_back(i == thrower_pos ? thrower : sibling(0, sibling));
  plan.execution_step.push_back(top);
  return plan;
}

TEST(CancelStress, RandomThrowsAlwaysSurfaceAndNeverHang) {
  register_stress_ops();
  const int runs = 1000;
  for (int r = 0; r < runs; ++r) {
    std::mt19937 rng(static_cast<unsigned>(r));
    const PlanDef plan = random_plan(rng);
    Workspace ws;
    RunOptions opts;
    opts.exception_timeout = std::chrono::seconds(30);  // every blocker here honours cancel()
    try {
      run_plan(ws, plan, opts);
      FAIL() << "run " << r << " finished without the error";
    } catch (const TestError& e) {
      EXPECT_NE(std::string(e.what()).find("step \"thrower\""), std::string::npos) << e.what();
    }
  }
}

// Errors in reporters too: the reporter throws while siblings block.
TEST(CancelStress, ReporterThrowsWhileSiblingsBlock) {
  register_stress_ops();
  for (int r = 0; r < 200; ++r) {
    PlanDef plan;
    plan.network.push_back(net1("block", make_op("StuckBlocking", {}, {})));
    plan.network.push_back(net1("thrower", make_op("ThrowOnRun", {}, {}, {make_arg("n", int64_t{r % 3})})));
    ExecutionStepDef rep = leaf("reporter", "thrower");
    rep.run_every_ms = 1;
    ExecutionStepDef top;
    top.name = "top";
    top.concurrent_substeps = true;
    top.substep = {leaf("b1", "block"), leaf("b2", "block"), rep};
    plan.execution_step.push_back(top);
    Workspace ws;
    EXPECT_THROW(run_plan(ws, plan), TestError);
  }
}

}  // namespace
}  // namespace moka
