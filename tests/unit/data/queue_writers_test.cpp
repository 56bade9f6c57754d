// Unit tests: several writer pipes into one Queue — the queue closes when the last writer task exits
// (no writer's records are lost when another finishes first), and a writer whose record fields differ
// from the queue's is refused at build time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "moka/moka.h"
#include "moka/operators/blobs_queue.h"
#include "support/invalid_input.h"
#include "support/pipe_datasets.h"
#include "support/run_expect_error.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using moka::testing::invalid_input;
using moka::testing::run_expect_error;
using moka::testing::sorted_vals;
using schema::Field;

// A dataset fed into the session's workspace whose int64 columns are named `names`, each holding
// from, from + 1, ..., from + n - 1.
Dataset make_source(LocalSession& session, const std::string& name, const std::vector<std::string>& names, int64_t from,
                    int64_t n) {
  Net init(name + "_init");
  NameScope scope(name);
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  std::vector<std::pair<std::string, Field>> fields;
  for (const auto& f : names) fields.emplace_back(f, schema::Scalar(Tensor::vector<int64_t>(v)));
  schema::Struct values(fields);
  Field blobs = name_scope("src", [&] { return schema::NewRecord(init, values); });
  schema::FeedRecord(blobs, values, session.workspace());
  session.run(init);
  return Dataset(blobs, name + "_src");
}

// An empty dataset with one int64 column "val".
Dataset make_sink(LocalSession& session, const std::string& name) {
  Net init(name + "_init");
  NameScope scope(name);
  schema::Struct values({{"val", schema::Scalar(Tensor::vector<int64_t>({0}))}});
  Dataset dst(values.clone_schema(), name + "_dst");
  name_scope("dst", [&] { dst.init_empty(init); });
  session.run(init);
  return dst;
}

// A processor that passes records through, sleeping per record: this writer is still writing
// long after a fast one has finished.
Processor slow_identity() {
  return Processor(
      [](const Field& rec) {
        ops::call([](std::span<Blob* const>, std::span<Blob* const>) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        });
        return rec;
      },
      "slow");
}

// 0..49 from the fast writer and 1000..1049 from the slow one, each `times` times, sorted.
std::vector<int64_t> expected_rows(int times) {
  std::vector<int64_t> v;
  for (int t = 0; t < times; ++t)
    for (int64_t i = 0; i < 50; ++i) {
      v.push_back(i);
      v.push_back(1000 + i);
    }
  std::sort(v.begin(), v.end());
  return v;
}

// Two writer pipes (one fast, one slow) of 50 distinct rows each into one small Queue, read by a
// third pipe into a dataset. Before the fix the fast writer's exit closed the queue and the slow
// writer's remaining rows were dropped without an error.
void run_two_writers(int32_t writer_threads, const std::string& name) {
  LocalSession session;
  Dataset fast = make_source(session, name + "a", {"val"}, 0, 50);
  Dataset slow = make_source(session, name + "b", {"val"}, 1000, 50);
  Dataset dst = make_sink(session, name + "d");
  std::shared_ptr<Queue> q = Queue::make(2, {.name = name + "_q"});
  TaskGroup tg([&] {
    pipe(fast.reader(), {.output = q, .name = name + "_fast", .num_runtime_threads = writer_threads});
    pipe(slow.reader(),
         {.output = q, .processor = slow_identity(), .name = name + "_slow", .num_runtime_threads = writer_threads});
    pipe(q, {.output = dst.writer(), .name = name + "_read"});
  });
  EXPECT_EQ(q->num_writer_tasks(), 2);
  for (int times = 1; times <= 2; ++times) {
    // The second run checks that the count of writers still running is reset with the queue.
    auto run = std::async(std::launch::async, [&] { session.run(tg); });
    ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the run hangs";
    run.get();
    // Every row of both writers, each once per run.
    EXPECT_EQ(sorted_vals(session, dst), expected_rows(times)) << "run " << times;
    EXPECT_TRUE(session.workspace().blob(q->queue().name()).get<BlobsQueuePtr>()->is_closed());
  }
}

TEST(QueueWriters, TwoWriterPipesLoseNoRecords) { run_two_writers(1, "qw1"); }

// Each writer pipe runs two task instances: an instance that ends must not close the queue while
// its sibling instance or the other pipe still writes.
TEST(QueueWriters, TwoWriterPipesWithTwoRuntimeThreadsLoseNoRecords) { run_two_writers(2, "qw2"); }

// Static threads (one workspace, the deprecated num_threads path) close on the task's exit too.
TEST(QueueWriters, TwoWriterPipesWithStaticThreadsLoseNoRecords) {
  LocalSession session;
  Dataset fast = make_source(session, "qwsa", {"val"}, 0, 50);
  Dataset slow = make_source(session, "qwsb", {"val"}, 1000, 50);
  Dataset dst = make_sink(session, "qwsd");
  std::shared_ptr<Queue> q = Queue::make(2, {.name = "qws_q"});
  TaskGroup tg([&] {
    pipe(fast.reader(), {.output = q, .num_threads = 2, .name = "qws_fast"});
    pipe(slow.reader(), {.output = q, .num_threads = 2, .processor = slow_identity(), .name = "qws_slow"});
    pipe(q, {.output = dst.writer(), .name = "qws_read"});
  });
  auto run = std::async(std::launch::async, [&] { session.run(tg); });
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the run hangs";
  run.get();
  EXPECT_EQ(sorted_vals(session, dst), expected_rows(1));
}

// One writer closes the queue on its exit, as in Caffe2: the reader stops after the last row.
TEST(QueueWriters, SingleWriterClosesOnExit) {
  LocalSession session;
  Dataset src = make_source(session, "qwo", {"val"}, 0, 50);
  Dataset dst = make_sink(session, "qwod");
  std::shared_ptr<Queue> q = Queue::make(3, {.name = "qwo_q"});
  TaskGroup tg([&] {
    pipe(src.reader(), {.output = q});
    pipe(q, {.output = dst.writer()});
  });
  EXPECT_EQ(q->num_writer_tasks(), 1);
  auto run = std::async(std::launch::async, [&] { session.run(tg); });
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the run hangs";
  run.get();
  std::vector<int64_t> want(50);
  std::iota(want.begin(), want.end(), int64_t{0});
  EXPECT_EQ(sorted_vals(session, dst), want);
}

// A writer task that fails never reaches its exit, so the count never reaches zero; the failure
// cancels the run, which closes the queue in the blocked reader: the run ends with the error and
// nothing stays blocked.
TEST(QueueWriters, FailingWriterStillEndsWithTheQueueClosed) {
  LocalSession session;
  Dataset good = make_source(session, "qwfa", {"val"}, 0, 50);
  Dataset bad = make_source(session, "qwfb", {"val"}, 1000, 50);
  Dataset dst = make_sink(session, "qwfd");
  std::shared_ptr<Queue> q = Queue::make(2, {.name = "qwf_q"});
  std::atomic<int> seen{0};
  TaskGroup tg([&] {
    pipe(good.reader(), {.output = q, .processor = slow_identity(), .name = "qwf_good"});
    pipe(bad.reader(), {.output = q,
                        .processor = Processor(
                            [&](const Field& rec) {
                              ops::call([&](std::span<Blob* const>, std::span<Blob* const>) {
                                if (++seen == 10) throw RuntimeError("writer failed on purpose");
                              });
                              return rec;
                            },
                            "thrower")});
    pipe(q, {.output = dst.writer(), .name = "qwf_read"});
  });
  EXPECT_TRUE(run_expect_error(session, tg, "writer failed on purpose", std::chrono::seconds(60)));
  EXPECT_TRUE(session.workspace().blob(q->queue().name()).get<BlobsQueuePtr>()->is_closed());
}

// A second writer whose fields have other names: refused while the pipe is built, naming the
// queue and both field lists (before, readers got its values under the first writer's names).
TEST(QueueWriters, WriterWithOtherFieldNamesIsRefusedAtBuildTime) {
  LocalSession session;
  Dataset first = make_source(session, "qwna", {"val"}, 0, 5);
  Dataset other = make_source(session, "qwnb", {"other"}, 0, 5);
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "qwn_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    pipe(first.reader(), {.output = q});
    const std::string msg = invalid_input([&] { pipe(other.reader(), {.output = q}); });
    EXPECT_NE(msg.find(q->queue().name()), std::string::npos) << msg;
    EXPECT_NE(msg.find("[other]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
  // The refused writer's task is not kept, and does not count as a writer the queue waits for.
  EXPECT_EQ(tg.tasks().size(), 1u);
  EXPECT_EQ(q->num_writer_tasks(), 1);
}

// A second writer with another number of fields: refused the same way (before, it failed only when
// the run reached SafeEnqueueBlobs).
TEST(QueueWriters, WriterWithOtherFieldCountIsRefusedAtBuildTime) {
  LocalSession session;
  Dataset first = make_source(session, "qwca", {"val"}, 0, 5);
  Dataset wider = make_source(session, "qwcb", {"val", "extra"}, 0, 5);
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "qwc_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    pipe(first.reader(), {.output = q});
    const std::string msg = invalid_input([&] { pipe(wider.reader(), {.output = q}); });
    EXPECT_NE(msg.find(q->queue().name()), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val, extra]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
}

// A queue made with a schema refuses even its first writer when the fields differ.
TEST(QueueWriters, WriterAgainstTheQueuesOwnSchemaIsChecked) {
  LocalSession session;
  Dataset other = make_source(session, "qwsc", {"other"}, 0, 5);
  std::shared_ptr<Queue> q = Queue::make(4, {.schema = schema::Struct({{"val", schema::Scalar()}}), .name = "qwsc_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    const std::string msg = invalid_input([&] { pipe(other.reader(), {.output = q}); });
    EXPECT_NE(msg.find("[other]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
  // A writer without a schema is checked by its field count.
  Net net("qwsc_write");
  auto writer = q->writer();
  const std::string msg = invalid_input([&] { writer->write(net, {BlobRef("a"), BlobRef("b")}); });
  EXPECT_NE(msg.find("2 fields"), std::string::npos) << msg;
}

}  // namespace
}  // namespace moka
