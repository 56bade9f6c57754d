// BlobsQueue: the bounded, closable FIFO of records (num_blobs blobs each) that the queue operators share
// through a blob (Caffe2's BlobsQueue; docs/queues.md §1). Records move in and out by swapping blobs, never by copying.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "moka/core/blob.h"

namespace moka {

/// Outcome of a queue read or write.
enum class QueueResult {
  ok,          ///< the record moved
  closed,      ///< the queue is closed (for a read: closed and empty)
  timed_out,   ///< the timeout passed first (reads and writes with timeout_secs > 0 only)
  would_block  ///< try_read/try_write only: empty (or full) and still open
};

/// What a queue has done since it was made (BlobsQueue::stats): a snapshot, each figure read on its own.
struct QueueStats {
  std::string name{};
  std::string label{};  ///< live_queue_stats: the name less the "/handler" the data layer's Queue adds
  int64_t depth = 0;    ///< records held now
  int64_t capacity = 0;
  int64_t puts = 0;             ///< records written (each an enqueue of one record of num_blobs blobs)
  int64_t takes = 0;            ///< records read
  int64_t put_blocked_ns = 0;   ///< time writers spent waiting on a full queue
  int64_t take_blocked_ns = 0;  ///< time readers spent waiting on an empty one
};

/// @brief A bounded ring buffer of `capacity` records of `num_blobs` blobs each.
///
/// A write swaps the caller's blobs into a free slot, so the caller gets back whatever the slot held
/// (an empty blob, or the storage a reader swapped in earlier — tensors get recycled, nothing is
/// copied). A read swaps a slot's blobs into the caller's blobs. Reads and writes that need not wait
/// take no lock: writers and readers claim positions with one compare-and-swap each and hand slots
/// over through per-slot sequence numbers. A thread that finds the queue empty (full) spins for a few
/// microseconds — the other side is usually about to arrive — and then sleeps on a condition
/// variable. Sleepers are counted, so an operation notifies only when somebody sleeps, which can only
/// be while the queue is empty (readers) or full (writers): on those transitions, and on close.
/// Inside a fiber (a concurrent step run with Concurrency::fibers) a wait neither spins nor sleeps:
/// it yields to the fiber's siblings until the queue is ready (yield_until_ready).
///
/// Close semantics (moka decision 5; Caffe2 differs): once closed, every write fails at once, even
/// with free capacity; reads still drain the records left and fail only when the queue is closed
/// and empty. Blocked threads wake on close. The destructor closes.
///
/// @code
///   BlobsQueue q("q", /*capacity=*/2, /*num_blobs=*/1);
///   Blob in;  in.get_mutable<Tensor>() = Tensor::scalar<int64_t>(7);
///   Blob* ins[] = {&in};
///   q.blocking_write(ins);            // `in` now holds what the slot held (nothing)
///   Blob out;  Blob* outs[] = {&out};
///   q.blocking_read(outs);            // out holds the int64 scalar 7
///   q.close();  q.blocking_read(outs);  // false: closed and empty
/// @endcode
/// Thread-safety: every method may be called concurrently from any thread.
class BlobsQueue {
 public:
  /// @brief A queue named `name` (used in messages) holding at most `capacity` records.
  ///
  /// InvalidInput when capacity < 1, num_blobs < 1, or field_names is neither empty nor of size
  /// num_blobs ("Wrong number of fieldNames provided.").
  BlobsQueue(std::string name, int64_t capacity, int64_t num_blobs, std::vector<std::string> field_names = {});
  ~BlobsQueue();
  BlobsQueue(const BlobsQueue&) = delete;
  BlobsQueue& operator=(const BlobsQueue&) = delete;

  /// @brief Waits for a free slot, then swaps `inputs` (num_blobs of them) into it.
  /// @param timeout_secs > 0: give up after that many seconds (false, inputs untouched); 0 waits
  ///        forever. InvalidInput when negative or not finite.
  /// @return false when the queue is (or becomes, while waiting) closed, or on timeout; the inputs
  ///         are then untouched.
  /// Thread-safety: any thread.
  bool blocking_write(std::span<Blob* const> inputs, double timeout_secs = 0) {
    return write(inputs, timeout_secs) == QueueResult::ok;
  }
  /// @brief blocking_write telling closed from timed_out.
  /// Thread-safety: any thread.
  QueueResult write(std::span<Blob* const> inputs, double timeout_secs = 0) { return put(inputs, true, timeout_secs); }
  /// @brief Swaps `inputs` into a free slot if there is one; never waits.
  /// Thread-safety: any thread.
  QueueResult try_write(std::span<Blob* const> inputs) { return put(inputs, false, 0); }

  /// @brief Waits for a record, then swaps it into `outputs` (num_blobs of them).
  /// @param timeout_secs > 0: give up after that many seconds (false, outputs untouched); 0 waits
  ///        forever. InvalidInput when negative or not finite.
  /// @return false when the queue is closed and empty, or on timeout.
  /// Thread-safety: any thread.
  bool blocking_read(std::span<Blob* const> outputs, double timeout_secs = 0) {
    return read(outputs, timeout_secs) == QueueResult::ok;
  }
  /// @brief blocking_read telling closed from timed_out.
  /// Thread-safety: any thread.
  QueueResult read(std::span<Blob* const> outputs, double timeout_secs = 0);
  /// @brief Swaps a record into `outputs` if there is one; never waits.
  /// Thread-safety: any thread.
  QueueResult try_read(std::span<Blob* const> outputs);

  /// @brief Closes the queue: writes fail from now on, reads drain what is left. Wakes every waiter.
  /// Idempotent. Thread-safety: any thread.
  void close();
  /// @brief True once close() was called. Thread-safety: any thread.
  bool is_closed() const noexcept { return (write_pos_.load(std::memory_order_acquire) & kClosedBit) != 0; }
  /// @brief Records currently held (a snapshot). Thread-safety: any thread.
  std::size_t size() const noexcept;
  /// @brief Records held, written and read, and the time writers and readers waited (a snapshot; nothing on the
  /// fast path counts: the totals are the positions, the waits are timed only when they wait). Thread-safety: any.
  QueueStats stats() const noexcept;

  const std::string& name() const noexcept { return name_; }
  int64_t capacity() const noexcept { return static_cast<int64_t>(capacity_); }
  int64_t num_blobs() const noexcept { return static_cast<int64_t>(num_blobs_); }
  const std::vector<std::string>& field_names() const noexcept { return field_names_; }

 private:
  // Slot sequence numbers (after Vyukov's bounded MPMC queue): slot k % capacity is free for the
  // writer of record k when its sequence is 2k and holds record k for its reader when it is 2k + 1
  // (doubling keeps "written" and "free for the next round" apart even with capacity 1).
  //
  // A slot is whole cache lines: its sequence number, then its num_blobs blobs (one line for up to
  // three blobs). A hand-off then moves one line between the writer's and the reader's cores
  // instead of two, and neighbouring slots (the writer filling one while the reader empties the
  // next) never share a line.
  static constexpr std::size_t kLine = 64;
  static constexpr std::size_t kBlobsOffset = sizeof(std::atomic<uint64_t>);
  static constexpr uint64_t kClosedBit = uint64_t{1} << 63;  // in write_pos_: set by close()
  struct RingFree {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{kLine}); }
  };
  // The slot of record `pos`. A power-of-two capacity (the benchmarks' 64, any the user picks) masks
  // instead of dividing: a 64-bit division is tens of cycles, paid on every hand-off.
  std::byte* slot(uint64_t pos) const noexcept {
    const uint64_t k = index_mask_ != 0 ? (pos & index_mask_) : (pos % capacity_);
    return ring_.get() + k * slot_bytes_;
  }
  static std::atomic<uint64_t>& seq_of(std::byte* slot) noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(slot);
  }
  static Blob* blobs_of(std::byte* slot) noexcept { return reinterpret_cast<Blob*>(slot + kBlobsOffset); }
  std::atomic<uint64_t>& seq(uint64_t pos) const noexcept { return seq_of(slot(pos)); }
  Blob* slot_blobs(uint64_t pos) const noexcept { return blobs_of(slot(pos)); }

  QueueResult put(std::span<Blob* const> inputs, bool wait, double timeout_secs);
  // put() and read() once their first attempt failed: the waiting loops, out of line so that a
  // hand-off that succeeds at once (most of them, in a pipe) does not pay for their frames.
  QueueResult put_waiting(std::span<Blob* const> inputs, double timeout_secs);
  QueueResult read_waiting(std::span<Blob* const> outputs, double timeout_secs);
  // InvalidInput unless n == num_blobs_ (inline: every read and write checks it).
  void check_count(std::size_t n, const char* what) const {
    if (n != num_blobs_) [[unlikely]]
      throw_bad_count(n, what);
  }
  // InvalidInput unless timeout_secs is finite and >= 0.
  void check_timeout(double timeout_secs, const char* what) const {
    if (!(timeout_secs >= 0) || !std::isfinite(timeout_secs)) [[unlikely]]
      throw_bad_timeout(timeout_secs, what);
  }
  [[noreturn]] void throw_bad_count(std::size_t n, const char* what) const;
  [[noreturn]] void throw_bad_timeout(double timeout_secs, const char* what) const;
  // One non-waiting attempt each; false when full (empty) or, for writes, closed.
  bool try_put(std::span<Blob* const> inputs, bool& closed);
  bool try_take(std::span<Blob* const> outputs);
  // The next record is published (a read would succeed now).
  bool record_ready() const noexcept;
  // The next slot is free for a writer (a write would succeed now unless closed).
  bool slot_free() const noexcept;
  // Closed, and every record written has been claimed by a reader.
  bool closed_and_drained() const noexcept;
  // Stores a slot's new sequence number (handing the slot over), fenced against the sleeper-count
  // load that follows (see after_put()).
  void publish(std::atomic<uint64_t>& seq, uint64_t value) const noexcept;
  // Counts the calling thread, about to sleep, in `waiting`, fenced against its re-check that follows.
  void announce_sleeper(std::atomic<int>& waiting) const noexcept;
  // Wakes sleepers after a record moved (only when someone sleeps: one atomic load otherwise).
  void after_put() noexcept;
  void after_take() noexcept;
  // Spins briefly until `ready()`; true when it became ready.
  template <class Ready>
  bool spin_until(Ready ready) const;
  // One wait of put() or read() for `ready()`: in a fiber it yields to the siblings; else it spins once
  // (the first time, tracked by `spun`), then sleeps on `cv`, counted in `waiting`. `deadline` bounds it
  // when `timed`. True when the caller should try again, false when the deadline passed.
  template <class Ready>
  bool wait_turn(Ready ready, bool timed, std::chrono::steady_clock::time_point deadline, bool& spun,
                 std::condition_variable& cv, std::atomic<int>& waiting);

  // The trace's names of this queue's waits ("put <name>", "take <name>"), looked up when first traced.
  uint32_t trace_wait_name(bool put);

  std::string name_;
  std::atomic<uint32_t> trace_put_name_{UINT32_MAX};
  std::atomic<uint32_t> trace_take_name_{UINT32_MAX};
  uint64_t capacity_;
  uint64_t index_mask_ = 0;  // capacity_ - 1 when capacity_ is a power of two (and > 1), else 0
  std::size_t num_blobs_;
  std::vector<std::string> field_names_;
  std::size_t slot_bytes_ = 0;                   // a multiple of kLine
  std::unique_ptr<std::byte[], RingFree> ring_;  // capacity_ slots; record k in slot k % capacity_

  // Each position on its own cache line: writers and readers do not disturb each other.
  alignas(64) std::atomic<uint64_t> write_pos_{0};  // records claimed by writers, | kClosedBit once closed
  alignas(64) std::atomic<uint64_t> read_pos_{0};   // records claimed by readers
  // Set by close() with kClosedBit (both under mu_). Readers look here, on their own line, before
  // reading write_pos_: a reader spinning on an empty queue would otherwise pull write_pos_'s line
  // away from the writer on every check.
  std::atomic<bool> closed_hint_{false};
  // Sleeping (slow path only): the counts let a fast-path operation skip notifying when nobody sleeps.
  alignas(64) std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::atomic<int> readers_waiting_{0};
  std::atomic<int> writers_waiting_{0};
  std::atomic<int64_t> put_blocked_ns_{0};   // time in put_waiting
  std::atomic<int64_t> take_blocked_ns_{0};  // time in read_waiting
  // Movers fence with a compiler fence and sleepers with a membarrier (decided at construction).
  const bool light_publish_;
};

/// What a queue blob holds: operators share the queue through it (CreateBlobsQueue's output).
using BlobsQueuePtr = std::shared_ptr<BlobsQueue>;

/// @brief Every BlobsQueue alive in this process now, with its stats, in no particular order (progress displays,
/// trace counters and the stat registry's queue stats read it). Thread-safety: any thread.
std::vector<QueueStats> live_queue_stats();

}  // namespace moka
