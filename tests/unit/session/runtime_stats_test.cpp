// Runtime stats seen by a report step (docs/queues.md §6, docs/pipelines.md §5.1, docs/tasks.md §3.3): a pipe feeds a
// queue that a second pipe drains, and the node's report step exports the stat registry once the tasks finished. It
// finds each task's runs and busy time, the queue's records and waits and each pipe's batches and records.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

TEST(RuntimeStats, AReportStepExportsQueueAndPipeStats) {
  LocalSession session;
  std::optional<schema::Field> data;
  TaskGroup init(WorkspaceType::Global, [&] {
    Node("local", [&] {
      Task([&] {
        std::vector<int64_t> vals(100);
        std::iota(vals.begin(), vals.end(), 0);
        data = schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
        ops::Const(std::vector<int64_t>(10, 0), {.blob_out = "total"});
      });
    });
  });
  session.run(init);
  std::map<std::string, int64_t> records_before;  // the registry is process-wide (a repeated test counts again)
  for (const PipeCounts& p : pipe_counts(StatRegistry::global().export_all(/*reset=*/false)))
    records_before[p.label] = p.records;
  TaskGroup run(WorkspaceType::Global, [&] {
    auto queue = Queue::make(2, {.name = "stats_e2e"});
    Node("local", [&] {
      Dataset ds(*data, "records");
      pipe(ds.reader({.batch_size = 10}), {.output = queue, .name = "stats_feed"});
      pipe(queue, {.processor = Processor(
                       [](const schema::Field& rec) {
                         ops::Add({BlobRef("total"), rec["val"]()}, {BlobRef("total")});
                       },
                       "stats_tally")});
      ops::local_reporter(100000, [] {
        ops::op("StatRegistryExport", {}, {BlobRef("stat_keys"), BlobRef("stat_values"), BlobRef("stat_ts")},
                {{"reset", int64_t{0}}});
      });
    });
  });
  session.run(run);
  const Tensor keys = session.fetch("local", "stat_keys");
  const Tensor values = session.fetch("local", "stat_values");
  std::map<std::string, int64_t> stats;
  for (int64_t i = 0; i < keys.numel(); ++i)
    stats[keys.values<std::string>()[static_cast<std::size_t>(i)]] =
        values.values<int64_t>()[static_cast<std::size_t>(i)];
  EXPECT_EQ(stats["queue/stats_e2e/puts"], 10) << ::testing::PrintToString(stats);
  EXPECT_EQ(stats["queue/stats_e2e/takes"], 10);
  EXPECT_EQ(stats["queue/stats_e2e/capacity"], 2);
  EXPECT_EQ(stats["queue/stats_e2e/depth"], 0);
  EXPECT_TRUE(stats.contains("queue/stats_e2e/put_blocked_ns"));
  EXPECT_TRUE(stats.contains("queue/stats_e2e/take_blocked_ns"));
  // Each task ran once by the report's final run (decision 69).
  for (const char* task : {"local/task/stats_feed", "local/task/stats_tally"}) {
    EXPECT_EQ(stats[std::string(task) + "/runs"], 1) << task;
    EXPECT_GT(stats[std::string(task) + "/busy_ns"], 0) << task;
  }
  std::map<std::string, int64_t> batches;
  std::map<std::string, int64_t> records;
  for (const PipeCounts& p : pipe_counts(StatRegistry::global().export_all(/*reset=*/false))) {
    batches[p.label] = p.batches;
    if (p.counts_records) records[p.label] = p.records - records_before[p.label];
  }
  EXPECT_GE(batches["local/stats_feed"], 10) << ::testing::PrintToString(batches);
  EXPECT_GE(batches["local/stats_tally"], 10);
  // Both pipes count the 100 records they read: the feed without a processor, the tally through its processor.
  EXPECT_EQ(records["local/stats_feed"], 100) << ::testing::PrintToString(records);
  EXPECT_EQ(records["local/stats_tally"], 100);
  const Tensor total_blob = session.fetch("local", "total");
  const auto total = total_blob.values<int64_t>();
  EXPECT_EQ(std::accumulate(total.begin(), total.end(), int64_t{0}), 99 * 100 / 2);  // every record once
}

}  // namespace
}  // namespace moka
