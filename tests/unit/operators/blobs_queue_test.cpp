// Unit tests of moka::BlobsQueue: FIFO order, the capacity bound, close semantics (decision 5), timeouts,
// wake-up on close, many producers/consumers, and that records move (tensor storage is never copied).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../../src/core/asymmetric_fence.h"
#include "../../../src/exec/fiber.h"
#include "moka/core/error.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"

namespace moka {
namespace {

using namespace std::chrono_literals;

void put(Blob& b, int64_t v) { b.get_mutable<Tensor>() = Tensor::scalar<int64_t>(v); }
int64_t value(const Blob& b) { return b.get<Tensor>().item<int64_t>(); }

bool write1(BlobsQueue& q, int64_t v) {
  Blob b;
  put(b, v);
  Blob* in[] = {&b};
  return q.blocking_write(in);
}

QueueResult read1(BlobsQueue& q, int64_t& v, double timeout = 0) {
  Blob b;
  Blob* out[] = {&b};
  const QueueResult r = q.read(out, timeout);
  if (r == QueueResult::ok) v = value(b);
  return r;
}

TEST(BlobsQueue, FifoOrder) {
  BlobsQueue q("q", 5, 1);
  for (int64_t i = 0; i < 5; ++i) ASSERT_TRUE(write1(q, i));
  EXPECT_EQ(q.size(), 5u);
  for (int round = 0; round < 3; ++round) {  // wraps around the ring several times
    for (int64_t i = 0; i < 5; ++i) {
      int64_t v = -1;
      ASSERT_EQ(read1(q, v), QueueResult::ok);
      EXPECT_EQ(v, round * 5 + i);
      ASSERT_TRUE(write1(q, (round + 1) * 5 + i));
    }
  }
  EXPECT_EQ(q.size(), 5u);
}

TEST(BlobsQueue, RecordsOfSeveralBlobsStayTogether) {
  BlobsQueue q("q", 2, 3, {"a", "b", "c"});
  EXPECT_EQ(q.num_blobs(), 3);
  EXPECT_EQ(q.field_names(), (std::vector<std::string>{"a", "b", "c"}));
  Blob a, b, c;
  put(a, 1);
  b.get_mutable<Tensor>() = Tensor::vector<std::string>({"x", "y"});
  c.emplace<int>(42);  // any object moves through, not only tensors
  Blob* in[] = {&a, &b, &c};
  ASSERT_TRUE(q.blocking_write(in));
  EXPECT_FALSE(a.is_initialized());  // swapped with the slot's empty blob
  Blob x, y, z;
  Blob* out[] = {&x, &y, &z};
  ASSERT_TRUE(q.blocking_read(out));
  EXPECT_EQ(value(x), 1);
  EXPECT_EQ(y.get<Tensor>(), Tensor::vector<std::string>({"x", "y"}));
  EXPECT_EQ(z.get<int>(), 42);
}

TEST(BlobsQueue, MovesNeverCopies) {
  BlobsQueue q("q", 1, 1);
  Blob in;
  in.get_mutable<Tensor>() = Tensor(DType::Float, {1024});
  const Tensor* obj = &in.get<Tensor>();
  const std::byte* data = obj->raw_data();
  Blob* ins[] = {&in};
  ASSERT_TRUE(q.blocking_write(ins));
  Blob out;
  out.get_mutable<Tensor>() = Tensor(DType::Float, {8});  // the reader's old tensor goes into the slot
  const Tensor* reader_old = &out.get<Tensor>();
  Blob* outs[] = {&out};
  ASSERT_TRUE(q.blocking_read(outs));
  EXPECT_EQ(&out.get<Tensor>(), obj);             // the same Tensor object...
  EXPECT_EQ(out.get<Tensor>().raw_data(), data);  // ...with the same storage
  // The next writer gets the reader's old tensor back: storage is recycled through the queue.
  put(in, 5);
  ASSERT_TRUE(q.blocking_write(ins));
  EXPECT_EQ(&in.get<Tensor>(), reader_old);
}

TEST(BlobsQueue, CapacityIsAHardBound) {
  for (int64_t capacity : {1, 2, 3}) {
    SCOPED_TRACE(capacity);
    BlobsQueue q("q", capacity, 1);
    for (int64_t i = 0; i < capacity; ++i) ASSERT_TRUE(write1(q, i));
    Blob b;
    put(b, 99);
    Blob* in[] = {&b};
    EXPECT_EQ(q.try_write(in), QueueResult::would_block);
    EXPECT_EQ(q.size(), static_cast<std::size_t>(capacity));
    std::atomic<bool> written{false};
    std::thread writer([&] {
      written = write1(q, capacity);  // blocks until a reader frees a slot
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(written.load());
    EXPECT_EQ(q.size(), static_cast<std::size_t>(capacity));
    int64_t v;
    ASSERT_EQ(read1(q, v), QueueResult::ok);
    EXPECT_EQ(v, 0);
    writer.join();
    EXPECT_TRUE(written.load());
    EXPECT_EQ(q.size(), static_cast<std::size_t>(capacity));
    for (int64_t i = 1; i <= capacity; ++i) {
      ASSERT_EQ(read1(q, v), QueueResult::ok);
      EXPECT_EQ(v, i);
    }
    Blob* out[] = {&b};
    EXPECT_EQ(q.try_read(out), QueueResult::would_block);
  }
}

TEST(BlobsQueue, TryReadAndTryWrite) {
  BlobsQueue q("q", 1, 1);
  Blob b;
  Blob* io[] = {&b};
  EXPECT_EQ(q.try_read(io), QueueResult::would_block);
  put(b, 4);
  EXPECT_EQ(q.try_write(io), QueueResult::ok);
  EXPECT_EQ(q.try_read(io), QueueResult::ok);
  EXPECT_EQ(value(b), 4);
  q.close();
  EXPECT_EQ(q.try_write(io), QueueResult::closed);
  EXPECT_EQ(q.try_read(io), QueueResult::closed);
}

TEST(BlobsQueue, ClosedRefusesWritesAtOnceAndDrainsReads) {
  BlobsQueue q("q", 4, 1);
  ASSERT_TRUE(write1(q, 1));
  ASSERT_TRUE(write1(q, 2));
  EXPECT_FALSE(q.is_closed());
  q.close();
  q.close();  // idempotent
  EXPECT_TRUE(q.is_closed());
  // Decision 5: refused although two slots are free (Caffe2 accepted it).
  Blob b;
  put(b, 3);
  Blob* in[] = {&b};
  EXPECT_FALSE(q.blocking_write(in));
  EXPECT_EQ(value(b), 3);  // untouched
  int64_t v;
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  EXPECT_EQ(v, 1);
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(read1(q, v), QueueResult::closed);
  EXPECT_EQ(read1(q, v, 5.0), QueueResult::closed);  // no waiting on a closed, empty queue
}

TEST(BlobsQueue, ReadTimesOut) {
  BlobsQueue q("q", 1, 1);
  int64_t v;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(read1(q, v, 0.05), QueueResult::timed_out);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 45ms);
  EXPECT_LT(waited, 5s);
  Blob b;
  Blob* out[] = {&b};
  EXPECT_FALSE(q.blocking_read(out, 0.01));
  ASSERT_TRUE(write1(q, 8));
  EXPECT_EQ(read1(q, v, 0.05), QueueResult::ok);  // a record there: no waiting
  EXPECT_EQ(v, 8);
}

TEST(BlobsQueue, WriteTimesOut) {
  BlobsQueue q("q", 1, 1);
  ASSERT_TRUE(write1(q, 1));
  Blob b;
  put(b, 2);
  Blob* in[] = {&b};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(q.write(in, 0.05), QueueResult::timed_out);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(value(b), 2);  // untouched
  EXPECT_FALSE(q.blocking_write(in, 0.01));
  int64_t v;
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  EXPECT_EQ(q.write(in, 0.05), QueueResult::ok);  // a free slot: no waiting
  q.close();
  EXPECT_EQ(q.write(in, 5.0), QueueResult::closed);  // closed: at once, not after the timeout
}

// A queue's stats: records held, written and read, and the time waits took; live_queue_stats lists it while it
// lives, under its label (the name less "/handler"), and the stat registry exports it (docs/queues.md §6).
TEST(BlobsQueue, StatsCountRecordsAndTimeBlocked) {
  BlobsQueue q("stats_q/handler", 2, 1);
  EXPECT_EQ(q.stats().puts, 0);
  ASSERT_TRUE(write1(q, 1));
  ASSERT_TRUE(write1(q, 2));
  int64_t v;
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  QueueStats st = q.stats();
  EXPECT_EQ(st.name, "stats_q/handler");
  EXPECT_EQ(st.depth, 1);
  EXPECT_EQ(st.capacity, 2);
  EXPECT_EQ(st.puts, 2);
  EXPECT_EQ(st.takes, 1);
  EXPECT_EQ(st.put_blocked_ns, 0);  // never waited
  EXPECT_EQ(st.take_blocked_ns, 0);
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  EXPECT_EQ(read1(q, v, 0.03), QueueResult::timed_out);  // waits 30 ms on an empty queue
  EXPECT_GE(q.stats().take_blocked_ns, 25'000'000);
  ASSERT_TRUE(write1(q, 3));
  ASSERT_TRUE(write1(q, 4));
  Blob b;
  put(b, 5);
  Blob* in[] = {&b};
  EXPECT_EQ(q.write(in, 0.03), QueueResult::timed_out);  // and 30 ms on a full one
  EXPECT_GE(q.stats().put_blocked_ns, 25'000'000);
  q.close();
  EXPECT_EQ(q.stats().puts, 4);  // the closed bit is not a record

  bool listed = false;
  for (const QueueStats& live : live_queue_stats())
    if (live.name == "stats_q/handler") listed = (live.label == "stats_q" && live.takes == 2);
  EXPECT_TRUE(listed);
  std::map<std::string, int64_t> exported;
  for (const auto& [key, value] : StatRegistry::global().export_all(/*reset=*/true)) exported[key] = value;
  EXPECT_EQ(exported["queue/stats_q/depth"], 2);
  EXPECT_EQ(exported["queue/stats_q/capacity"], 2);
  EXPECT_EQ(exported["queue/stats_q/puts"], 4);
  EXPECT_EQ(exported["queue/stats_q/takes"], 2);
  EXPECT_GE(exported["queue/stats_q/put_blocked_ns"], 25'000'000);
  EXPECT_GE(exported["queue/stats_q/take_blocked_ns"], 25'000'000);
  // The queue's own totals: a reset export leaves them.
  for (const auto& [key, value] : StatRegistry::global().export_all(/*reset=*/false)) {
    if (key == "queue/stats_q/puts") {
      EXPECT_EQ(value, 4);
    }
  }
}

TEST(BlobsQueue, TimedWriteSucceedsWhenAReaderFreesASlot) {
  BlobsQueue q("q", 1, 1);
  ASSERT_TRUE(write1(q, 1));
  std::atomic<int64_t> got{-1};
  std::thread reader([&] {
    std::this_thread::sleep_for(30ms);
    int64_t v = 0;
    if (read1(q, v) == QueueResult::ok) got.store(v);
  });
  Blob b;
  put(b, 2);
  Blob* in[] = {&b};
  EXPECT_EQ(q.write(in, 30.0), QueueResult::ok);
  reader.join();
  EXPECT_EQ(got.load(), 1);
  int64_t v;
  ASSERT_EQ(read1(q, v), QueueResult::ok);
  EXPECT_EQ(v, 2);
}

TEST(BlobsQueue, InvalidTimeoutsAreInvalidInput) {
  BlobsQueue q("myq", 1, 1);
  Blob b;
  Blob* io[] = {&b};
  for (double bad : {-0.5, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    try {
      (void)q.write(io, bad);
      ADD_FAILURE() << "write accepted timeout " << bad;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("myq"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("timeout_secs"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)q.read(io, bad), InvalidInput);
  }
  EXPECT_EQ(q.size(), 0u);
}

// Inside a fiber a wait yields instead of sleeping; the timeouts hold there too.
TEST(BlobsQueue, TimeoutsInAFiber) {
  BlobsQueue full("full", 1, 1);
  BlobsQueue empty("empty", 1, 1);
  ASSERT_TRUE(write1(full, 1));
  QueueResult w = QueueResult::ok, r = QueueResult::ok;
  std::chrono::steady_clock::duration waited{};
  detail::run_on_fibers(1, [&](std::size_t) {
    const auto t0 = std::chrono::steady_clock::now();
    Blob b;
    put(b, 2);
    Blob* in[] = {&b};
    w = full.write(in, 0.1);
    int64_t v;
    r = read1(empty, v, 0.1);
    waited = std::chrono::steady_clock::now() - t0;
  });
  EXPECT_EQ(w, QueueResult::timed_out);
  EXPECT_EQ(r, QueueResult::timed_out);
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 10s);
  // A sibling fiber frees the slot: the timed write succeeds.
  QueueResult w2 = QueueResult::timed_out;
  int64_t first = -1;
  detail::run_on_fibers(2, [&](std::size_t j) {
    if (j == 0) {
      Blob b;
      put(b, 3);
      Blob* in[] = {&b};
      w2 = full.write(in, 30.0);
    } else {
      (void)read1(full, first);
    }
  });
  EXPECT_EQ(w2, QueueResult::ok);
  EXPECT_EQ(first, 1);
}

TEST(BlobsQueue, CloseWakesBlockedReadersAndWriters) {
  BlobsQueue empty("empty", 1, 1);
  BlobsQueue full("full", 1, 1);
  ASSERT_TRUE(write1(full, 0));
  std::vector<std::thread> ts;
  std::atomic<int> woke{0};
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&] {
      int64_t v;
      if (read1(empty, v) == QueueResult::closed) ++woke;
    });
    ts.emplace_back([&] {
      if (!write1(full, 1)) ++woke;
    });
  }
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(woke.load(), 0);
  empty.close();
  full.close();
  for (auto& t : ts) t.join();
  EXPECT_EQ(woke.load(), 6);
  EXPECT_EQ(full.size(), 1u);  // the record written before close is still there to drain
}

TEST(BlobsQueue, CloseWakesATimedRead) {
  BlobsQueue q("q", 1, 1);
  QueueResult r = QueueResult::ok;
  std::thread reader([&] {
    int64_t v;
    r = read1(q, v, 30.0);
  });
  std::this_thread::sleep_for(20ms);
  q.close();
  reader.join();
  EXPECT_EQ(r, QueueResult::closed);
}

// Every record written by several producers is read exactly once by several consumers, for capacities
// that force constant blocking on both sides.
TEST(BlobsQueue, ManyProducersManyConsumers) {
  for (int64_t capacity : {1, 2, 7}) {
    constexpr int kProducers = 4, kConsumers = 3, kPerProducer = 2000;
    BlobsQueue q("q", capacity, 2);
    std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
    std::vector<std::thread> producers, consumers;
    std::atomic<int> done{0};
    for (int p = 0; p < kProducers; ++p)
      producers.emplace_back([&, p] {
        Blob a, b;
        Blob* in[] = {&a, &b};
        for (int i = 0; i < kPerProducer; ++i) {
          put(a, p * kPerProducer + i);
          put(b, -(p * kPerProducer + i));
          ASSERT_TRUE(q.blocking_write(in));
        }
        if (++done == kProducers) q.close();
      });
    std::atomic<int64_t> count{0};
    for (int c = 0; c < kConsumers; ++c)
      consumers.emplace_back([&] {
        Blob a, b;
        Blob* out[] = {&a, &b};
        int64_t last_per_producer[kProducers];
        std::fill(std::begin(last_per_producer), std::end(last_per_producer), -1);
        while (q.blocking_read(out)) {
          const int64_t v = value(a);
          ASSERT_EQ(value(b), -v);
          seen[static_cast<std::size_t>(v)]++;
          // FIFO per producer as seen by one consumer.
          const int64_t p = v / kPerProducer;
          EXPECT_GT(v, last_per_producer[p]);
          last_per_producer[p] = v;
          ++count;
        }
      });
    for (auto& t : producers) t.join();
    for (auto& t : consumers) t.join();
    EXPECT_EQ(count.load(), kProducers * kPerProducer) << "capacity " << capacity;
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "record " << i;
  }
}

// Readers that wait while several records arrive back to back must all be woken (notify_one passes on).
TEST(BlobsQueue, NoReaderIsLeftBehindWhenRecordsArriveTogether) {
  for (int round = 0; round < 50; ++round) {
    BlobsQueue q("q", 8, 1);
    std::atomic<int> got{0};
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i)
      readers.emplace_back([&] {
        int64_t v;
        if (read1(q, v, 20.0) == QueueResult::ok) ++got;
      });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(write1(q, i));
    for (auto& t : readers) t.join();
    ASSERT_EQ(got.load(), 4);
  }
}

TEST(BlobsQueue, InvalidConstruction) {
  try {
    BlobsQueue q("q", 0, 1);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("\"capacity\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(BlobsQueue("q", -3, 1), InvalidInput);
  EXPECT_THROW(BlobsQueue("q", 1, 0), InvalidInput);
  try {
    BlobsQueue q("q", 1, 2, {"only_one"});
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("Wrong number of fieldNames provided."), std::string::npos) << e.what();
  }
  EXPECT_THROW(BlobsQueue("q", int64_t{1} << 40, 4), InvalidInput);
}

TEST(BlobsQueue, WrongNumberOfBlobsIsInvalidInput) {
  BlobsQueue q("myq", 1, 2);
  Blob a;
  Blob* one[] = {&a};
  EXPECT_THROW(q.blocking_write(one), InvalidInput);
  EXPECT_THROW(q.blocking_read(one), InvalidInput);
  EXPECT_THROW(q.try_read(one), InvalidInput);
  try {
    q.blocking_write(one);
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("myq"), std::string::npos) << e.what();
  }
}

// Hand-offs where each side in turn finds the queue empty (full) long enough to go to sleep: every
// sleeper is woken, with the sleepers fenced by membarrier (where the kernel offers it) and with full
// fences on both sides. A lost wake-up fails the timed reads, or the test's timeout for the writes.
TEST(BlobsQueue, SleepersAreWokenWithEitherFenceProtocol) {
  for (bool symmetric : {false, true}) {
    SCOPED_TRACE(symmetric ? "full fences on both sides"
                           : (detail::asymmetric_fences_available() ? "membarrier" : "full fences (no membarrier)"));
    detail::force_symmetric_fences_for_testing(symmetric);
    struct Restore {
      ~Restore() { detail::force_symmetric_fences_for_testing(false); }
    } restore;
    BlobsQueue q("q", 1, 1);
    constexpr int kRecords = 120;
    std::thread consumer([&] {
      struct CloseOnExit {  // a failed read ends the writer's loop too
        BlobsQueue& q;
        ~CloseOnExit() { q.close(); }
      } close_on_exit{q};
      for (int i = 0; i < kRecords; ++i) {
        int64_t v = -1;
        ASSERT_EQ(read1(q, v, 20.0), QueueResult::ok) << "record " << i;
        ASSERT_EQ(v, i);
        if (i % 3 == 0) std::this_thread::sleep_for(1ms);  // the writer finds the queue full
      }
    });
    for (int i = 0; i < kRecords; ++i) {
      if (i % 2 == 0) std::this_thread::sleep_for(1ms);  // the reader finds it empty
      if (!write1(q, i)) {
        ADD_FAILURE() << "write " << i << " refused: the reader gave up";
        break;
      }
    }
    consumer.join();
  }
}

TEST(BlobsQueue, DestructorClosesAndReleasesRecords) {
  auto q = std::make_unique<BlobsQueue>("q", 2, 1);
  ASSERT_TRUE(write1(*q, 1));
  q.reset();  // frees the record still inside; ASan/LSan would report a leak otherwise
  SUCCEED();
}

}  // namespace
}  // namespace moka
