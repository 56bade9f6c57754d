// WorkerPool: job hand-off to idle workers, growth when none is idle, idle exit.
#include "moka/exec/worker_pool.h"

#include <chrono>
#include <thread>

namespace moka::detail {

namespace {
constexpr auto kIdleTimeout = std::chrono::seconds(30);
}

WorkerPool& WorkerPool::global() {
  static WorkerPool* pool = new WorkerPool();
  return *pool;
}

void WorkerPool::submit(std::function<void()> job) {
  bool spawn = false;
  {
    std::lock_guard lk(mu_);
    queue_.push_back(std::move(job));
    // Every queued job needs its own worker now: idle workers that were already notified but
    // have not woken up yet are still counted in idle_, and each takes exactly one job.
    if (idle_ >= queue_.size()) {
      cv_.notify_one();
    } else {
      spawn = true;
      ++threads_;
    }
  }
  if (spawn) std::thread([this] { worker_loop(); }).detach();
}

void WorkerPool::worker_loop() {
  std::unique_lock lk(mu_);
  for (;;) {
    if (queue_.empty()) {
      ++idle_;
      const bool got = cv_.wait_for(lk, kIdleTimeout, [this] { return !queue_.empty(); });
      --idle_;
      if (!got) {
        --threads_;
        return;
      }
    }
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    job();
    job = nullptr;  // destroy captures outside the lock
    lk.lock();
  }
}

std::size_t WorkerPool::num_threads() const {
  std::lock_guard lk(mu_);
  return threads_;
}

std::size_t WorkerPool::num_idle() const {
  std::lock_guard lk(mu_);
  return idle_;
}

}  // namespace moka::detail
