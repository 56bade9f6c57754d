// Timer: the stopwatch that TimerBegin puts in a blob (Caffe2's TimerInstance, §19), owned by the blob.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "moka/ops/stats.h"

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
/// Thread-safety: begin(), end() and get_and_end() are for one thread at a time — the timer's owner
/// (a pipe thread's TimerBegin/TimerEnd; each pipe thread has its own timer blob); get_ns(),
/// running() and the published stats may be read from any thread. The state is one atomic word (the
/// start time, or "stopped") that begin/end load and store without a read-modify-write, so they cost
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

  /// @brief Starts; RuntimeError "Called TimerBegin on an already running timer." if running.
  void begin();
  /// @brief Stops and publishes; returns the elapsed ns. RuntimeError "Called TimerEnd on a stopped timer." if stopped.
  int64_t end();
  /// @brief Nanoseconds since begin(); RuntimeError "Called TimerGet on a stopped timer." if stopped.
  int64_t get_ns() const;
  /// @brief Atomically reads the elapsed time and stops (one measurement, published as end() does).
  /// RuntimeError "Called TimerGet on a stopped timer." if stopped.
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
  int64_t now_ns() const noexcept;
  // Stops and publishes; throws `what` if stopped.
  int64_t stop(const char* what);

  const std::string counter_name_;
  const bool coarse_;
  const uint64_t id_;
  StatShare total_ns_;  // this timer's parts of the two stats
  StatShare count_;
  std::atomic<int64_t> start_ns_{kStopped};  // steady_clock ns at begin(), or kStopped
};

}  // namespace moka
