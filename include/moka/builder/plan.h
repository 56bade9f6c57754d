// moka::Plan (Caffe2's Python core.Plan): top-level steps and the nets they use, as a PlanDef
// that run_plan() accepts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/defs/plan_def.h"

namespace moka {

namespace detail {
struct PlanState;
}

/// @brief Builds a plan: steps run one after another, plus every net they use.
///
/// Plan is a **handle** (copies share the plan). add_step() marks the step used, drops it when
/// it has neither nets nor substeps, and collects its nets in order of first use (depth-first
/// over substeps, then the step's own nets, then its report net), each name once. The collected
/// nets are frozen: the plan's definition holds them as they are at that moment.
///
/// @code
///   moka::Net net("fill");
///   net.op("ConstantFill", {}, {"x"}, {{"shape", {2}}, {"value", 1.0}});
///   moka::Plan plan("p");
///   plan.add_step(moka::execution_step("s", net, {.num_iter = 3}));
///   moka::Workspace ws;
///   moka::run_plan(ws, plan.proto());
/// @endcode
/// Thread-safety: a plan is built by one thread at a time.
class Plan {
 public:
  explicit Plan(std::string name);
  /// Caffe2's `Plan(step)`: named after step, with step added.
  explicit Plan(const ExecutionStep& step);

  const std::string& name() const noexcept;
  /// See the class comment. InvalidInput "Different nets with same name: X" when step uses a
  /// different net under a name the plan already holds.
  Plan& add_step(const ExecutionStep& step);

  /// Nets in the order they appear in proto().network.
  std::vector<Net> nets() const;
  /// The steps that were kept, in order.
  std::vector<ExecutionStep> steps() const;
  /// The attributes under key of every net of the plan, net by net.
  std::vector<std::shared_ptr<NetAttribute>> get_all_attributes(const std::string& key) const;

  /// The definition: the plan's nets' proto() and its steps' proto(), composed now.
  PlanDef proto() const;

  friend bool operator==(const Plan& a, const Plan& b) noexcept { return a.state_ == b.state_; }
  /// An identity that expires when the last handle to this plan is gone (a session keys its
  /// compiled runnables by it, and drops them once nobody can run them again).
  std::weak_ptr<const void> identity() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::PlanState> state_;
};

}  // namespace moka
