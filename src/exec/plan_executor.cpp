// Plan executor: Caffe2's step algorithm with concurrent iterations on the worker pool, first-error cancellation
// and a bounded wait for workers that ignore cancellation (docs/plan-execution.md §2.5–§3.3; decisions 7 and 12).
#include "moka/exec/plan_executor.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <optional>
#include <thread>

#include "core/spin_wait.h"
#include "exec/compiled_step.h"
#include "exec/fiber.h"
#include "exec/reporter.h"
#include "exec/usable_cpus.h"
#include "moka/core/error.h"
#include "moka/exec/prepared_plan.h"
#include "moka/exec/trace_file.h"
#include "moka/exec/worker_pool.h"

namespace moka {

namespace detail {
namespace {

std::string exception_text(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

void execute(StepWrapper& w);

// Completion of one concurrent iteration: counts finished jobs and wakes the waiting thread on
// completion or on the first failure. The waiter polls briefly before sleeping, since jobs of
// one Add finish in microseconds.
struct Block {
  explicit Block(std::size_t jobs) : remaining(jobs) {}
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<std::size_t> remaining;
  std::atomic<bool> failed{false};

  void finish(bool ok) {
    if (!ok) failed.store(true);
    if (remaining.fetch_sub(1) == 1 || !ok) {
      std::lock_guard lk(mu);
      cv.notify_all();
    }
  }
  void finish_many(std::size_t n) {
    if (remaining.fetch_sub(n) == n) {
      std::lock_guard lk(mu);
      cv.notify_all();
    }
  }
  bool settled(const CompiledStep& c) const { return remaining.load() == 0 || failed.load() || c.got_failure.load(); }
};

bool run_job(CompiledStep& c, std::size_t id) {
  // After a failure or a cancellation the jobs not started yet end at once: an iteration of
  // num_concurrent_instances 2·10^9 must not run each of them to find out.
  if (c.got_failure.load() || c.cancelled.load(std::memory_order_relaxed)) return true;
  try {
    execute(*c.recurring[id]);
    return true;
  } catch (...) {
    c.fail(std::current_exception());
    return false;
  }
}

// The jobs of one concurrent iteration: every recurring substep times num_concurrent_instances
// (job j runs substep j % recurring.size()).
std::size_t concurrent_jobs(const CompiledStep& c) {
  return c.recurring.size() * static_cast<std::size_t>(std::max(1, c.step.num_concurrent_instances.value_or(1)));
}

// docs/plan-execution.md §3.1: one iteration of a concurrent step — every recurring substep (times
// num_concurrent_instances) at once on pool workers, this thread waiting.
void run_concurrent_iteration(const std::shared_ptr<CompiledStep>& c) {
  const std::size_t n = c->recurring.size();
  const std::size_t jobs = concurrent_jobs(*c);
  if (jobs == 0) return;
  auto block = std::make_shared<Block>(jobs);
  // Every job goes to the pool, none to this thread: a job stuck in an operator that ignores
  // cancellation must not keep this thread from reporting the error after the timeout. Jobs
  // reach the step through a raw pointer — this thread keeps c alive until every job has called
  // finish() (or forever, when it gives up on a stuck one), so its last reference dies here — but
  // share the Block: finish() still uses it after the waiter may have woken and returned.
  // Once the step is cancelled (an error, or from outside) the jobs not started yet are skipped in
  // one go: a num_concurrent_instances of 2·10^9 ends within the pool's next claim.
  WorkerPool::global().submit_batch(
      jobs, [step = c.get(), block, n](std::size_t j) { block->finish(run_job(*step, j % n)); }, &c->cancelled,
      [block](std::size_t, std::size_t skipped) { block->finish_many(skipped); });

  BlockingScope blocking;  // on a pool worker: let the queued substeps run meanwhile
  spin_yield_until(std::chrono::microseconds(50), [&] { return block->settled(*c); });
  std::unique_lock lk(block->mu);
  block->cv.wait(lk, [&] { return block->settled(*c); });
  if (block->remaining.load() != 0) {
    // A failure: siblings were cancelled; give the ones blocked in operators time to return.
    const bool stopped =
        block->cv.wait_for(lk, c->ctx.options.exception_timeout, [&] { return block->remaining.load() == 0; });
    if (!stopped) {
      c->ctx.abandoned.store(true);
      keep_forever(c);
      throw RuntimeError(
          fmt::format("failed to stop concurrent workers after exception: {}", exception_text(c->first_exception())));
    }
  }
  lk.unlock();
  if (auto ex = c->first_exception()) std::rethrow_exception(ex);
}

// One iteration of a concurrent step with Concurrency::fibers: the same jobs, as fibers on this thread.
// Jobs end on their own after a failure (run_job cancelled the siblings, which closes their queues),
// so no job can be stuck and there is no timeout to wait out.
void run_concurrent_iteration_on_fibers(CompiledStep& c) {
  const std::size_t n = c.recurring.size();
  run_on_fibers(concurrent_jobs(c), [&c, n](std::size_t j) { (void)run_job(c, j % n); });
  if (auto ex = c.first_exception()) std::rethrow_exception(ex);
}

// Whether a fiber-safe concurrent step starting now on this thread runs on fibers.
bool runs_on_fibers(Concurrency c) {
  switch (c) {
    case Concurrency::threads:
      return false;
    case Concurrency::fibers:
      return true;
    case Concurrency::automatic:
      return usable_cpus() == 1;
  }
  return false;
}

// The nets of a step without substeps, num_iter times or until should_stop; kTraced: each a trace span.
template <bool kTraced>
void run_nets(CompiledStep& c) {
  const std::size_t num_nets = c.nets.size();
  SimpleNet* const* nets = c.nets.data();
  for (int64_t iter = 0; c.keep_going(iter); ++iter) {
    for (std::size_t i = 0; i < num_nets; ++i) {
      if constexpr (kTraced)
        nets[i]->run_ops_traced();
      else
        nets[i]->run_ops();
      if (c.should_stop() || c.cancelled.load(std::memory_order_relaxed)) return;
    }
    // In a fiber: let the siblings run once a turn is over. Once per iteration, not per net: an
    // iteration's nets are bounded, and a pipe's iteration (one batch) runs nine of them.
    preempt_point();
  }
}

void run_body(const std::shared_ptr<CompiledStep>& cp) {
  CompiledStep& c = *cp;
  const ExecutionStepDef& step = c.step;
  if (!step.substep.empty()) {
    const bool sequential = (!step.concurrent_substeps.value_or(false) || step.substep.size() <= 1) &&
                            step.num_concurrent_instances.value_or(1) <= 1;
    // Decided once per run of the step (Concurrency::automatic reads the CPUs this thread may use).
    const bool on_fibers =
        !sequential && c.fiber_safe && concurrent_jobs(c) <= kMaxFiberJobs && runs_on_fibers(c.ctx.options.concurrency);
    for (int64_t iter = 0; c.keep_going(iter); ++iter) {
      if (sequential) {
        for (auto& sub : c.recurring) {
          execute(*sub);
          if (c.should_stop() || c.cancelled.load(std::memory_order_relaxed)) return;
          preempt_point();
        }
      } else {
        if (on_fibers)
          run_concurrent_iteration_on_fibers(c);
        else
          run_concurrent_iteration(cp);
        if (c.should_stop()) return;
      }
    }
    return;
  }
  // Decided once per step run; the untraced loop is the same code as without tracing (docs/tracing.md §3).
  if (trace_enabled(TraceLevel::nets)) [[unlikely]]
    run_nets<true>(c);
  else
    run_nets<false>(c);
}

void start_reporters(CompiledStep& c, Reporter& reporter) {
  if (c.report_net) {
    SimpleNet* net = c.report_net;
    reporter.start(std::chrono::milliseconds(int64_t{*c.step.report_interval} * 1000), [net] { net->run(); });
  }
  for (auto& rs : c.reporters) {
    StepWrapper* w = rs.get();
    reporter.start(std::chrono::milliseconds(*w->step().run_every_ms), [w] { execute(*w); });
  }
}

void execute_inner(StepWrapper& w) {
  std::shared_ptr<CompiledStep> c = w.compiled();
  struct Release {
    StepWrapper& w;
    std::shared_ptr<CompiledStep>& c;
    ~Release() {
      if (c->ctx.abandoned.load()) keep_forever(c);  // a stuck worker may still use it
      w.release(c);
    }
  } release{w, c};

  std::exception_ptr body_error;
  {
    std::optional<Reporter> reporter;  // most steps have none: no allocation for them
    if (c->report_net || !c->reporters.empty()) start_reporters(*c, reporter.emplace(*c));
    try {
      run_body(c);
    } catch (...) {
      body_error = std::current_exception();
      c->got_failure.store(true);
      if (!c->ctx.abandoned.load()) c->cancel();  // wake reporters blocked in operators
    }
  }  // reporters stop here: their final run comes after the body
  if (body_error) std::rethrow_exception(body_error);
  if (auto ex = c->first_exception()) std::rethrow_exception(ex);
}

// A step with a stats_key counts its executions and their wall time, failed ones included (decision 69).
class StepStatsScope {
 public:
  explicit StepStatsScope(StepWrapper& w) : w_(w), begin_(std::chrono::steady_clock::now()) {}
  ~StepStatsScope() {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin_).count();
    w_.stat_busy_ns()->fetch_add(static_cast<int64_t>(ns), std::memory_order_relaxed);
    w_.stat_runs()->fetch_add(1, std::memory_order_relaxed);
  }
  StepStatsScope(const StepStatsScope&) = delete;
  StepStatsScope& operator=(const StepStatsScope&) = delete;

 private:
  StepWrapper& w_;
  std::chrono::steady_clock::time_point begin_;
};

inline void execute_traced(StepWrapper& w) {
  if (trace_enabled()) [[unlikely]] {
    TraceNodeScope node(w.context().trace_node);
    TraceSpan span(TraceCategory::step, w.trace_name());
    execute_inner(w);
    return;
  }
  execute_inner(w);
}

void execute(StepWrapper& w) {
  try {
    if (w.stat_runs() != nullptr) [[unlikely]] {
      const StepStatsScope stats(w);
      execute_traced(w);
    } else {
      execute_traced(w);
    }
  } catch (Error& e) {
    e.add_context(describe_step(w.step()));
    throw;
  } catch (const std::exception& e) {
    RuntimeError wrapped(e.what());
    wrapped.add_context(describe_step(w.step()));
    std::throw_with_nested(wrapped);
  }
}

// What a plan run keeps: the context and top-level step wrappers (with their instantiated nets),
// reusable by the next run when the run ended cleanly, the workspace chain has the same blobs and
// the nets the plan registered in its workspace are still there.
struct RunState {
  RunState(Workspace& w, const PlanDef& p) : ws(w), plan(p) {}
  Workspace& ws;
  const PlanDef& plan;
  std::shared_ptr<PlanContext> ctx;
  std::vector<std::shared_ptr<StepWrapper>> wrappers;  // destroyed before ctx (they refer to it)
  bool reusable = false;
  uint64_t generation_after = 0;
  int64_t instantiations = 0;
  bool abandoned = false;  // some run left a stuck worker behind

  void drop() {
    wrappers.clear();
    ctx.reset();
  }
};

void run_steps(RunState& st, const RunOptions& options) {
  const bool reuse = st.reusable && st.ws.chain_generation() == st.generation_after && st.ctx->plan_ws_nets_intact();
  st.reusable = false;
  if (reuse) {
    st.ctx->options = options;
    st.ctx->workspace_seq.store(0);
    st.ctx->created.clear();
    ++st.ctx->run_id;
  } else {
    trace_start_from_environment();  // MOKA_TRACE: the first plan run of the process starts the trace
    st.drop();
    st.ctx = std::make_shared<PlanContext>(st.plan.network, options);
    st.ctx->plan_ws = &st.ws;
    ++st.instantiations;
  }
  PlanContext& ctx = *st.ctx;
  ctx.trace_node = trace_current_node_track();  // this run's node (the context may be an earlier run's)
  const auto& steps = st.plan.execution_step;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (ctx.external_stop()) return;
    try {
      // Each top-level step is instantiated just before it first runs (docs/plan-execution.md §2.1).
      if (i == st.wrappers.size()) st.wrappers.push_back(std::make_shared<StepWrapper>(steps[i], &st.ws, ctx));
      StepWrapper* wrapper = st.wrappers[i].get();
      // Destroyed before the wrapper, so the callback never outlives it.
      auto sub =
          options.cancel ? options.cancel->subscribe([wrapper] { wrapper->cancel(); }) : CancelToken::Subscription{};
      execute(*wrapper);
    } catch (...) {
      if (ctx.abandoned.load()) {
        st.abandoned = true;
        keep_forever(st.ctx);
        for (auto& w : st.wrappers) keep_forever(w);
      }
      st.drop();
      throw;
    }
  }
  if (ctx.dirty.load() || ctx.external_stop()) return;
  st.reusable = true;
  st.generation_after = st.ws.chain_generation();
}

}  // namespace
}  // namespace detail

void run_plan(Workspace& ws, const PlanDef& plan, const RunOptions& options) {
  if (plan.execution_step.empty()) return;  // Caffe2: "Nothing to run - did you define a correct plan?"
  check_plan(plan);
  detail::RunState st(ws, plan);
  detail::run_steps(st, options);
}

namespace detail {
// Holds `busy` for one call of a PreparedPlan; a call that finds it held throws InvalidInput(message()).
class OneAtATime {
 public:
  template <class Message>
  OneAtATime(std::atomic<bool>& busy, Message message) : busy_(busy) {
    if (busy_.exchange(true)) throw InvalidInput(message());
  }
  ~OneAtATime() { busy_.store(false); }
  OneAtATime(const OneAtATime&) = delete;
  OneAtATime& operator=(const OneAtATime&) = delete;

 private:
  std::atomic<bool>& busy_;
};

struct PreparedState {
  PreparedState(Workspace& ws, PlanDef p) : plan(std::make_shared<const PlanDef>(std::move(p))), run(ws, *plan) {}
  ~PreparedState() {
    if (run.abandoned) keep_forever(plan);  // a stuck worker may still read it
  }
  std::shared_ptr<const PlanDef> plan;
  RunState run;
  std::atomic<bool> running{false};
};
}  // namespace detail

PreparedPlan::PreparedPlan(Workspace& ws, PlanDef plan) {
  check_plan(plan);
  state_ = std::make_unique<detail::PreparedState>(ws, std::move(plan));
}

PreparedPlan::~PreparedPlan() = default;

void PreparedPlan::run(const RunOptions& options) {
  if (state_->plan->execution_step.empty()) return;
  detail::OneAtATime busy(state_->running, [&] {
    return fmt::format("plan \"{}\" is already running; a PreparedPlan runs one run at a time", state_->plan->name);
  });
  detail::run_steps(state_->run, options);
}

void PreparedPlan::unregister_nets() {
  detail::OneAtATime busy(state_->running, [&] {
    return fmt::format("plan \"{}\" is running: its nets cannot be unregistered now", state_->plan->name);
  });
  detail::RunState& st = state_->run;
  if (!st.ctx || st.abandoned) return;  // abandoned: a stuck worker may still be inside them
  const auto own = std::move(st.ctx->plan_ws_nets);
  st.drop();
  st.reusable = false;
  for (const auto& [name, serial] : own) {
    const NetBase* n = st.ws.get_net(name);
    if (n != nullptr && n->serial() == serial) st.ws.remove_net(name);
  }
}

const PlanDef& PreparedPlan::plan() const noexcept { return *state_->plan; }
Workspace& PreparedPlan::workspace() const noexcept { return state_->run.ws; }
int64_t PreparedPlan::num_instantiations() const noexcept { return state_->run.instantiations; }

void run_step(Workspace& ws, const ExecutionStepDef& step, const std::vector<NetDef>& nets, const RunOptions& options) {
  PlanDef plan;
  plan.name = step.name;
  plan.network = nets;
  plan.execution_step.push_back(step);
  run_plan(ws, plan, options);
}

}  // namespace moka
