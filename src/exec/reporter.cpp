// Reporter: periodic loops on pool workers with a guaranteed final run after the step's body finished.
#include "exec/reporter.h"

#include "exec/compiled_step.h"
#include "moka/exec/worker_pool.h"

namespace moka::detail {

void Reporter::start(std::chrono::milliseconds interval, std::function<void()> fn) {
  {
    std::lock_guard lk(state_->mu);
    ++state_->running;
  }
  auto state = state_;
  CompiledStep* owner = &owner_;
  WorkerPool::global().submit([state, owner, interval, fn = std::move(fn)] {
    auto run_once = [&]() -> bool {
      try {
        fn();
        return true;
      } catch (...) {
        owner->fail(std::current_exception());
        return false;
      }
    };
    bool ok = true;
    {
      std::unique_lock lk(state->mu);
      for (;;) {
        bool done;
        {
          BlockingScope blocking;  // asleep between runs: not a running job
          done = state->cv.wait_for(lk, interval, [&] { return state->done; });
        }
        if (done) break;
        lk.unlock();
        ok = run_once();
        lk.lock();
        if (!ok) break;
      }
    }
    if (ok) run_once();  // the final run: started after done was set, i.e. after the body finished
    std::lock_guard lk(state->mu);
    --state->running;
    state->cv.notify_all();
  });
}

void Reporter::stop() noexcept {
  BlockingScope blocking;
  std::unique_lock lk(state_->mu);
  state_->done = true;
  state_->cv.notify_all();
  state_->cv.wait(lk, [&] { return state_->running == 0; });
}

}  // namespace moka::detail
