// Plan executor: the step algorithm of Caffe2 §3.6 with concurrent iterations on the worker pool,
// first-error cancellation and a bounded wait for workers that ignore cancellation (§3.7, decision 7).
#include "moka/exec/plan_executor.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <exception>
#include <optional>

#include "exec/compiled_step.h"
#include "exec/reporter.h"
#include "moka/core/error.h"
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
  bool settled(const CompiledStep& c) const {
    return remaining.load() == 0 || failed.load() || c.got_failure.load();
  }
};

bool run_job(CompiledStep& c, std::size_t id) {
  if (c.got_failure.load()) return true;
  try {
    execute(*c.recurring[id]);
    return true;
  } catch (...) {
    c.fail(std::current_exception());
    return false;
  }
}

// §3.7.1: one iteration of a concurrent step — every recurring substep (times
// num_concurrent_instances) at once on pool workers, this thread waiting.
void run_concurrent_iteration(const std::shared_ptr<CompiledStep>& c) {
  const std::size_t n = c->recurring.size();
  const std::size_t instances = static_cast<std::size_t>(std::max(1, c->step.num_concurrent_instances.value_or(1)));
  const std::size_t jobs = n * instances;
  if (jobs == 0) return;
  auto block = std::make_shared<Block>(jobs);
  auto& pool = WorkerPool::global();
  // Every job goes to the pool, none to this thread: a job stuck in an operator that ignores
  // cancellation must not keep this thread from reporting the error after the timeout.
  for (std::size_t j = 0; j < jobs; ++j)
    pool.submit([step = c, block, j, n]() mutable {
      const bool ok = run_job(*step, j % n);
      step.reset();  // drop our reference first, so the last one (and a stored exception) dies in the waiter
      block->finish(ok);
    });

  const auto spin_deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  for (int i = 0; !block->settled(*c); ++i) {
    if ((i & 15) == 15 && std::chrono::steady_clock::now() >= spin_deadline) break;
    std::this_thread::yield();
  }
  std::unique_lock lk(block->mu);
  block->cv.wait(lk, [&] { return block->settled(*c); });
  if (block->remaining.load() != 0) {
    // A failure: siblings were cancelled; give the ones blocked in operators time to return.
    const bool stopped = block->cv.wait_for(lk, c->ctx.options.exception_timeout, [&] { return block->remaining.load() == 0; });
    if (!stopped) {
      c->ctx.abandoned.store(true);
      keep_forever(c);
      throw RuntimeError(fmt::format("failed to stop concurrent workers after exception: {}",
                                     exception_text(c->first_exception())));
    }
  }
  lk.unlock();
  if (auto ex = c->first_exception()) std::rethrow_exception(ex);
}

void run_body(const std::shared_ptr<CompiledStep>& cp) {
  CompiledStep& c = *cp;
  const ExecutionStepDef& step = c.step;
  if (!step.substep.empty()) {
    const bool sequential = (!step.concurrent_substeps.value_or(false) || step.substep.size() <= 1) &&
                            step.num_concurrent_instances.value_or(1) <= 1;
    for (int64_t iter = 0; c.keep_going(iter); ++iter) {
      if (sequential) {
        for (auto& sub : c.recurring) {
          execute(*sub);
          if (c.should_stop() || c.cancelled.load(std::memory_order_relaxed)) return;
        }
      } else {
        run_concurrent_iteration(cp);
        if (c.should_stop()) return;
      }
    }
    return;
  }
  const std::size_t num_nets = c.nets.size();
  SimpleNet* const* nets = c.nets.data();
  for (int64_t iter = 0; c.keep_going(iter); ++iter) {
    for (std::size_t i = 0; i < num_nets; ++i) {
      nets[i]->run();
      if (c.should_stop() || c.cancelled.load(std::memory_order_relaxed)) return;
    }
  }
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

void execute(StepWrapper& w) {
  try {
    execute_inner(w);
  } catch (Error& e) {
    e.add_context(describe_step(w.step()));
    throw;
  } catch (const std::exception& e) {
    RuntimeError wrapped(e.what());
    wrapped.add_context(describe_step(w.step()));
    std::throw_with_nested(wrapped);
  }
}

void run_steps(Workspace& ws, const std::vector<ExecutionStepDef>& steps, const std::vector<NetDef>& nets,
               const RunOptions& options) {
  auto ctx = std::make_shared<PlanContext>(nets, options);
  for (const auto& step : steps) {
    if (ctx->external_stop()) return;
    std::shared_ptr<StepWrapper> wrapper;
    try {
      wrapper = std::make_shared<StepWrapper>(step, &ws, *ctx);
      // Destroyed before the wrapper, so the callback never outlives it.
      auto sub = options.cancel ? options.cancel->subscribe([w = wrapper.get()] { w->cancel(); })
                                : CancelToken::Subscription{};
      execute(*wrapper);
    } catch (...) {
      if (ctx->abandoned.load()) {
        keep_forever(ctx);
        keep_forever(wrapper);
      }
      throw;
    }
  }
}

}  // namespace
}  // namespace detail

void run_plan(Workspace& ws, const PlanDef& plan, const RunOptions& options) {
  if (plan.execution_step.empty()) return;  // Caffe2: "Nothing to run - did you define a correct plan?"
  check_plan(plan);
  detail::run_steps(ws, plan.execution_step, plan.network, options);
}

void run_step(Workspace& ws, const ExecutionStepDef& step, const std::vector<NetDef>& nets,
              const RunOptions& options) {
  PlanDef plan;
  plan.name = step.name;
  plan.network = nets;
  plan.execution_step.push_back(step);
  run_plan(ws, plan, options);
}

}  // namespace moka
