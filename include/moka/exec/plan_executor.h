// The plan executor: runs a PlanDef in a workspace with Caffe2's step semantics (docs/plan-execution.md) and moka's
// failure model (an error anywhere cancels its siblings, every thread is joined, the error is thrown).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "moka/core/workspace.h"
#include "moka/defs/plan_def.h"
#include "moka/exec/cancel_token.h"

namespace moka {

/// How the substeps of a concurrent step (and its concurrent instances) run. Fibers take turns at
/// queue waits and at least every 2 ms (a fiber that never waits yields after a net once its turn is
/// over), so a substep that loops without waiting cannot starve its siblings.
enum class Concurrency {
  /// Each on a worker of the process's pool, at once (Caffe2 ran each on a thread of its own).
  threads,
  /// All on the thread running the step, as fibers taking turns: a substep runs until it would wait
  /// for a queue (empty to read, full to write) and then lets the others run. Every batch of a pipe
  /// then stays on one core, like a one-thread tbb::parallel_pipeline — faster than threads when the
  /// stages' work is small next to a hand-off between cores, slower when it is large (one core does
  /// it all). Applies to a concurrent step only when every operator below it is fiber-safe
  /// (OpSchema::fiber_safe; not Callable) and it has no report steps; other steps use threads.
  fibers,
  /// fibers where the thread running the step can use only one CPU (its affinity mask, or its
  /// cgroup's CPU quota of at most one CPU: a container limited to one CPU), threads otherwise.
  /// On one CPU, threads cannot run at once anyway, and every hand-off between them is a context
  /// switch: pinned to one CPU, the benchmark pipe ran 1.4–2.1× faster on fibers, 2.5–4.7× with
  /// another program on that CPU (docs/benchmarks-history.md). Decided each time a concurrent step starts. The default.
  automatic,
};

/// Options of one plan run.
struct RunOptions {
  /// Checked before every iteration of every step; returning false ends the plan early, without
  /// an error (Caffe2's shouldContinue, e.g. stop on SIGINT). Must be thread-safe.
  std::function<bool()> should_continue;
  /// Cancelling it ends the run early, without an error, waking blocked operators (see CancelToken).
  std::shared_ptr<CancelToken> cancel;
  /// After an error, how long to wait for concurrent workers that ignore cancellation before
  /// giving up on them (Caffe2's --caffe2_plan_executor_exception_timeout). The plan then fails
  /// with "failed to stop concurrent workers after exception: ..."; the stuck threads are left
  /// running (and the run's state is kept alive for them), the process is not aborted.
  std::chrono::milliseconds exception_timeout{std::chrono::seconds(60)};
  /// How concurrent substeps run (see Concurrency).
  Concurrency concurrency = Concurrency::automatic;
};

/// @brief Runs plan in ws (Caffe2's Workspace::RunPlan).
///
/// The plan is checked first (check_plan), so a malformed plan fails before anything runs.
/// Top-level steps run one after another; each is instantiated just before it runs. Nets
/// instantiated in ws stay registered there afterwards; nets and blobs of create_workspace
/// steps go away with their child workspaces.
///
/// Errors: InvalidInput for definition problems; otherwise the first error raised by an
/// operator, a net or a reporter, rethrown with its dynamic type and its location
/// (`step "a" > step "b" > net "n" > operator #2 (Add): ...`). Never aborts the process.
/// Thread-safety: several plans may run concurrently in different workspaces, or in the same
/// workspace when they touch different blobs and define different nets.
void run_plan(Workspace& ws, const PlanDef& plan, const RunOptions& options = {});

/// Runs a single step with the given nets (Caffe2's RunPlan(ExecutionStep)).
void run_step(Workspace& ws, const ExecutionStepDef& step, const std::vector<NetDef>& nets,
              const RunOptions& options = {});

/// @brief Checks a plan without running it.
///
/// Duplicate net names, steps with both substeps and networks, references to undefined nets,
/// should_stop_blob with num_iter, only_once without should_stop_blob, report_net without
/// report_interval, negative counts, unknown operator types and arguments that do not satisfy
/// their operator's schema — also in the nets operators hold as arguments (If's then_net, ...).
/// Throws InvalidInput naming the step path or net and operator.
void check_plan(const PlanDef& plan);

}  // namespace moka
