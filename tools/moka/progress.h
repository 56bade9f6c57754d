// The live status line of moka job run on a terminal: epoch, elapsed time, batches per second of each pipe, queue
// depths and the last checkpoint, redrawn on stderr a few times a second (docs/cli.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace moka_cli {

/// A byte count for progress and epoch lines: "512 B", "7.9 KiB", "8.0 MiB" (a small checkpoint is not "0.0 MiB").
std::string byte_size(uint64_t bytes);

/// @brief Draws the status line while alive (only when `enabled`: stderr is a terminal and the log level shows
/// epochs). epoch_done() tells it the job's progress; the line is erased when it ends.
/// Thread-safety: epoch_done() from any thread.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// An epoch ended (the last one, when stop), checkpointed in that many bytes and seconds (0 bytes: none).
  void epoch_done(int64_t epoch, bool stop, uint64_t checkpoint_bytes, double checkpoint_seconds);
  /// The status text now (also what tests read).
  std::string status();

 private:
  void loop();

  bool enabled_;
  std::chrono::milliseconds interval_{250};  // between redraws
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int64_t epoch_ = 0;  // the epoch running now
  std::string last_checkpoint_;
  struct Rate {
    double per_second = 0;
    const char* unit = "batches/s";  // records/s where the pipe counts its records
  };
  std::map<std::string, int64_t> last_counts_;  // pipe -> its records (or batches) at the last sample
  std::map<std::string, Rate> rates_;           // pipe label -> its rate
  std::chrono::steady_clock::time_point last_sample_ = start_;
  bool drawn_ = false;  // under the logger's lock
  std::thread thread_;
};

}  // namespace moka_cli
