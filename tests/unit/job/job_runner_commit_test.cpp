// JobRunner with committed checkpoints: every epoch gets a manifest, resume_latest picks the newest
// epoch that verifies (skipping a corrupt one), an uncommitted epoch cannot be resumed, retention,
// and decision 13 (resuming the final epoch runs no further epoch).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/temp_dir.h"
#include "unit/job/summing_job.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

struct CommitDir : moka::testing::TempDir {
  CommitDir() : moka::testing::TempDir("moka_job_commit") {}
};

using moka::testing::summing_job;

std::vector<std::string> logged;
JobRunnerOptions with_log(JobRunnerOptions o) {
  o.log = [](std::string_view m) { logged.emplace_back(m); };
  return o;
}

TEST(JobRunnerCommit, EveryEpochIsCommittedWithAManifest) {
  CommitDir dir;
  LocalSession session;
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  EXPECT_EQ(JobRunner(summing_job(4), cm).train(session), 4);
  EXPECT_EQ(session.fetch("n", "total").item<int64_t>(), 10);
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const CheckpointManifest last = verify_checkpoint(dir.str(), 4);
  EXPECT_TRUE(last.stop);
  ASSERT_EQ(last.files.size(), 1u);
  EXPECT_EQ(last.files[0].node, "n");
  EXPECT_EQ(last.files[0].db, "n.4");  // relative: the directory is self-contained
  EXPECT_EQ(checkpoint_db_path(dir.str(), last.files[0]), dir.str() + "/n.4");
  EXPECT_FALSE(verify_checkpoint(dir.str(), 3).stop);
}

// A resumed run uses the same Job object (its blob names are the checkpoint's), as Caffe2's tests do.
TEST(JobRunnerCommit, ResumeLatestSkipsACorruptEpochAndEndsTheSame) {
  CommitDir dir;
  Job job = summing_job(5);
  {
    LocalSession session;
    JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(session);
  }
  // As if killed before epoch 4 committed, with epoch 3's file damaged afterwards.
  fs::remove(manifest_path(dir.str(), 5));
  fs::remove(manifest_path(dir.str(), 4));
  fs::resize_file(dir.str() + "/n.3", fs::file_size(dir.str() + "/n.3") - 1);
  logged.clear();
  LocalSession session;
  JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"),
                   with_log({.resume_latest = true}));
  EXPECT_EQ(runner.train(session), 5);
  EXPECT_EQ(session.fetch("n", "total").item<int64_t>(), 15);
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("skipping checkpoint epoch 3"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("n.3"), std::string::npos) << logged[0];
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

// Resuming from epoch 2 of a run that committed up to 5: before the save of epoch 3 overwrites
// n.3, epoch 3's old manifest is removed. Here that save fails (n.3 is now a non-empty directory),
// so epoch 3 must be left uncommitted, not pointing at a DB the failed save may have touched.
TEST(JobRunnerCommit, AnEpochIsUncommittedBeforeAResumedRunOverwritesIt) {
  CommitDir dir;
  Job job = summing_job(5);
  {
    LocalSession session;
    JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(session);
  }
  fs::remove(dir.str() + "/n.3");
  fs::create_directories(dir.str() + "/n.3/in-the-way");
  LocalSession session;
  JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"), {.resume_from_epoch = 2});
  EXPECT_THROW(runner.train(session), Error);
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1, 2, 4, 5}));
}

// The job engine's failure policy (decision 8), as run_job has it: the failed save is logged and
// counted, and the training ends with RuntimeError carrying the logged line.
TEST(JobRunnerCommit, AnUntoleratedFailedSaveThrowsTheLineItLogs) {
  CommitDir dir;
  fs::create_directories(dir.str() + "/n.1/in-the-way");  // epoch 1's DB cannot be written
  logged.clear();
  LocalSession session;
  JobRunner runner(summing_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"), with_log({}));
  try {
    runner.train(session);
    ADD_FAILURE() << "no RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("Unable to write checkpoint for epoch 1. Error=", 0), 0u) << e.what();
    ASSERT_EQ(logged.size(), 1u);
    EXPECT_EQ(logged[0], e.what());
  }
  EXPECT_EQ(runner.save_failures(), 1);
  EXPECT_NE(runner.last_save_error().find("n.1"), std::string::npos) << runner.last_save_error();
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0}));
}

// Stop conditions are read by run_job's rule: one element of any number type (here uint8).
TEST(JobRunnerCommit, AStopConditionOfAnyNumberTypeEndsTheJob) {
  Job job([&](Job& j) {
    Node("n", [&] {
      j.init_group([&] { Task([&] { ops::Const(int64_t{0}, {.blob_out = "e"}); }); });
      BlobRef done;
      Task([&] {
        ops::Add({"e", ops::Const(int64_t{1})}, {"e"});
        done = ops::Cast(ops::GE({"e", ops::Const(int64_t{2})}), {}, {{"to", DType::UInt8}});
      });
      j.add_stop_condition(done);
    });
  });
  LocalSession session;
  EXPECT_EQ(JobRunner(job).train(session), 2);
}

TEST(JobRunnerCommit, ResumeLatestWithNothingCommittedStartsFromScratch) {
  CommitDir dir;
  LocalSession session;
  JobRunner runner(summing_job(2), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"),
                   {.resume_latest = true});
  EXPECT_EQ(runner.train(session), 2);
  EXPECT_EQ(session.fetch("n", "total").item<int64_t>(), 3);
}

TEST(JobRunnerCommit, AnUncommittedEpochCannotBeResumed) {
  CommitDir dir;
  Job job = summing_job(3);
  {
    LocalSession session;
    JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(session);
  }
  fs::remove(manifest_path(dir.str(), 2));  // n.2 exists, but epoch 2 was never committed
  LocalSession session;
  JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"), {.resume_from_epoch = 2});
  try {
    runner.train(session);
    FAIL() << "resumed from an uncommitted epoch";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("not committed"), std::string::npos) << e.what();
  }
}

TEST(JobRunnerCommit, ResumingTheFinalEpochRunsNoMoreEpochs) {
  CommitDir dir;
  Job job = summing_job(3);
  {
    LocalSession session;
    JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(session);
  }
  LocalSession session;
  JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"), {.resume_from_epoch = 3});
  EXPECT_EQ(runner.train(session), 3);  // Caffe2 would run epoch 4
  EXPECT_EQ(session.fetch("n", "total").item<int64_t>(), 6);
}

TEST(JobRunnerCommit, RetentionKeepsTheNewest) {
  CommitDir dir;
  LocalSession session;
  JobRunner runner(summing_job(6), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "leveldb"),
                   with_log({.retention = {.keep_last = 2}}));
  EXPECT_EQ(runner.train(session), 6);
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{5, 6}));
  EXPECT_FALSE(fs::exists(dir.str() + "/n.4"));
  EXPECT_TRUE(fs::exists(dir.str() + "/n.5"));
}

// Errors a JobRunner can find before anything runs are reported first: a node to checkpoint that
// has no task (it would checkpoint an empty workspace), an unknown operator in a later group.
TEST(JobRunnerCommit, AMisspeltNodeOrABadLaterGroupFailsBeforeTheInitGroupRuns) {
  CommitDir dir;
  const auto expect_refused_before_init = [&](Job job, const std::string& needle) {
    LocalSession session;
    auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
    try {
      JobRunner(job, cm).train(session);
      ADD_FAILURE() << "the job ran";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(session.workspace("n").has_blob("total")) << "the init group ran";
    EXPECT_TRUE(committed_epochs(dir.str()).empty());
  };
  Job bad_exit = summing_job(2);
  TaskOptions on_n;
  on_n.node = "n";
  on_n.group = &bad_exit.exit_group();
  // Built ops are checked as they are added; a net in an argument (If's then_net) only by check_plan.
  // Built first, in a process where nothing has run a net yet: the builder knows If by itself.
  Task(on_n, [] {
    Argument then_net;
    then_net.name = "then_net";
    NetDef inner;
    inner.name = "inner";
    inner.op.push_back(make_op("NoSuchOperator", {}, {}));
    then_net.n = std::make_shared<const NetDef>(inner);
    ops::op("If", {ops::Const(true)}, 0, {Arg(then_net)});
  });
  JobOptions misspelt;
  misspelt.nodes_to_checkpoint = std::vector<std::string>{"n", "m"};
  Job with_misspelt_node(misspelt);
  with_misspelt_node.build([](Job& j) {
    Node("n", [&] {
      j.init_group([] { Task([] { ops::Const(int64_t{0}, {.blob_out = "total"}); }); });
      Task([] { ops::Add({"total", ops::Const(int64_t{1})}, {"total"}); });
      epoch_limiter(j, 2);
    });
  });
  expect_refused_before_init(with_misspelt_node, "node \"m\", which has no task");
  expect_refused_before_init(bad_exit, "exit_group");
}

}  // namespace
}  // namespace moka
