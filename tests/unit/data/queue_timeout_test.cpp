// Unit tests: QueueOptions::timeout_secs — a pipe stage that waits on its Queue longer than the
// timeout (nobody writes, or nobody reads) fails the run naming the operator and the queue instead of
// waiting until cancelled; a queue that keeps moving is unaffected; bad timeouts are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"
#include "support/pipe_datasets.h"
#include "support/run_expect_error.h"

namespace moka {
namespace {

using moka::testing::invalid_input;
using moka::testing::run_expect_error;

// The record the test datasets hold: one int64 column "val".
schema::Field val_record() { return schema::Struct({{"val", schema::Scalar(DType::Int64)}}); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(QueueTimeout, BadTimeoutsAreRefused) {
  for (double bad : {-1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    const std::string what = invalid_input([&] { Queue::make(4, {.timeout_secs = bad}); });
    EXPECT_NE(what.find("Queue: timeout_secs must be a finite number >= 0"), std::string::npos) << what;
  }
  EXPECT_EQ(Queue::make(4)->timeout_secs(), 0);
}

TEST(QueueTimeout, AReaderNobodyWritesToFailsAfterTheTimeout) {
  LocalSession session;
  auto ds = moka::testing::make_datasets(session, 1, "qt_r");
  auto q = Queue::make(4, {.schema = val_record(), .timeout_secs = 0.2});
  TaskGroup tg([&] { pipe(q, {.output = ds.dst.writer()}); });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(run_expect_error(session, tg, "SafeDequeueBlobs timed out in 0.2 secs (the queue stayed empty)"));
  EXPECT_GE(seconds_since(t0), 0.15);
}

TEST(QueueTimeout, AWriterNobodyReadsFromFailsAfterTheTimeout) {
  LocalSession session;
  auto ds = moka::testing::make_datasets(session, 10, "qt_w");
  auto q = Queue::make(1, {.timeout_secs = 0.2});
  TaskGroup tg([&] { pipe(ds.src.reader({.batch_size = 1}), {.output = q}); });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(run_expect_error(session, tg, "SafeEnqueueBlobs timed out in 0.2 secs (the queue stayed full)"));
  EXPECT_GE(seconds_since(t0), 0.15);
}

TEST(QueueTimeout, AMovingQueueDeliversEveryRecord) {
  for (int64_t records : {1, 3}) {
    LocalSession session;
    auto ds = moka::testing::make_datasets(session, 100, "qt_ok");
    auto q = Queue::make(2, {.num_dequeue_records = records, .timeout_secs = 30});
    TaskGroup tg([&] {
      pipe(ds.src.reader({.batch_size = 3}), {.output = q});
      pipe(q, {.output = ds.dst.writer()});
    });
    session.run(tg);
    std::vector<int64_t> want(100);
    for (int64_t i = 0; i < 100; ++i) want[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(moka::testing::sorted_vals(session, ds.dst), want) << "num_dequeue_records " << records;
  }
}

}  // namespace
}  // namespace moka
