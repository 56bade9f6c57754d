// BlobsQueue: lock-free ring of swapped-in records (per-slot sequence numbers), a short spin, then sleeping
// on condition variables that are notified only when somebody sleeps (in a fiber: yielding instead).
#include "moka/operators/blobs_queue.h"

#include "moka/core/blocking.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/asymmetric_fence.h"
#include "core/spin_wait.h"
#include "moka/core/error.h"
#include "moka/core/trace.h"
#include "operators/trace_counters.h"

namespace moka {

namespace {

// How long a thread that finds the queue empty (full) keeps checking before it sleeps. A sleep and
// wake-up through the condition variable costs several microseconds on each side, while the peer
// usually arrives within a few hundred nanoseconds; a bounded spin (a few microseconds, then a few
// yields) keeps both threads running without making an idle thread burn a core (docs/architecture.md §3). The
// yields are spin_yield()s, which pause instead while the machine is loaded (core/spin_wait.h).
constexpr int kSpinPauses = 128;
constexpr int kSpinYields = 8;

// The deadline of a wait of timeout_secs (> 0). Timeouts beyond 10^9 s (about 31 years) wait that
// long: now + 10^9 s still fits steady_clock's 64-bit nanoseconds, any longer one might not.
std::chrono::steady_clock::time_point deadline_after(double timeout_secs) {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(std::min(timeout_secs, 1e9)));
}

}  // namespace

void BlobsQueue::throw_bad_timeout(double timeout_secs, const char* what) const {
  throw InvalidInput(
      fmt::format("BlobsQueue \"{}\": {} timeout_secs = {}: the timeout must be a finite number of "
                  "seconds >= 0 (0 waits forever)",
                  name_, what, timeout_secs));
}

BlobsQueue::BlobsQueue(std::string name, int64_t capacity, int64_t num_blobs, std::vector<std::string> field_names)
    : name_(std::move(name)),
      field_names_(std::move(field_names)),
      light_publish_(detail::asymmetric_fences_available()) {
  if (capacity < 1)
    throw InvalidInput(
        fmt::format("BlobsQueue \"{}\": argument \"capacity\" = {}: capacity must be at least 1", name_, capacity));
  if (num_blobs < 1)
    throw InvalidInput(
        fmt::format("BlobsQueue \"{}\": argument \"num_blobs\" = {}: num_blobs must be at least 1", name_, num_blobs));
  if (!field_names_.empty() && static_cast<int64_t>(field_names_.size()) != num_blobs)
    throw InvalidInput(fmt::format(
        "BlobsQueue \"{}\": argument \"field_names\" has {} names for num_blobs = {}: Wrong number of fieldNames "
        "provided.",
        name_, field_names_.size(), num_blobs));
  // Guard the slot allocation against absurd sizes: capacity × num_blobs blobs are allocated up front.
  constexpr int64_t kMaxSlots = int64_t{1} << 28;
  if (capacity > kMaxSlots / num_blobs)
    throw InvalidInput(
        fmt::format("BlobsQueue \"{}\": capacity {} × num_blobs {} is too large", name_, capacity, num_blobs));
  capacity_ = static_cast<uint64_t>(capacity);
  if (capacity_ > 1 && (capacity_ & (capacity_ - 1)) == 0) index_mask_ = capacity_ - 1;
  num_blobs_ = static_cast<std::size_t>(num_blobs);
  slot_bytes_ = (kBlobsOffset + num_blobs_ * sizeof(Blob) + kLine - 1) / kLine * kLine;
  const std::size_t bytes = static_cast<std::size_t>(capacity_) * slot_bytes_;
  ring_.reset(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{kLine})));
  for (uint64_t k = 0; k < capacity_; ++k) {
    new (&seq(k)) std::atomic<uint64_t>(2 * k);
    Blob* b = slot_blobs(k);
    for (std::size_t j = 0; j < num_blobs_; ++j) new (b + j) Blob();
  }
  detail::trace_queue_created(this);  // its depth is a trace counter while it lives
}

BlobsQueue::~BlobsQueue() {
  detail::trace_queue_destroyed(this);
  close();
  for (uint64_t k = 0; k < capacity_; ++k) {
    Blob* b = slot_blobs(k);
    for (std::size_t j = 0; j < num_blobs_; ++j) b[j].~Blob();
  }
}

std::size_t BlobsQueue::size() const noexcept {
  // read_pos_ first: both only grow and read_pos_ <= write_pos_, so the difference is never negative.
  const uint64_t r = read_pos_.load(std::memory_order_acquire);
  const uint64_t w = write_pos_.load(std::memory_order_acquire) & ~kClosedBit;
  return static_cast<std::size_t>(std::min(w - r, capacity_));
}

QueueStats BlobsQueue::stats() const noexcept {
  QueueStats st;
  try {
    st.name = name_;
  } catch (...) {  // no memory for the name: the figures still count
  }
  st.depth = static_cast<int64_t>(size());
  st.capacity = capacity();
  st.takes = static_cast<int64_t>(read_pos_.load(std::memory_order_relaxed));
  st.puts = static_cast<int64_t>(write_pos_.load(std::memory_order_relaxed) & ~kClosedBit);
  st.put_blocked_ns = put_blocked_ns_.load(std::memory_order_relaxed);
  st.take_blocked_ns = take_blocked_ns_.load(std::memory_order_relaxed);
  return st;
}

namespace {
// Adds the time from construction to destruction to a queue's blocked-time total (slow paths only).
class BlockedTime {
 public:
  explicit BlockedTime(std::atomic<int64_t>& total) : total_(total), begin_(std::chrono::steady_clock::now()) {}
  ~BlockedTime() {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin_).count();
    total_.fetch_add(static_cast<int64_t>(ns), std::memory_order_relaxed);
  }
  BlockedTime(const BlockedTime&) = delete;
  BlockedTime& operator=(const BlockedTime&) = delete;

 private:
  std::atomic<int64_t>& total_;
  std::chrono::steady_clock::time_point begin_;
};
}  // namespace

void BlobsQueue::throw_bad_count(std::size_t n, const char* what) const {
  throw InvalidInput(fmt::format("BlobsQueue \"{}\": {} of {} blobs, but the queue holds records of {} blobs", name_,
                                 what, n, num_blobs_));
}

template <class Ready>
bool BlobsQueue::spin_until(Ready ready) const {
  for (int i = 0; i < kSpinPauses; ++i) {
    if (ready()) return true;
    detail::cpu_relax();
  }
  for (int i = 0; i < kSpinYields; ++i) {
    if (ready()) return true;
    detail::spin_yield();
  }
  return false;
}

bool BlobsQueue::record_ready() const noexcept {
  const uint64_t r = read_pos_.load(std::memory_order_seq_cst);
  return seq(r).load(std::memory_order_seq_cst) == 2 * r + 1;
}

bool BlobsQueue::slot_free() const noexcept {
  const uint64_t w = write_pos_.load(std::memory_order_seq_cst) & ~kClosedBit;
  return seq(w).load(std::memory_order_seq_cst) == 2 * w;
}

bool BlobsQueue::closed_and_drained() const noexcept {
  if (!closed_hint_.load(std::memory_order_seq_cst)) return false;
  const uint64_t w = write_pos_.load(std::memory_order_seq_cst);
  return (w & kClosedBit) != 0 && read_pos_.load(std::memory_order_seq_cst) == (w & ~kClosedBit);
}

// try_put and try_take are inlined into their callers (put, read and their waiting loops): a pipe makes
// one of each per batch, and the call and its frame were a quarter of put's instructions.
[[gnu::always_inline]] inline bool BlobsQueue::try_put(std::span<Blob* const> inputs, bool& closed) {
  uint64_t pos = write_pos_.load(std::memory_order_relaxed);
  for (;;) {
    // The closed bit lives in the position itself: a writer that claims a slot did so before close().
    if (pos & kClosedBit) {
      closed = true;
      return false;
    }
    std::byte* const sl = slot(pos);
    std::atomic<uint64_t>& s = seq_of(sl);
    const uint64_t sq = s.load(std::memory_order_acquire);
    const auto dif = static_cast<int64_t>(sq - 2 * pos);
    if (dif == 0) {
      if (write_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        Blob* blobs = blobs_of(sl);
        for (std::size_t j = 0; j < num_blobs_; ++j) blobs[j].swap(*inputs[j]);
        publish(s, 2 * pos + 1);
        return true;
      }
    } else if (dif < 0) {
      return false;  // full: the slot still holds record pos - capacity
    } else {
      pos = write_pos_.load(std::memory_order_relaxed);
    }
  }
}

[[gnu::always_inline]] inline bool BlobsQueue::try_take(std::span<Blob* const> outputs) {
  uint64_t pos = read_pos_.load(std::memory_order_relaxed);
  for (;;) {
    std::byte* const sl = slot(pos);
    std::atomic<uint64_t>& s = seq_of(sl);
    const uint64_t sq = s.load(std::memory_order_acquire);
    const auto dif = static_cast<int64_t>(sq - (2 * pos + 1));
    if (dif == 0) {
      if (read_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        Blob* blobs = blobs_of(sl);
        for (std::size_t j = 0; j < num_blobs_; ++j) blobs[j].swap(*outputs[j]);
        publish(s, 2 * (pos + capacity_));
        return true;
      }
    } else if (dif < 0) {
      return false;  // empty, or its writer has not finished the swap yet
    } else {
      pos = read_pos_.load(std::memory_order_relaxed);
    }
  }
}

// A sleeper increments its count and then re-checks under mu_; the mover publishes the slot and then
// loads the count, so either the sleeper sees the record or the mover sees the sleeper — and notifies
// under mu_, which the sleeper holds from its check until it waits. The store-then-load on each side
// needs a full fence between: all seq_cst (one total order), or, where the kernel offers it, a light
// fence for the mover and a membarrier for the sleeper (core/asymmetric_fence.h), which keeps the
// locked instruction off every hand-off.
void BlobsQueue::publish(std::atomic<uint64_t>& seq, uint64_t value) const noexcept {
  if (light_publish_) {
    seq.store(value, std::memory_order_release);
    detail::light_fence();
  } else {
    seq.store(value, std::memory_order_seq_cst);
  }
}

void BlobsQueue::announce_sleeper(std::atomic<int>& waiting) const noexcept {
  waiting.fetch_add(1, std::memory_order_seq_cst);
  if (light_publish_) detail::heavy_fence();
}

void BlobsQueue::after_put() noexcept {
  if (readers_waiting_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard lk(mu_); }
  not_empty_.notify_one();
}

void BlobsQueue::after_take() noexcept {
  if (writers_waiting_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard lk(mu_); }
    not_full_.notify_one();
  }
  // After close, the last records leaving make "closed and drained" true: readers sleeping until
  // then (waiting for a claimed record to be published) must all look again.
  // (closed_hint_, not write_pos_: a take must not pull the writers' line; close() sets both under mu_.)
  if (closed_hint_.load(std::memory_order_seq_cst) && readers_waiting_.load() > 0) {
    { std::lock_guard lk(mu_); }
    not_empty_.notify_all();
  }
}

template <class Ready>
bool BlobsQueue::wait_turn(Ready ready, bool timed, std::chrono::steady_clock::time_point deadline, bool& spun,
                           std::condition_variable& cv, std::atomic<int>& waiting) {
  if (timed) {
    bool timed_out = false;
    if (yield_until_ready([&] {  // in a fiber: let its siblings (the other side of the queue) run
          if (ready()) return true;
          return timed_out = std::chrono::steady_clock::now() >= deadline;
        }))
      return !timed_out;
  } else if (yield_until_ready(ready)) {
    return true;
  }
  if (!spun) {
    spun = true;
    if (spin_until(ready)) return true;
  }
  BlockingScope blocking;  // on a pool worker: let queued jobs (e.g. the other side) run meanwhile
  std::unique_lock lk(mu_);
  announce_sleeper(waiting);
  bool woke = true;
  if (timed)
    woke = cv.wait_until(lk, deadline, ready);
  else
    cv.wait(lk, ready);
  waiting.fetch_sub(1, std::memory_order_relaxed);
  return woke;
}

QueueResult BlobsQueue::put(std::span<Blob* const> inputs, bool wait, double timeout_secs) {
  check_count(inputs.size(), "write");
  if (wait) check_timeout(timeout_secs, "write");
  bool closed = false;
  if (try_put(inputs, closed)) {
    after_put();
    return QueueResult::ok;
  }
  // Decision 5: a closed queue refuses writes even when a slot is free.
  if (closed) return QueueResult::closed;
  if (!wait) return QueueResult::would_block;
  return put_waiting(inputs, timeout_secs);
}

QueueResult BlobsQueue::read(std::span<Blob* const> outputs, double timeout_secs) {
  check_count(outputs.size(), "read");
  check_timeout(timeout_secs, "read");
  if (try_take(outputs)) {
    after_take();
    return QueueResult::ok;
  }
  // Reads drain what is left after close; they fail only on closed and empty.
  if (closed_and_drained()) return QueueResult::closed;
  return read_waiting(outputs, timeout_secs);
}

// A timed wait in a fiber yields until the queue is ready or the deadline passed; outside one it
// spins briefly, then sleeps on the condition variable until notified or the deadline.
uint32_t BlobsQueue::trace_wait_name(bool put) {
  std::atomic<uint32_t>& cached = put ? trace_put_name_ : trace_take_name_;
  uint32_t id = cached.load(std::memory_order_relaxed);
  if (id == UINT32_MAX) {
    id = trace_name_id(fmt::format("{} {}", put ? "put" : "take", name_));
    cached.store(id, std::memory_order_relaxed);
  }
  return id;
}

[[gnu::noinline]] QueueResult BlobsQueue::put_waiting(std::span<Blob* const> inputs, double timeout_secs) {
  // The time blocked on a full queue (docs/tracing.md).
  TraceSpan span(TraceCategory::wait, trace_enabled() ? trace_wait_name(true) : 0);
  const BlockedTime blocked(put_blocked_ns_);  // the queue's stats (docs/queues.md §6)
  const bool timed = timeout_secs > 0;
  const auto deadline = timed ? deadline_after(timeout_secs) : std::chrono::steady_clock::time_point{};
  bool spun = false;
  auto ready = [this] { return slot_free() || is_closed(); };
  for (;;) {
    if (!wait_turn(ready, timed, deadline, spun, not_full_, writers_waiting_)) return QueueResult::timed_out;
    bool closed = false;
    if (try_put(inputs, closed)) {
      after_put();
      return QueueResult::ok;
    }
    if (closed) return QueueResult::closed;
  }
}

[[gnu::noinline]] QueueResult BlobsQueue::read_waiting(std::span<Blob* const> outputs, double timeout_secs) {
  TraceSpan span(TraceCategory::wait, trace_enabled() ? trace_wait_name(false) : 0);  // blocked on an empty queue
  const BlockedTime blocked(take_blocked_ns_);
  const bool timed = timeout_secs > 0;
  const auto deadline = timed ? deadline_after(timeout_secs) : std::chrono::steady_clock::time_point{};
  bool spun = false;
  // A record claimed by a writer but not yet published keeps the queue "not drained": wait for it.
  auto ready = [this] { return record_ready() || closed_and_drained(); };
  for (;;) {
    if (!wait_turn(ready, timed, deadline, spun, not_empty_, readers_waiting_)) return QueueResult::timed_out;
    if (try_take(outputs)) {
      after_take();
      return QueueResult::ok;
    }
    if (closed_and_drained()) return QueueResult::closed;
  }
}

QueueResult BlobsQueue::try_read(std::span<Blob* const> outputs) {
  check_count(outputs.size(), "read");
  if (try_take(outputs)) {
    after_take();
    return QueueResult::ok;
  }
  return closed_and_drained() ? QueueResult::closed : QueueResult::would_block;
}

void BlobsQueue::close() {
  {
    std::lock_guard lk(mu_);
    if (write_pos_.fetch_or(kClosedBit, std::memory_order_seq_cst) & kClosedBit) return;
    closed_hint_.store(true, std::memory_order_seq_cst);
  }
  not_empty_.notify_all();
  not_full_.notify_all();
}

}  // namespace moka
