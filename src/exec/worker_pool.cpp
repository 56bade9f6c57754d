// WorkerPool: job hand-off to idle workers, growth when none is idle, idle exit.
#include "moka/exec/worker_pool.h"

#include <chrono>
#include <thread>

namespace moka::detail {

namespace {
constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr auto kSpinTime = std::chrono::microseconds(50);
}

static bool spin_until(const std::atomic<std::size_t>& pending) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (pending.load(std::memory_order_acquire) != 0) return true;
    if ((i & 15) == 15 && std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
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
    pending_.store(queue_.size(), std::memory_order_release);
    // Every queued job needs its own worker now. Spinning workers take one job each without a
    // wake-up; sleeping ones that were notified but have not woken yet are still counted in
    // idle_, and each of them takes exactly one job too.
    if (spinning_ + idle_ >= queue_.size()) {
      if (queue_.size() > spinning_) cv_.notify_one();
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
      ++spinning_;
      lk.unlock();
      spin_until(pending_);
      lk.lock();
      --spinning_;
    }
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
    pending_.store(queue_.size(), std::memory_order_release);
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
