// Counter: the atomic int64 counter CreateCounter puts in a blob (Caffe2's Counter<int64_t>; docs/operators.md §2).
#pragma once

#include <atomic>
#include <cstdint>

namespace moka {

/// @brief An atomic count shared by the counter operators (CountDown, CountUp, ...).
///
/// @code
///   Counter c(2);
///   c.count_down();   // false (2 -> 1)
///   c.count_down();   // false (1 -> 0)
///   c.count_down();   // true  (0 -> -1): keeps decrementing below zero, as Caffe2 does
/// @endcode
/// Thread-safety: every method may be called concurrently; each is one atomic operation.
/// Arithmetic wraps at the int64 limits (std::atomic arithmetic is defined to wrap).
class Counter {
 public:
  explicit Counter(int64_t init_count = 0) noexcept : count_(init_count) {}
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  /// @brief Sets the count to init_count; returns the previous count.
  int64_t reset(int64_t init_count = 0) noexcept { return count_.exchange(init_count); }
  /// @brief Decrements; true when the count was already <= 0 before (i.e. the counter is done).
  bool count_down() noexcept { return !(count_.fetch_sub(1) > 0); }
  /// @brief Increments; returns the previous count.
  int64_t count_up() noexcept { return count_.fetch_add(1); }
  /// @brief The current count.
  int64_t retrieve() const noexcept { return count_.load(); }
  /// @brief True when the count is <= 0.
  bool check_done() const noexcept { return count_.load() <= 0; }

 private:
  std::atomic<int64_t> count_;
};

}  // namespace moka
