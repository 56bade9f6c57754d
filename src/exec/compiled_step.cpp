// Compiling steps: child workspaces, workspace-id injection, net instantiation, substep wrappers, cancellation.
#include "exec/compiled_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"

namespace moka::detail {

std::string describe_step(const ExecutionStepDef& step) { return fmt::format("step \"{}\"", step.name); }

void keep_forever(std::shared_ptr<const void> p) {
  static std::mutex mu;
  static auto* graveyard = new std::vector<std::shared_ptr<const void>>();
  std::lock_guard lk(mu);
  graveyard->push_back(std::move(p));
}

PlanContext::PlanContext(const std::vector<NetDef>& nets, RunOptions opts) : options(std::move(opts)) {
  for (const auto& n : nets) net_defs.emplace(n.name, &n);
}

SimpleNet* PlanContext::net(Workspace& ws, const std::string& name, const std::string& step_name) {
  auto it = net_defs.find(name);
  if (it == net_defs.end()) throw InvalidInput(fmt::format("ExecutionStep {} uses undefined net {}", step_name, name));
  std::lock_guard lk(created_mu);
  const bool first_use = created.emplace(&ws, name).second;
  NetBase* existing = first_use ? nullptr : ws.get_net(name);
  if (existing == nullptr) {
    SimpleNet* made = create_net(ws, *it->second, /*overwrite=*/true);
    if (&ws == plan_ws) plan_ws_nets.insert_or_assign(name, made->serial());
    return made;
  }
  auto* net = dynamic_cast<SimpleNet*>(existing);
  if (!net) throw InvalidInput(fmt::format("Network {} not found.", name));
  return net;
}

bool PlanContext::plan_ws_nets_intact() const {
  for (const auto& [name, serial] : plan_ws_nets) {
    const NetBase* n = plan_ws->get_net(name);
    if (n == nullptr || n->serial() != serial) return false;
  }
  return true;
}

namespace {

// docs/plan-execution.md §2.6: a new child workspace that sees NODE_ID gets a local GLOBAL_WORKSPACE_ID.
void inject_workspace_id(Workspace& ws, PlanContext& ctx) {
  Blob* node = ws.get_blob("NODE_ID");
  if (!node) return;
  const Tensor* t = node->tensor_or_null();
  if (!t || t->dtype() != DType::Int32 || t->numel() != 1)
    throw TypeError(
        fmt::format("NODE_ID must be an int32 scalar, found {}", t ? t->describe() : std::string(node->type_name())));
  const int32_t seq = ctx.workspace_seq.fetch_add(1);
  if (seq >= 65536) throw RuntimeError("Integer overflow while calculating GLOBAL_WORKSPACE_ID blob");
  const int32_t node_id = t->item<int32_t>();
  ws.create_local_blob("GLOBAL_WORKSPACE_ID")->get_mutable<Tensor>() =
      Tensor::scalar<int32_t>(static_cast<int32_t>(seq + (static_cast<uint32_t>(node_id) << 16)));
}

// Whether the subtree of step may run on fibers: no report steps, and every operator fiber-safe.
bool fiber_safe_subtree(const ExecutionStepDef& step, const PlanContext& ctx) {
  if (step.report_net || step.run_every_ms) return false;
  const OperatorRegistry& reg = OperatorRegistry::global();
  for (const auto& name : step.network) {
    auto it = ctx.net_defs.find(name);
    if (it == ctx.net_defs.end()) return false;
    for (const auto& op : it->second->op)
      if (!reg.is_fiber_safe(op.type)) return false;
  }
  return std::all_of(step.substep.begin(), step.substep.end(),
                     [&](const ExecutionStepDef& sub) { return fiber_safe_subtree(sub, ctx); });
}

}  // namespace

CompiledStep::CompiledStep(const ExecutionStepDef& s, Workspace* parent_ws, PlanContext& c)
    : step(s), ctx(c), ws(parent_ws) {
  if (step.create_workspace.value_or(false)) {
    parent_generation = parent_ws->chain_generation();
    owned_ws = std::make_unique<Workspace>(parent_ws);
    ws = owned_ws.get();
    inject_workspace_id(*ws, ctx);
  }
  if (!step.substep.empty() && !step.network.empty())
    throw InvalidInput("An ExecutionStep should either have substep or networks but not both.");
  for (const auto& sub : step.substep) {
    auto w = std::make_unique<StepWrapper>(sub, ws, ctx);
    (sub.run_every_ms ? reporters : recurring).push_back(std::move(w));
  }
  for (const auto& name : step.network) nets.push_back(ctx.net(*ws, name, step.name));
  if (step.should_stop_blob) {
    should_stop_blob = ws->get_blob(*step.should_stop_blob);
    if (!should_stop_blob)
      throw InvalidInput(fmt::format("should_stop_blob: blob {} does not exist", *step.should_stop_blob));
    if (step.num_iter) throw InvalidInput("Must not specify num_iter if should_stop_blob is set");
    max_iters = step.only_once.value_or(false) ? 1 : std::numeric_limits<int64_t>::max();
  } else {
    if (step.only_once) throw InvalidInput("only_once is not supported without should_stop_blob");
    max_iters = step.num_iter.value_or(1);
  }
  if (step.report_net) {
    if (!step.report_interval) throw InvalidInput("A report_interval must be provided if report_net is set.");
    report_net = ctx.net(*ws, *step.report_net, step.name);
  }
  if (owned_ws) own_generation = owned_ws->generation();
  const bool concurrent = (step.concurrent_substeps.value_or(false) && step.substep.size() > 1) ||
                          step.num_concurrent_instances.value_or(1) > 1;
  fiber_safe = concurrent && fiber_safe_subtree(step, ctx);
}

bool CompiledStep::recyclable() const {
  return owned_ws && !cancelled.load() && !got_failure.load() && !ctx.abandoned.load() &&
         owned_ws->generation() == own_generation && owned_ws->parent()->chain_generation() == parent_generation;
}

void CompiledStep::recycle() { owned_ws->reset_local_blobs(); }

void CompiledStep::reuse() { inject_workspace_id(*owned_ws, ctx); }

CompiledStep::~CompiledStep() {
  // Substeps and nets live in ws; drop them before a child workspace goes.
  recurring.clear();
  reporters.clear();
}

// Out of line, so that should_stop() (checked after every net) stays small enough to inline.
void CompiledStep::throw_should_stop_not_a_scalar_bool(const Tensor* t) const {
  throw TypeError(fmt::format("should_stop_blob \"{}\" expects a scalar boolean, found {}", *step.should_stop_blob,
                              t ? t->describe() : std::string(should_stop_blob->type_name())));
}

void CompiledStep::fail(std::exception_ptr e) {
  {
    std::lock_guard lk(ex_mu_);
    if (!first_ex_) first_ex_ = std::move(e);
  }
  got_failure.store(true);
  cancel();
}

std::exception_ptr CompiledStep::first_exception() const {
  std::exception_ptr e;
  {
    std::lock_guard lk(ex_mu_);
    e = first_ex_;
  }
  // Concurrent instances of this step each rethrow it: each gets its own copy to add context to.
  return copy_for_rethrow(e);
}

void CompiledStep::cancel() {
  if (cancelled.exchange(true)) return;  // once: operators count and react to every cancel()
  ctx.dirty.store(true);
  for (auto& w : reporters) w->cancel();
  for (auto& w : recurring) w->cancel();
  for (SimpleNet* n : nets) n->cancel();
  if (report_net) report_net->cancel();
}

StepWrapper::StepWrapper(const ExecutionStepDef& step, Workspace* ws, PlanContext& ctx)
    : step_(step), ws_(ws), ctx_(ctx) {
  if (step.stats_key) {  // the registry's cells are stable: looked up once, added to on every execution
    stat_runs_ = &StatRegistry::global().stat(*step.stats_key + "/runs");
    stat_busy_ns_ = &StatRegistry::global().stat(*step.stats_key + "/busy_ns");
  }
  if (!step.create_workspace.value_or(false)) {
    try {
      cached_ = std::make_shared<CompiledStep>(step_, ws_, ctx_);
    } catch (Error& e) {
      e.add_context(describe_step(step_));
      throw;
    }
  }
}

StepWrapper::~StepWrapper() = default;

std::shared_ptr<CompiledStep> StepWrapper::compiled() {
  if (cached_) return cached_;
  std::shared_ptr<CompiledStep> step;
  std::vector<std::shared_ptr<CompiledStep>> stale;  // destroyed outside the lock
  {
    std::lock_guard lk(live_mu_);
    const uint64_t parent_generation = ws_->chain_generation();
    // Entries released in this run stay for the next one (they sit at the back).
    while (!free_.empty() && !step && free_.front()->released_in_run < ctx_.run_id) {
      auto c = std::move(free_.front());
      free_.pop_front();
      if (c->parent_generation == parent_generation && !cancelled_.load())
        step = std::move(c);
      else
        stale.push_back(std::move(c));
    }
  }
  if (step) {
    step->reuse();
  } else {
    step = std::make_shared<CompiledStep>(step_, ws_, ctx_);
  }
  std::lock_guard lk(live_mu_);
  if (cancelled_.load()) step->cancel();
  live_.push_back(step);
  return step;
}

void StepWrapper::release(const std::shared_ptr<CompiledStep>& c) {
  if (c == cached_) return;
  const bool recycle = c->recyclable();
  if (recycle) {
    c->recycle();
    c->released_in_run = ctx_.run_id;
  }
  std::lock_guard lk(live_mu_);
  live_.remove(c);
  if (recycle && !cancelled_.load()) free_.push_back(c);
}

uint32_t StepWrapper::trace_name() {
  uint32_t id = trace_name_.load(std::memory_order_relaxed);
  if (id == UINT32_MAX) [[unlikely]] {
    id = trace_name_id(step_.name.empty() ? std::string_view("(unnamed step)") : std::string_view(step_.name));
    trace_name_.store(id, std::memory_order_relaxed);
  }
  return id;
}

void StepWrapper::cancel() {
  ctx_.dirty.store(true);
  cancelled_.store(true);
  if (cached_) cached_->cancel();
  std::lock_guard lk(live_mu_);
  for (auto& c : live_) c->cancel();
}

}  // namespace moka::detail
