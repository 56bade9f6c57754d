// Unit tests: a job whose trainer nodes split one dataset with sharded readers (tests/support/sharded_job.h),
// under LocalSession — every record read exactly once per pass over 1 to 4 shards, and a run resumed from
// a checkpoint in the middle of a pass ends with the blobs of one that never stopped.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "moka/moka.h"
#include "support/sharded_job.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using testing::ShardedJobShape;

JobDef def_of(const ShardedJobShape& shape) {
  Job job = testing::sharded_job(shape);
  LocalSession compiling;
  return job.compile(compiling);
}

void expect_tallies(Session& session, const ShardedJobShape& shape, const std::string& what) {
  int64_t all = 0;
  for (int i = 0; i < shape.shards; ++i) {
    const auto [total, count] = testing::expected_total_and_count(shape, i);
    EXPECT_EQ(session.fetch(testing::shard_node(i), "total").values<int64_t>()[0], total) << what << ", shard " << i;
    EXPECT_EQ(session.fetch(testing::shard_node(i), "count").values<int64_t>()[0], count) << what << ", shard " << i;
    all += session.fetch(testing::shard_node(i), "total").values<int64_t>()[0];
  }
  // Each epoch reads per_epoch records per shard; a whole number of passes reads every record as often.
  if (shape.epochs * shape.per_epoch * shape.shards % shape.rows == 0) {
    EXPECT_EQ(all, shape.epochs * shape.per_epoch * shape.shards / shape.rows * (shape.rows * (shape.rows - 1) / 2))
        << what;
  }
}

TEST(ShardedJob, EveryRecordIsReadOncePerPassOverOneToFourShards) {
  for (int shards = 1; shards <= 4; ++shards) {
    // A pass over a shard of 24 / shards records takes two epochs.
    const ShardedJobShape shape{.shards = shards, .rows = 24, .per_epoch = 12 / shards, .epochs = 4};
    LocalSession session;
    EXPECT_EQ(run_job(def_of(shape), session).last_epoch, shape.epochs);
    expect_tallies(session, shape, fmt::format("{} shards", shards));
  }
}

TEST(ShardedJob, AResumeInTheMiddleOfAPassReadsWhatTheInterruptedRunHadNot) {
  const ShardedJobShape shape{.shards = 3, .rows = 24, .per_epoch = 3, .epochs = 6};  // a pass: 8 / 3 epochs
  const JobDef def = def_of(shape);
  testing::TempDir dir("moka_sharded");
  {
    LocalSession first;
    EXPECT_EQ(run_job(def, first, {.checkpoint_dir = dir.path()}).last_epoch, shape.epochs);
    expect_tallies(first, shape, "uninterrupted");
  }
  for (int64_t e = 2; e <= shape.epochs; ++e) uncommit_checkpoint(dir.path(), e);  // killed during epoch 2
  LocalSession resumed;
  JobRunOptions options{.checkpoint_dir = dir.path()};
  options.resume_latest = true;
  const JobRunResult r = run_job(def, resumed, options);
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(1));
  EXPECT_EQ(r.last_epoch, shape.epochs);
  expect_tallies(resumed, shape, "resumed from epoch 1");
}

}  // namespace
}  // namespace moka
