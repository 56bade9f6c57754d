// JobRunner with background_save: the same committed checkpoints as foreground saves, a failed
// background save reported under its own epoch (fatal, or tolerated), retention and resume (across
// processes: tests/mpi/mpi_job_test.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/temp_dir.h"
#include "unit/job/summing_job.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

struct BgDir : moka::testing::TempDir {
  BgDir() : moka::testing::TempDir("moka_job_bg") {}
};

// The shared one-node job with 100,000 weights doubled every epoch.
Job weighted_job(int64_t epochs) { return moka::testing::summing_job(epochs, 100'000); }

// Each committed epoch's node digests.
std::vector<DbDigest> digests(const std::string& dir) {
  std::vector<DbDigest> out;
  for (int64_t e : committed_epochs(dir))
    for (const auto& f : verify_checkpoint(dir, e).files) out.push_back(f.digest);
  return out;
}

TEST(JobRunnerBackground, WritesTheSameCommittedCheckpointsAsForegroundSaves) {
  BgDir fg, bg;
  Job job = weighted_job(5);
  LocalSession s1, s2;
  EXPECT_EQ(JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(fg.str(), "minidb")).train(s1), 5);
  EXPECT_EQ(JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(bg.str(), "minidb"), {.background_save = true})
                .train(s2),
            5);
  EXPECT_EQ(s2.fetch("n", "total").item<int64_t>(), 15);
  EXPECT_EQ(committed_epochs(bg.str()), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(verify_checkpoint(bg.str(), 5).stop);
  EXPECT_TRUE(digests(fg.str()) == digests(bg.str()));

  // A run resumed from a background-saved epoch ends as the uninterrupted one.
  fs::remove(manifest_path(bg.str(), 5));
  fs::remove(manifest_path(bg.str(), 4));
  LocalSession s3;
  JobRunner resumed(job, std::make_shared<MultiNodeCheckpointManager>(bg.str(), "minidb"),
                    {.resume_latest = true, .background_save = true});
  EXPECT_EQ(resumed.train(s3), 5);
  EXPECT_EQ(s3.fetch("n", "total").item<int64_t>(), 15);
  EXPECT_TRUE(digests(fg.str()) == digests(bg.str()));
}

// What the metadata handler hears: write(epoch) and the save's stats, in order.
struct RecordingHandler : CheckpointMetadataHandler {
  std::vector<std::string> calls;
  std::vector<CheckpointStats> saves;
  void set_params(const std::string&, const std::string&, const std::vector<std::string>&,
                  const std::optional<std::string>&, const std::optional<std::string>&) override {}
  std::optional<int64_t> last_epoch(std::optional<int64_t> user_epoch) override { return user_epoch; }
  void write(int64_t epoch) override { calls.push_back(fmt::format("write({})", epoch)); }
  void report(const std::string& action, const CheckpointStats& stats) override {
    calls.push_back(fmt::format("report({})", action));
    if (action == "checkpoint_save") saves.push_back(stats);
  }
  bool cp_accessible(std::optional<int64_t>) override { return true; }
};

// Background saves report as foreground ones do: write(E), then each node DB's save duration.
TEST(JobRunnerBackground, ReportsEachSavesDurationToTheMetadataHandler) {
  BgDir dir;
  auto handler = std::make_shared<RecordingHandler>();
  LocalSession session;
  EXPECT_EQ(JobRunner(weighted_job(2), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb", handler),
                      {.background_save = true})
                .train(session),
            2);
  EXPECT_EQ(handler->calls,
            (std::vector<std::string>{"write(0)", "report(checkpoint_save)", "write(1)", "report(checkpoint_save)",
                                      "write(2)", "report(checkpoint_save)"}));
  ASSERT_EQ(handler->saves.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    ASSERT_EQ(handler->saves[e].size(), 1u) << "epoch " << e;
    EXPECT_EQ(handler->saves[e].begin()->first, dir.str() + fmt::format("/n.{}", e));
    EXPECT_GT(handler->saves[e].begin()->second, 0) << "epoch " << e;
  }
}

TEST(JobRunnerBackground, AFailedSaveIsReportedUnderItsOwnEpoch) {
  for (const bool tolerate : {false, true}) {
    BgDir dir;
    // n.2 cannot be written: its path is a non-empty directory. The failure happens on the writer
    // thread and surfaces when epoch 3's save waits for it.
    fs::create_directories(dir.str() + "/n.2/in-the-way");
    std::vector<std::string> logged;
    JobRunnerOptions opt{.tolerate_save_failures = tolerate, .background_save = true};
    opt.log = [&](std::string_view m) { logged.emplace_back(m); };
    LocalSession session;
    JobRunner runner(weighted_job(4), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"), opt);
    if (tolerate) {
      EXPECT_EQ(runner.train(session), 4);
      EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1, 3, 4}));
    } else {
      EXPECT_THROW(runner.train(session), Error);
      EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1}));
    }
    EXPECT_EQ(runner.save_failures(), 1) << "tolerate " << tolerate;
    EXPECT_NE(runner.last_save_error().find(dir.str() + "/n.2"), std::string::npos) << runner.last_save_error();
    ASSERT_EQ(logged.size(), 1u);
    EXPECT_EQ(logged[0].rfind("Unable to write checkpoint for epoch 2. Error=", 0), 0u) << logged[0];
  }
}

TEST(JobRunnerBackground, RetentionIsAppliedAndLoggedOnTheTrainingThread) {
  BgDir dir;
  std::vector<std::string> logged;
  JobRunnerOptions opt{.retention = {.keep_last = 2}, .background_save = true};
  opt.log = [&](std::string_view m) { logged.emplace_back(m); };
  LocalSession session;
  JobRunner runner(weighted_job(5), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "lmdb"), opt);
  EXPECT_EQ(runner.train(session), 5);
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{4, 5}));
  EXPECT_FALSE(fs::exists(dir.str() + "/n.3"));
  std::vector<std::string> want;
  for (int e = 0; e <= 3; ++e) want.push_back(fmt::format("retention: deleted checkpoint epoch {}", e));
  EXPECT_EQ(logged, want);
}

}  // namespace
}  // namespace moka
