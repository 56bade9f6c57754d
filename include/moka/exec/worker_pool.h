// WorkerPool: persistent threads for concurrent substeps, task instances and reporters; grows when all are busy.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace moka::detail {

/// @brief A pool of worker threads that never makes a job wait for another job.
///
/// submit() hands the job to an idle worker, or starts a new thread when none is idle, so a job
/// that blocks (a queue wait, a reporter sleeping between runs) never starves its siblings —
/// Caffe2 gave each substep its own thread and pipelines rely on that. A worker that finishes a
/// job first polls for new work for a few tens of microseconds (yielding the CPU between polls:
/// iterative plans hand out the next iteration's jobs within microseconds, and a futex wake-up
/// costs more than that), then sleeps on a condition variable; it exits after 30 s without work. Threads are created per
/// *concurrency*, not per iteration: a plan that runs 8 concurrent substeps 10^4 times reuses
/// the same 7 workers.
/// Thread-safety: all methods may be called from any thread.
class WorkerPool {
 public:
  /// The process-wide pool (never destroyed, so detached workers can outlive main()).
  static WorkerPool& global();

  /// Runs job on some worker thread, promptly. The job must not throw.
  void submit(std::function<void()> job);
  std::size_t num_threads() const;
  std::size_t num_idle() const;

 private:
  WorkerPool() = default;
  void worker_loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<std::size_t> pending_{0};  // == queue_.size(), readable without the lock
  std::size_t idle_ = 0;                 // workers asleep on cv_
  std::size_t spinning_ = 0;             // workers polling pending_
  std::size_t threads_ = 0;
};

}  // namespace moka::detail
