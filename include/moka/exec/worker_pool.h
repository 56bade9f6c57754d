// WorkerPool: persistent threads for concurrent substeps, task instances and reporters — about one
// running job per core, more while jobs wait (BlockingScope) or stall (a watchdog).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "moka/core/blocking.h"

namespace moka::detail {

/// @brief The process-wide pool that runs plan jobs without ever letting waiting jobs starve
/// runnable ones.
///
/// About `parallelism()` jobs (the core count, at least 2) run at once, so 64 tiny jobs do not
/// wake 64 threads. A job that waits inside a BlockingScope (queue operators, reporters between
/// runs, a step waiting for its concurrent substeps) frees its slot: another worker starts the
/// next queued job at once. A job that waits *without* saying so is covered by a watchdog: when
/// jobs are queued and none has started for about a millisecond, one more slot opens, and
/// another each millisecond after — so a job never waits for another job to finish (Caffe2 gave
/// each substep its own thread and pipelines rely on that), at worst it starts a few
/// milliseconds late. A worker that finishes a job polls for new work for a few tens of
/// microseconds (yielding between polls, or pausing while the machine is loaded: see
/// src/core/spin_wait.h), then sleeps; it exits after 30 s without work.
/// Thread-safety: all methods may be called from any thread.
class WorkerPool final : public BlockingObserver {
 public:
  /// The process-wide pool (never destroyed, so detached workers can outlive main()).
  static WorkerPool& global();

  /// Queues job; it starts promptly (see above). The job must not throw.
  void submit(std::function<void()> job);
  /// @brief Queues count jobs `fn(0)` … `fn(count - 1)` at once (one lock, one allocation);
  /// each starts promptly as if submitted alone. fn must not throw; it is destroyed after the
  /// last job returns.
  void submit_batch(std::size_t count, std::function<void(std::size_t)> fn);
  /// @brief submit_batch that can be given up: once `*stop` is true, the next worker to claim an
  /// index claims all that are left and calls `skip(first, n)` once instead of fn for each (so a
  /// cancelled batch of 2·10^9 jobs ends at once). `stop` must outlive the batch's jobs.
  void submit_batch(std::size_t count, std::function<void(std::size_t)> fn, const std::atomic<bool>* stop,
                    std::function<void(std::size_t first, std::size_t n)> skip);
  std::size_t num_threads() const;
  std::size_t num_idle() const;
  /// How many jobs run at once when none waits.
  std::size_t parallelism() const noexcept { return target_; }

  void blocking_begin() noexcept override;
  void blocking_end() noexcept override;

 private:
  WorkerPool();
  void worker_loop();
  void watchdog_loop();
  /// May a worker start a job now? (mu_ held)
  bool can_start() const { return queued_ > 0 && running_ - blocked_ < target_ + boost_; }
  /// Makes sure someone will start a startable job: a spinning or waking worker, a sleeping one
  /// notified, or a new thread. (mu_ held)
  void wake_locked();
  /// After queueing: publishes the count, wakes workers and the watchdog. (mu_ held)
  void submitted_locked();

  mutable std::mutex mu_;
  std::condition_variable cv_;        // sleeping workers
  std::condition_variable watch_cv_;  // the watchdog, while nothing is queued
  // Jobs of one submit_batch: claimed one index at a time; the last job to finish frees it.
  struct Batch {
    std::function<void(std::size_t)> fn;
    const std::atomic<bool>* stop = nullptr;  // see the four-argument submit_batch
    std::function<void(std::size_t, std::size_t)> skip;
    std::size_t count = 0;
    std::size_t next = 0;  // next index to claim (mu_ held)
    std::atomic<std::size_t> unfinished{0};
  };
  struct Entry {
    std::function<void()> single;
    Batch* batch = nullptr;
  };
  std::deque<Entry> queue_;
  std::size_t queued_ = 0;               // jobs not started yet (a batch counts each index)
  std::atomic<std::size_t> pending_{0};  // == queued_, readable without the lock
  const std::size_t target_;
  std::size_t running_ = 0;   // workers inside a job
  std::size_t blocked_ = 0;   // ... of which inside a BlockingScope
  std::size_t boost_ = 0;     // extra slots opened by the watchdog since the queue last drained
  std::size_t idle_ = 0;      // workers asleep on cv_
  std::size_t spinning_ = 0;  // workers polling pending_
  std::size_t notified_ = 0;  // notifications not yet taken by a waking worker
  std::size_t starting_ = 0;  // threads created, not yet looking at the queue
  std::size_t threads_ = 0;
  uint64_t started_ = 0;  // jobs started so far (the watchdog's measure of progress)
  bool watchdog_running_ = false;
  bool watchdog_asleep_ = false;
};

}  // namespace moka::detail
