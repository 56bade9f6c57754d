// Internal: a step's compiled form (nets instantiated, substeps wrapped) and the per-run plan context.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "moka/core/trace.h"
#include "moka/core/workspace.h"
#include "moka/defs/plan_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/exec/simple_net.h"

namespace moka::detail {

/// State shared by every step of one run_plan call.
struct PlanContext {
  explicit PlanContext(const std::vector<NetDef>& nets, RunOptions opts);

  std::unordered_map<std::string, const NetDef*> net_defs;
  RunOptions options;
  std::atomic<int32_t> workspace_seq{0};  // GLOBAL_WORKSPACE_ID sequence (docs/plan-execution.md §2.6)
  std::atomic<bool> abandoned{false};     // a worker ignored cancellation; keep all state alive
  std::atomic<bool> dirty{false};         // something was cancelled: compiled state is not reusable
  uint64_t run_id = 0;                    // which run of a PreparedPlan this is (set between runs)
  std::mutex created_mu;
  std::set<std::pair<const Workspace*, std::string>> created;  // nets instantiated by this run
  // The plan's workspace, and the nets instantiated there (name -> NetBase::serial()) since the
  // context was made: another plan may replace them between runs, which a reuse must notice.
  // (Nets in child workspaces are private to the plan's own steps.) A hash map: a plan of n nets
  // records n of them, and a search per net made instantiating 100k nets take seconds.
  const Workspace* plan_ws = nullptr;
  std::unordered_map<std::string, uint64_t> plan_ws_nets;
  // The trace track of the node this plan runs for (the caller's, when the context was made): steps
  // record into it on whichever thread runs them (docs/tracing.md).
  uint32_t trace_node = trace_current_node_track();

  /// The net `name` in ws, instantiated once per run and workspace (nets that existed before the
  /// run are re-created on first use, as Caffe2 does).
  SimpleNet* net(Workspace& ws, const std::string& name, const std::string& step_name);
  /// Every net in plan_ws_nets is still the one registered under its name in plan_ws.
  bool plan_ws_nets_intact() const;
  bool external_stop() const {
    return (options.cancel && options.cancel->cancelled()) || (options.should_continue && !options.should_continue());
  }
};

class CompiledStep;

/// A step in the tree. Steps without create_workspace compile once, eagerly, at construction
/// (so all their nets exist before anything runs, docs/plan-execution.md §2.2); create_workspace steps compile
/// afresh for every execution, in a new child workspace — or, in a later run of a PreparedPlan, take
/// a compiled step of an earlier run whose child workspace was emptied, when nothing made its
/// bindings stale. (Never within one run: concurrent instances each construct their own
/// operators, as Caffe2's test_multi_instance_python_op requires.)
class StepWrapper {
 public:
  StepWrapper(const ExecutionStepDef& step, Workspace* ws, PlanContext& ctx);
  ~StepWrapper();

  const ExecutionStepDef& step() const { return step_; }
  PlanContext& context() const { return ctx_; }
  /// The compiled step to execute now (the cached one, or a fresh one registered as live).
  std::shared_ptr<CompiledStep> compiled();
  /// Called when a fresh compiled step finished executing.
  void release(const std::shared_ptr<CompiledStep>& c);
  /// Cancels the cached step and every live fresh one; later fresh ones start cancelled.
  void cancel();
  /// The step's name in the trace's string table (looked up once).
  uint32_t trace_name();
  /// The stat registry's cells "<stats_key>/runs" and "<stats_key>/busy_ns"; null without a stats_key.
  std::atomic<int64_t>* stat_runs() const { return stat_runs_; }
  std::atomic<int64_t>* stat_busy_ns() const { return stat_busy_ns_; }

 private:
  const ExecutionStepDef& step_;
  Workspace* ws_;
  PlanContext& ctx_;
  std::shared_ptr<CompiledStep> cached_;
  std::mutex live_mu_;
  std::list<std::shared_ptr<CompiledStep>> live_;
  std::deque<std::shared_ptr<CompiledStep>> free_;  // recyclable fresh steps (create_workspace only)
  std::atomic<bool> cancelled_{false};
  std::atomic<uint32_t> trace_name_{UINT32_MAX};
  std::atomic<int64_t>* stat_runs_ = nullptr;
  std::atomic<int64_t>* stat_busy_ns_ = nullptr;
};

/// A step with its workspace, nets and substep wrappers bound (Caffe2's CompiledExecutionStep).
class CompiledStep {
 public:
  CompiledStep(const ExecutionStepDef& step, Workspace* parent_ws, PlanContext& ctx);
  ~CompiledStep();

  /// Loop condition for iteration i: not cancelled, within num_iter / only_once, no external stop.
  bool keep_going(int64_t i) const {
    if (cancelled.load(std::memory_order_relaxed)) return false;
    if (i >= max_iters) return false;
    return !ctx.external_stop();
  }
  /// The value of should_stop_blob: false when unset or never filled (docs/plan-execution.md §2.4); TypeError unless a
  /// scalar bool. Inline: the executor checks it after every net (nine times per batch in a pipe).
  bool should_stop() const {
    const Blob* b = should_stop_blob;
    if (b == nullptr || !b->is_initialized()) return false;
    const Tensor* t = b->tensor_or_null();
    if (t == nullptr || t->dtype() != DType::Bool || t->numel() != 1) throw_should_stop_not_a_scalar_bool(t);
    return t->data<bool>()[0];
  }
  /// Records the first error and cancels everything below this step.
  void fail(std::exception_ptr e);
  /// The first error recorded, as a private copy (copy_for_rethrow): the concurrent instances
  /// of a step share it and each rethrows it, adding its own context. Null when there is none.
  std::exception_ptr first_exception() const;
  void cancel();
  [[noreturn, gnu::cold, gnu::noinline]] void throw_should_stop_not_a_scalar_bool(const Tensor* t) const;
  /// A create_workspace step: true when it can serve another execution — it ran without
  /// failure or cancellation, nothing created or removed blobs in its child workspace
  /// at run time, and the parent chain is unchanged since it was compiled.
  bool recyclable() const;
  /// Empties the child workspace (keeping its blobs, which operators point to) for reuse.
  void recycle();
  /// Prepares a recycled step for a new execution (a new GLOBAL_WORKSPACE_ID, docs/plan-execution.md §2.6).
  void reuse();

  const ExecutionStepDef& step;
  PlanContext& ctx;
  std::unique_ptr<Workspace> owned_ws;
  Workspace* ws;
  std::vector<std::unique_ptr<StepWrapper>> recurring;
  std::vector<std::unique_ptr<StepWrapper>> reporters;
  std::vector<SimpleNet*> nets;
  SimpleNet* report_net = nullptr;
  Blob* should_stop_blob = nullptr;
  int64_t max_iters = 1;    // INT64_MAX for "until should_stop"
  bool fiber_safe = false;  // a concurrent step whose subtree may run on fibers (Concurrency::fibers)
  std::atomic<bool> cancelled{false};
  std::atomic<bool> got_failure{false};
  uint64_t parent_generation = 0;  // parent chain's generation when compiled
  uint64_t own_generation = 0;     // the child workspace's generation after compiling
  uint64_t released_in_run = 0;    // PlanContext::run_id when it was recycled

 private:
  mutable std::mutex ex_mu_;
  std::exception_ptr first_ex_;
};

/// "step \"name\"" for messages.
std::string describe_step(const ExecutionStepDef& step);

/// Keeps objects alive forever (state of a run whose worker could not be stopped).
void keep_forever(std::shared_ptr<const void> p);

}  // namespace moka::detail
