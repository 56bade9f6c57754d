// FutexMutex: a mutex whose uncontended lock and unlock are one atomic instruction each, for locks
// taken once per batch on a pipe's hot path (the dataset cursor, the writer's CreateMutex).
#pragma once

#include <atomic>

namespace moka {

/// @brief A non-recursive mutex on one atomic word (0 free, 1 held, 2 held with waiters); waiters
/// block in std::atomic::wait (a futex on Linux). Meets the Lockable requirements.
///
/// Why not std::mutex: an uncontended std::mutex lock/unlock pair calls into pthread, about 45
/// instructions against about 10 here, and the pipe's per-batch path takes two of them.
/// Contended, it behaves as std::mutex does: a waiter sleeps until an unlock wakes one waiter.
/// Not fair, as std::mutex is not. Thread-safety: lock/unlock/try_lock may be called concurrently.
class FutexMutex {
 public:
  FutexMutex() noexcept = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() noexcept {
    int expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
      lock_contended(expected);
  }
  bool try_lock() noexcept {
    int expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  // Marks the lock as having waiters (2) and sleeps until an unlock frees it; whoever takes it
  // from here keeps the mark, so its unlock wakes the next waiter (at worst one wake too many).
  void lock_contended(int seen) noexcept {
    if (seen != 2) seen = state_.exchange(2, std::memory_order_acquire);
    while (seen != 0) {
      state_.wait(2, std::memory_order_relaxed);
      seen = state_.exchange(2, std::memory_order_acquire);
    }
  }

  std::atomic<int> state_{0};
};

}  // namespace moka
