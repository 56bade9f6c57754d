// PreparedPlan: a plan checked once and bound to one workspace, whose instantiated nets are kept
// between runs while the workspace keeps the same blobs and nets (what makes repeated runs cheap).
#pragma once

#include <cstdint>
#include <memory>

#include "moka/core/workspace.h"
#include "moka/defs/plan_def.h"
#include "moka/exec/plan_executor.h"

namespace moka {

namespace detail {
struct PreparedState;
}

/// @brief A plan to be run many times in one workspace (what LocalSession keeps per node).
///
/// The plan is checked once, at construction. The first run instantiates the nets as run_plan
/// does; later runs reuse the instantiated steps and nets — and recycle the child workspaces of
/// create_workspace steps, emptied — as long as nothing changed the workspace chain's set of
/// blobs and nets since the previous run ended (Workspace::chain_generation) and the previous
/// run finished without error, cancellation or external stop. Otherwise the run instantiates
/// afresh, exactly like run_plan. Results are those of run_plan; the difference users can see is
/// that operators are not re-constructed for every run (decision 11 in docs/decisions.md).
///
/// @code
///   moka::Workspace ws;
///   moka::PreparedPlan prepared(ws, plan);   // throws InvalidInput for a malformed plan
///   for (int i = 0; i < 1000; ++i) prepared.run();
/// @endcode
/// Thread-safety: one run at a time (a concurrent second run throws InvalidInput); ws must
/// outlive the PreparedPlan, and nothing else may use ws while a run is in progress except
/// through the plan's own operators, as for run_plan.
class PreparedPlan {
 public:
  PreparedPlan(Workspace& ws, PlanDef plan);
  ~PreparedPlan();
  PreparedPlan(const PreparedPlan&) = delete;
  PreparedPlan& operator=(const PreparedPlan&) = delete;

  /// @brief Runs the plan (Caffe2's Workspace::RunPlan); errors as run_plan's.
  void run(const RunOptions& options = {});

  /// @brief Drops the instantiated nets: removes from the workspace the nets this plan registered
  /// there that are still its own (not replaced since by another plan or the user), and forgets
  /// the rest, so a later run instantiates afresh. For an owner that will not run the plan again
  /// (LocalSession dropping a runnable nobody holds). Not while a run is in progress
  /// (InvalidInput); nothing is removed after a run left a worker stuck in an operator.
  void unregister_nets();

  const PlanDef& plan() const noexcept;
  Workspace& workspace() const noexcept;
  /// How many runs instantiated the plan afresh (1 after the first run; more when the
  /// workspace changed between runs or a run failed). For tests and benchmarks.
  int64_t num_instantiations() const noexcept;

 private:
  std::unique_ptr<detail::PreparedState> state_;
};

}  // namespace moka
