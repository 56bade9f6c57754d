// WriteBehind: a thread that writes a file's buffers at their offsets, in the order they were handed
// over, while the thread that fills them (hashing and copying record bytes) goes on with the next.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moka::detail {

/// @brief Writes exactly n bytes at `offset` of fd with pwrite (the descriptor's file offset stays);
/// throws RuntimeError "<what>: write at offset N failed: <reason>".
void pwrite_all(int fd, const char* buf, std::size_t n, uint64_t offset, const std::string& what);

/// @brief A writer thread for one file descriptor.
///
/// write() queues a buffer to be written at an offset and returns at once, unless `max_in_flight`
/// bytes are already queued (then it waits for room: memory stays bounded whatever the disk's speed).
/// Buffers are written in submission order, so a later write over the same bytes wins. After a write
/// fails, the rest are dropped and every later call throws that error.
///
/// Both sides spin briefly (spin_yield_until, core/spin_wait.h) before they sleep: the gap between
/// two buffers is about a millisecond, and a thread woken from sleep every millisecond is placed by
/// Linux on its waker's core, where the two take turns instead of running side by side (measured:
/// saves 2× slower). The writer thread sleeps once nothing came for kSpin.
/// Thread-safety: one thread submits and waits; the writer thread is internal.
class WriteBehind {
 public:
  /// `what` names the file in errors ("minidb file '/ckpt/x.tmp-12'").
  WriteBehind(int fd, std::string what, std::size_t max_in_flight);
  /// Waits for the queued writes (their errors are dropped: call wait() to see them) and stops the thread.
  ~WriteBehind();
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  /// @brief Queues `bytes` to be written at `offset`; throws the error of an earlier failed write.
  void write(uint64_t offset, std::string bytes);
  /// @brief Returns when every queued write is done; throws RuntimeError if one failed.
  void wait();
  /// @brief An empty buffer: the storage of a finished write when there is one (no new allocation).
  std::string spare_buffer();

 private:
  static constexpr std::chrono::microseconds kSpin{2000};
  bool has_room(std::size_t n) const;  // mu_ held
  void run();
  void throw_if_failed() const;  // mu_ held

  const int fd_;
  const std::string what_;
  const std::size_t max_in_flight_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // the writer thread: something queued, or stop
  std::condition_variable done_cv_;  // the submitter: a write finished
  struct Job {
    uint64_t offset;
    std::string bytes;
  };
  std::deque<Job> queue_;
  std::size_t in_flight_ = 0;  // bytes queued or being written
  bool busy_ = false;          // the writer thread holds a job outside the lock
  bool sleeping_ = false;      // the writer thread waits on work_cv_ (write() must notify it)
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> pushed_{0};    // jobs queued so far (the writer thread spins on it)
  std::atomic<uint64_t> finished_{0};  // jobs done so far (write() spins on it for room)
  std::string error_;                  // the first failure; empty: none
  std::vector<std::string> spares_;    // storage of finished writes, for spare_buffer()
  std::thread thread_;
};

}  // namespace moka::detail
