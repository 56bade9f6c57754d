// Traces of real runs (docs/tracing.md): a reader node feeding two trainer nodes through a shared queue, on worker
// threads and on fibers, at each level; the trace's structure (spans closed and nested, nodes and threads named)
// and what each level records.
#include <gtest/gtest.h>

#include "moka/moka.h"
#include "support/cross_node_queue.h"
#include "support/pipe_datasets.h"
#include "support/temp_dir.h"
#include "support/trace_check.h"

namespace moka {
namespace {

using testing::CrossNodeFeed;

testing::TraceContents traced_feed(TraceLevel level, Concurrency concurrency, const std::string& path) {
  LocalSessionOptions options;
  options.run.concurrency = concurrency;
  LocalSession session(options);
  CrossNodeFeed feed({.trainers = 2, .records = 400, .batch = 4, .capacity = 2});
  feed.set_up(session);
  {
    ScopedTrace trace({.path = path, .level = level});
    EXPECT_TRUE(trace_running());
    feed.feed(session);
    const TraceSummary summary = trace.finish();
    EXPECT_EQ(summary.path, path);
    EXPECT_GT(summary.events, 0);
    EXPECT_EQ(summary.dropped, 0);
  }
  EXPECT_FALSE(trace_running());
  EXPECT_EQ(feed.summed(session), feed.expected(1));  // tracing changes nothing in what runs
  return testing::check_trace(path);
}

TEST(TraceSession, NodesThreadsStepsNetsAndOperators) {
  for (Concurrency concurrency : {Concurrency::threads, Concurrency::fibers}) {
    SCOPED_TRACE(concurrency == Concurrency::threads ? "threads" : "fibers");
    testing::TempDir dir;
    const testing::TraceContents t = traced_feed(TraceLevel::ops, concurrency, dir / "ops.json");
    for (const char* node : {"node reader", "node t0", "node t1"}) {
      const bool named = std::any_of(t.process_names.begin(), t.process_names.end(),
                                     [&](const std::string& n) { return n.rfind(node, 0) == 0; });
      EXPECT_TRUE(named) << node;
    }
    EXPECT_GT(t.spans_by_category.count("step"), 0u);
    EXPECT_GT(t.spans_by_category.count("net"), 0u);
    EXPECT_GT(t.spans_by_category.count("op"), 0u);
    const bool pipe_step = std::any_of(t.span_names.begin(), t.span_names.end(),
                                       [](const std::string& n) { return n.find("feed") != std::string::npos; });
    EXPECT_TRUE(pipe_step) << "the reader's pipe step; spans: " << ::testing::PrintToString(t.span_names)
                           << " threads: " << ::testing::PrintToString(t.thread_names);
  }
}

// The threads of a pipe taking turns as fibers on one thread: each fiber's spans on a track of its own.
TEST(TraceSession, FibersOfAPipeRecordOnTracksOfTheirOwn) {
  LocalSessionOptions options;
  options.run.concurrency = Concurrency::fibers;
  LocalSession session(options);
  testing::Datasets ds = testing::make_datasets(session, 300, "fib");
  TaskGroup tg([&] { pipe(ds.src.reader({.batch_size = 2}), {.output = ds.dst.writer(), .num_runtime_threads = 3}); });
  testing::TempDir dir;
  {
    ScopedTrace trace({.path = dir / "fibers.json", .level = TraceLevel::nets});
    session.run(tg);
  }
  EXPECT_EQ(testing::sorted_vals(session, ds.dst).size(), 300u);
  const testing::TraceContents t = testing::check_trace(dir / "fibers.json");
  const auto fiber_tracks = std::count_if(t.thread_names.begin(), t.thread_names.end(),
                                          [](const std::string& n) { return n.find(" fiber ") != std::string::npos; });
  EXPECT_GE(fiber_tracks, 3) << ::testing::PrintToString(t.thread_names);
}

TEST(TraceSession, TheDefaultLevelRecordsStepsButNotNets) {
  testing::TempDir dir;
  const testing::TraceContents t = traced_feed(TraceLevel::steps, Concurrency::threads, dir / "steps.json");
  EXPECT_GT(t.spans_by_category.count("step"), 0u);
  EXPECT_EQ(t.spans_by_category.count("net"), 0u);
  EXPECT_EQ(t.spans_by_category.count("op"), 0u);
  EXPECT_EQ(t.json["otherData"]["level"], "steps");
}

TEST(TraceSession, WaitsOnAFullQueueAreSpans) {
  testing::TempDir dir;
  // capacity 2 and two slow consumers: the reader's pipe waits on put.
  const testing::TraceContents t = traced_feed(TraceLevel::steps, Concurrency::threads, dir / "waits.json");
  const bool waited = std::any_of(t.span_names.begin(), t.span_names.end(), [](const std::string& n) {
    return n.rfind("put ", 0) == 0 || n.rfind("take ", 0) == 0;
  });
  EXPECT_TRUE(waited) << "no wait span";
}

TEST(TraceSession, QueueDepthsAndPipeRatesAreCounters) {
  LocalSession session;
  CrossNodeFeed feed({.trainers = 2, .records = 20000, .batch = 2, .capacity = 4});
  feed.set_up(session);
  testing::TempDir dir;
  {
    ScopedTrace trace({.path = dir / "counters.json", .sample_period = std::chrono::milliseconds(1)});
    feed.feed(session);
    feed.feed(session);
  }
  const testing::TraceContents t = testing::check_trace(dir / "counters.json");
  EXPECT_TRUE(t.counter_names.contains("queue depth")) << ::testing::PrintToString(t.counter_names);
  EXPECT_TRUE(t.counter_names.contains("pipe batches/s")) << ::testing::PrintToString(t.counter_names);
  EXPECT_TRUE(t.counter_names.contains("pipe records/s")) << ::testing::PrintToString(t.counter_names);
}

TEST(TraceSession, NothingIsRecordedWhenOff) {
  LocalSession session;
  CrossNodeFeed feed({.trainers = 1, .records = 40, .batch = 4, .capacity = 2});
  feed.set_up(session);
  EXPECT_FALSE(trace_enabled());
  feed.feed(session);
  EXPECT_EQ(stop_trace().events, 0);  // no trace running: nothing written
}

}  // namespace
}  // namespace moka
