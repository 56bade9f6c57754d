// WorkerPool: bounded running jobs, extra slots for jobs that wait (BlockingScope) or stall
// (watchdog), short polling before sleeping, idle exit.
#include "moka/exec/worker_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "moka/core/trace.h"

#include "core/spin_wait.h"

namespace moka::detail {

namespace {
constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kWatchdogTick = std::chrono::milliseconds(1);
constexpr int kWatchdogIdleTicks = 100;  // then it sleeps until the next submit
}  // namespace

WorkerPool& WorkerPool::global() {
  static WorkerPool* pool = new WorkerPool();
  return *pool;
}

WorkerPool::WorkerPool() : target_(std::max<std::size_t>(2, std::thread::hardware_concurrency())) {}

void WorkerPool::wake_locked() {
  if (!can_start()) return;
  const std::size_t slots = target_ + boost_ + blocked_ - running_;
  const std::size_t startable = std::min(queued_, slots);
  if (spinning_ + notified_ + starting_ >= startable) return;  // enough workers are about to look
  if (idle_ > notified_) {
    ++notified_;
    cv_.notify_one();
  } else {
    ++threads_;
    ++starting_;
    std::thread([this] { worker_loop(); }).detach();
  }
}

void WorkerPool::submit(std::function<void()> job) {
  std::lock_guard lk(mu_);
  queue_.push_back(Entry{std::move(job), nullptr});
  ++queued_;
  submitted_locked();
}

void WorkerPool::submit_batch(std::size_t count, std::function<void(std::size_t)> fn) {
  submit_batch(count, std::move(fn), nullptr, {});
}

void WorkerPool::submit_batch(std::size_t count, std::function<void(std::size_t)> fn, const std::atomic<bool>* stop,
                              std::function<void(std::size_t, std::size_t)> skip) {
  if (count == 0) return;
  auto* batch = new Batch;
  batch->fn = std::move(fn);
  batch->stop = stop;
  batch->skip = std::move(skip);
  batch->count = count;
  batch->unfinished.store(count, std::memory_order_relaxed);
  std::lock_guard lk(mu_);
  queue_.push_back(Entry{{}, batch});
  queued_ += count;
  submitted_locked();
}

void WorkerPool::submitted_locked() {
  pending_.store(queued_, std::memory_order_release);
  wake_locked();
  if (!watchdog_running_) {
    watchdog_running_ = true;
    std::thread([this] { watchdog_loop(); }).detach();
  } else if (watchdog_asleep_) {
    watchdog_asleep_ = false;
    watch_cv_.notify_one();
  }
}

void WorkerPool::blocking_begin() noexcept {
  std::lock_guard lk(mu_);
  ++blocked_;
  wake_locked();
}

void WorkerPool::blocking_end() noexcept {
  std::lock_guard lk(mu_);
  --blocked_;
}

void WorkerPool::worker_loop() {
  t_blocking_observer = this;
  static std::atomic<int> workers_started{0};
  trace_set_thread_name(fmt::format("worker {}", workers_started.fetch_add(1, std::memory_order_relaxed) + 1));
  std::unique_lock lk(mu_);
  --starting_;
  for (;;) {
    if (can_start()) {
      Entry& front = queue_.front();
      std::function<void()> job;
      Batch* batch = front.batch;
      std::size_t index = 0;
      std::size_t claimed = 1;
      if (batch) {
        index = batch->next++;
        if (batch->stop && batch->stop->load(std::memory_order_relaxed)) {
          claimed = batch->count - index;  // given up: this worker takes the rest at once
          batch->next = batch->count;
        }
        if (batch->next == batch->count) queue_.pop_front();
      } else {
        job = std::move(front.single);
        queue_.pop_front();
      }
      queued_ -= claimed;
      pending_.store(queued_, std::memory_order_release);
      ++running_;
      ++started_;
      if (queued_ == 0) boost_ = 0;
      wake_locked();  // more startable jobs: hand them to other workers now
      lk.unlock();
      if (batch) {
        if (claimed == 1 && !(batch->stop && batch->stop->load(std::memory_order_relaxed)))
          batch->fn(index);
        else
          batch->skip(index, claimed);
        if (batch->unfinished.fetch_sub(claimed, std::memory_order_acq_rel) == claimed) delete batch;
      } else {
        job();
        job = nullptr;  // destroy captures outside the lock
      }
      lk.lock();
      --running_;
      continue;
    }
    ++spinning_;
    lk.unlock();
    spin_yield_until(kSpinTime, [&] { return pending_.load(std::memory_order_acquire) != 0; });
    lk.lock();
    --spinning_;
    if (can_start()) continue;
    ++idle_;
    // A notification is a token: whoever wakes takes one (if any is left), so the count of
    // workers about to look at the queue stays exact even with spurious wake-ups.
    const bool woke = cv_.wait_for(lk, kIdleTimeout, [this] { return notified_ > 0 || can_start(); });
    --idle_;
    if (notified_ > 0) --notified_;
    if (!woke && !can_start()) {
      --threads_;
      return;
    }
  }
}

void WorkerPool::watchdog_loop() {
  std::unique_lock lk(mu_);
  int idle_ticks = 0;
  for (;;) {
    if (queued_ == 0 && idle_ticks >= kWatchdogIdleTicks) {
      watchdog_asleep_ = true;
      watch_cv_.wait(lk, [this] { return !watchdog_asleep_; });
      idle_ticks = 0;
    }
    const uint64_t started_before = started_;
    const bool had_queue = queued_ > 0;
    watch_cv_.wait_for(lk, kWatchdogTick);
    if (queued_ == 0) {
      ++idle_ticks;
      continue;
    }
    idle_ticks = 0;
    if (had_queue && started_ == started_before) {
      // Queued work but nothing started for a tick: the running jobs are probably waiting
      // without a BlockingScope. Open one more slot.
      ++boost_;
      wake_locked();
    }
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
