// AtomicMutex: a mutex in one atomic word, for locks taken once per batch (dataset cursors and writers).
#pragma once

#include <atomic>
#include <cstdint>

namespace moka {

/// @brief A non-recursive mutex whose uncontended lock and unlock are one atomic instruction each.
///
/// std::mutex goes through glibc's pthread_mutex_lock/unlock, about 100 instructions per pair even
/// when nobody else holds it; a pipe's reader and writer lock once per batch each. The state is
/// 0 (free), 1 (held) or 2 (held, maybe with waiters); a waiter sleeps in std::atomic::wait (a
/// futex on Linux) after a short spin, and unlock wakes one only when the state said 2 (Drepper,
/// "Futexes Are Tricky", mutex 3). Meets the Lockable requirements (std::lock_guard, std::unique_lock).
/// Not fair. Like std::mutex it must not be held across a fiber's yield: a sibling fiber locking it
/// on the same thread would wait for ever.
/// Thread-safety: lock/unlock/try_lock may be called concurrently.
class AtomicMutex {
 public:
  AtomicMutex() = default;
  AtomicMutex(const AtomicMutex&) = delete;
  AtomicMutex& operator=(const AtomicMutex&) = delete;

  void lock() noexcept {
    uint32_t free = 0;
    if (!state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed)) lock_slow();
  }
  bool try_lock() noexcept {
    uint32_t free = 0;
    return state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  // Spins briefly, then marks the mutex contended and sleeps until it is free.
  void lock_slow() noexcept {
    for (int i = 0; i < 64; ++i) {
      uint32_t free = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(free, 1, std::memory_order_acquire, std::memory_order_relaxed))
        return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    // From here on the state says 2 whenever we hold or wait, so unlock wakes the next waiter.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  std::atomic<uint32_t> state_{0};
};

}  // namespace moka
