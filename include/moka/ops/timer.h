// Timer: the stopwatch that TimerBegin puts in a blob (Caffe2's TimerInstance, §19), owned by the blob.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

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
/// Thread-safety: every method may be called concurrently (guarded by an internal mutex).
class Timer {
 public:
  explicit Timer(std::string counter_name);
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

 private:
  using Clock = std::chrono::steady_clock;
  int64_t stop_locked();

  const std::string counter_name_;
  std::atomic<int64_t>& total_ns_;  // stat cells, looked up once
  std::atomic<int64_t>& count_;
  mutable std::mutex mu_;
  bool running_ = false;
  Clock::time_point start_{};
};

}  // namespace moka
