// Timer: the stopwatch TimerBegin puts in a blob, which owns it (Caffe2's TimerInstance; docs/operators.md §3).
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "moka/operators/stats.h"

namespace moka {

/// @brief A named stopwatch. end() publishes the elapsed time to StatRegistry::global():
/// `<counter_name>` += elapsed ns and `<counter_name>/count` += 1.
///
/// The blob owns the Timer (unlike Caffe2, where the blob pointed into the TimerBegin operator
/// and dangled once the net was destroyed).
///
/// @code
///   Timer t("epoch_time");
///   t.begin();
///   int64_t ns = t.get_ns();   // elapsed so far
///   t.end();                   // publishes to the stat registry
/// @endcode
/// Thread-safety: begin(), end() and get_and_end() (and try_begin(), try_stop()) are for one thread
/// at a time — the timer's owner (a pipe thread's TimerBegin/TimerEnd; each pipe thread has its own
/// timer blob); get_ns(), try_get_ns(), running() and the published stats may be read from any thread. The state is one
/// atomic word (the start time, or "stopped") that begin/end load and store without a read-modify-write, so they cost
/// a clock read and, for end(), two plain adds to the timer's own StatShares of the stats (a locked
/// add there cost as much as the rest of the timer): a pipe's `_pipe_step` runs TimerBegin/TimerEnd
/// once per batch on every thread.
// alignas(64): begin/end store to one atomic word, cheap only while the line stays with the
// thread that times; a neighbour on the heap written by another thread would bounce it.
class alignas(64) Timer {
 public:
  /// @brief A stopped timer publishing under `counter_name`.
  /// @param coarse read CLOCK_MONOTONIC_COARSE (a few ns, but ticking only every 1–10 ms, kernel
  /// dependent) instead of steady_clock (tens of ns in a VM). For timers run once per batch in hot
  /// loops (a pipe's `_pipe_step`): each interval reads its length to within one tick (a short one
  /// usually 0), and a tick lands inside an interval with probability proportional to its length,
  /// so totals over many intervals are unbiased estimates, noisy when intervals are much shorter
  /// than a tick and separated by untimed gaps.
  explicit Timer(std::string counter_name, bool coarse = false);
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  static constexpr const char* kAlreadyRunning = "Called TimerBegin on an already running timer.";
  static constexpr const char* kEndStopped = "Called TimerEnd on a stopped timer.";
  static constexpr const char* kGetStopped = "Called TimerGet on a stopped timer.";

  /// @brief Starts; RuntimeError kAlreadyRunning if running.
  void begin();
  /// @brief Starts and returns true, or returns false (changing nothing) if running. Inline: the
  /// operators call it once per batch.
  bool try_begin() noexcept {
    if (start_ns_.load(std::memory_order_relaxed) != kStopped) return false;
    start_ns_.store(now_ns(), std::memory_order_release);
    return true;
  }
  /// @brief Stops and publishes; returns the elapsed ns. RuntimeError kEndStopped if stopped.
  int64_t end();
  /// @brief Stops, publishes and sets `ns` to the elapsed ns; false (changing nothing) if stopped.
  bool try_stop(int64_t& ns) noexcept {
    const int64_t now = now_ns();
    const int64_t start = start_ns_.load(std::memory_order_relaxed);
    if (start == kStopped) return false;
    start_ns_.store(kStopped, std::memory_order_release);
    ns = now - start;
    // Plain adds to this timer's shares (only the owner stops it); readers of the stats count them.
    if (ns != 0) total_ns_.add(ns);
    count_.add(1);
    return true;
  }
  /// @brief Nanoseconds since begin(); RuntimeError kGetStopped if stopped.
  int64_t get_ns() const;
  /// @brief Sets `ns` to the nanoseconds since begin(); false (leaving it) if stopped.
  bool try_get_ns(int64_t& ns) const noexcept {
    const int64_t start = start_ns_.load(std::memory_order_acquire);
    if (start == kStopped) return false;
    ns = now_ns() - start;
    return true;
  }
  /// @brief Atomically reads the elapsed time and stops (one measurement, published as end() does).
  /// RuntimeError kGetStopped if stopped.
  int64_t get_and_end();
  bool running() const;
  const std::string& counter_name() const noexcept { return counter_name_; }
  bool coarse() const noexcept { return coarse_; }
  /// @brief A number no other Timer of this process had or will have: tells a timer from one made
  /// later at the same address (TimerBegin checks its blob still holds the timer it made).
  uint64_t id() const noexcept { return id_; }

 private:
  using Clock = std::chrono::steady_clock;
  // start_ns_ when stopped: no steady_clock reading is this small.
  static constexpr int64_t kStopped = INT64_MIN;
  int64_t now_ns() const noexcept {
#ifdef CLOCK_MONOTONIC_COARSE
    if (coarse_) {
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
      return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    }
#endif
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  const std::string counter_name_;
  const bool coarse_;
  const uint64_t id_;
  StatShare total_ns_;  // this timer's parts of the two stats
  StatShare count_;
  std::atomic<int64_t> start_ns_{kStopped};  // steady_clock ns at begin(), or kStopped
};

}  // namespace moka
