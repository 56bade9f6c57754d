// Jobs under MpiSession, run by ctest under mpirun with 1 to 4 ranks (and once without a launcher): a JobDef
// through run_job and a Job through JobRunner end with the blobs they have under LocalSession, on every rank;
// checkpoints across ranks commit every node's DB once, resume the same epoch everywhere (a corrupt file on one
// rank vetoes its epoch) and end as a run that never stopped. Only EXPECT_* (see mpi_session_test.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "support/collective_groups.h"
#include "support/seed_job.h"
#include "support/sharded_job.h"

namespace moka {
namespace {

namespace ops = moka::ops;

constexpr int kNodes = 4;
constexpr int64_t kEpochs = 5;
std::string job_node(int i) { return "t" + std::to_string(i); }

// kNodes trainer nodes: each adds its own number to "total" every epoch, and adds the Allreduce (sum over
// all nodes) of its per-node gradient to "w"; node t0 stops the job after kEpochs epochs.
Job trainers_job() {
  return Job([&](Job& j) {
    for (int i = 0; i < kNodes; ++i) {
      Node(job_node(i), [&] {
        j.init_group([&] {
          Task([&] {
            ops::Const(int64_t{0}, {.blob_out = "total"});
            ops::Const(std::vector<double>{0.0, 0.0, 0.0}, {.blob_out = "w", .dtype = DType::Float});
          });
        });
        Task([&] {
          ops::Add({"total", ops::Const(int64_t{i + 1})}, {"total"});
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          const BlobRef grad =
              ops::Const(std::vector<double>{double(i), 0.5 * i, 1.0}, {.blob_out = "grad", .dtype = DType::Float});
          const BlobRef sum = ops::op("Allreduce", {cw, grad}, {BlobRef("grad_sum")})[0];
          ops::Add({"w", sum}, {"w"});
        });
        if (i == 0) epoch_limiter(j, kEpochs);
      });
    }
  });
}

// Every node's "total" and "w" (fetched through the session: collective under MpiSession).
std::map<std::string, Tensor> blobs_of(Session& session) {
  std::map<std::string, Tensor> out;
  for (int i = 0; i < kNodes; ++i)
    for (const char* blob : {"total", "w"}) out[job_node(i) + "/" + blob] = session.fetch(job_node(i), blob);
  return out;
}

TEST(MpiJob, AJobDefRunsAcrossRanksAsInOneProcess) {
  Job job = trainers_job();
  LocalSession compiling;
  const JobDef def = job.compile(compiling);

  LocalSession local;
  const JobRunResult expected = run_job(def, local);
  MpiSession mpi;
  const JobRunResult got = run_job(def, mpi);
  EXPECT_EQ(expected.last_epoch, kEpochs);
  EXPECT_EQ(got.last_epoch, kEpochs);
  const auto want = blobs_of(local);
  testing::expect_same_tensors(want, blobs_of(mpi));
  // total = 5 epochs x (i + 1); w = 5 x the sum over nodes of grad.
  EXPECT_EQ(want.at("t2/total").item<int64_t>(), kEpochs * 3);
  EXPECT_EQ(want.at("t1/w").data<float>()[0], float(kEpochs * (0 + 1 + 2 + 3)));
}

TEST(MpiJob, JobRunnerTrainsAJobInAnMpiSession) {
  Job local_job = trainers_job();
  Job mpi_job = trainers_job();
  LocalSession local;
  MpiSession mpi;
  EXPECT_EQ(JobRunner(local_job, nullptr).train(local), kEpochs);
  EXPECT_EQ(JobRunner(mpi_job, nullptr).train(mpi), kEpochs);
  testing::expect_same_tensors(blobs_of(local), blobs_of(mpi));
}

// One checkpoint directory that every rank sees: rank 0 makes it, the others learn its path.
std::string shared_dir(Session& session) {
  std::string dir;
  if (session.process() == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moka_mpi_job_XXXXXX").string();
    if (::mkdtemp(tmpl.data())) dir = tmpl;
  }
  dir = session.allgather(dir).front();
  EXPECT_FALSE(dir.empty());
  return dir;
}

void barrier(Session& session) { (void)session.allgather(""); }

JobDef trainers_def() {
  Job job = trainers_job();
  LocalSession compiling;
  return job.compile(compiling);
}

// The manifest of `epoch` in dir, as every rank reads it.
CheckpointManifest manifest_of(const std::string& dir, int64_t epoch) { return verify_checkpoint(dir, epoch); }

TEST(MpiJob, CheckpointsAcrossRanksCommitEveryNodeAsOneProcessDoes) {
  const JobDef def = trainers_def();
  LocalSession local;
  MpiSession mpi;
  const std::string local_dir = shared_dir(mpi) + "_local";
  const std::string dir = shared_dir(mpi);
  if (mpi.rank() == 0) {
    EXPECT_EQ(run_job(def, local, {.checkpoint_dir = local_dir}).last_epoch, kEpochs);
  }
  const JobRunResult got = run_job(def, mpi, {.checkpoint_dir = dir});
  EXPECT_EQ(got.last_epoch, kEpochs);
  barrier(mpi);
  // Every epoch committed once, with a file for every node whoever wrote it, the same DBs as in one process.
  EXPECT_EQ(committed_epochs(dir), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  if (mpi.rank() == 0) {
    for (int64_t e = 0; e <= kEpochs; ++e) {
      const CheckpointManifest m = manifest_of(dir, e);
      const CheckpointManifest want = manifest_of(local_dir, e);
      EXPECT_EQ(m.files.size(), static_cast<size_t>(kNodes));
      EXPECT_EQ(m.files, want.files) << "epoch " << e;
      EXPECT_EQ(m.stop, e == kEpochs);
    }
  }
  barrier(mpi);
  if (mpi.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(local_dir);
  }
}

// What a rank killed after epoch 3 leaves: epochs 4 and 5 not committed (their files may be there).
void uncommit_after(Session& session, const std::string& dir, int64_t last) {
  barrier(session);
  if (session.process() == 0) {
    for (int64_t e : committed_epochs(dir))
      if (e > last) uncommit_checkpoint(dir, e);
  }
  barrier(session);
}

TEST(MpiJob, AResumedRunEndsWithTheBlobsOfOneThatNeverStopped) {
  const JobDef def = trainers_def();
  LocalSession local;
  EXPECT_EQ(run_job(def, local).last_epoch, kEpochs);
  std::string dir;
  {
    MpiSession first;
    dir = shared_dir(first);
    EXPECT_EQ(run_job(def, first, {.checkpoint_dir = dir}).last_epoch, kEpochs);
    uncommit_after(first, dir, 3);
  }
  MpiSession resumed;
  JobRunOptions options{.checkpoint_dir = dir};
  options.resume_latest = true;
  const JobRunResult r = run_job(def, resumed, options);
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(3));
  EXPECT_EQ(r.last_epoch, kEpochs);
  testing::expect_same_tensors(blobs_of(local), blobs_of(resumed));
  barrier(resumed);
  if (resumed.rank() == 0) std::filesystem::remove_all(dir);
}

TEST(MpiJob, ACorruptFileOfOneRankFallsBackToThePreviousEpochOnEveryRank) {
  const JobDef def = trainers_def();
  LocalSession local;
  EXPECT_EQ(run_job(def, local).last_epoch, kEpochs);
  std::string dir;
  std::string victim;
  {
    MpiSession first;
    dir = shared_dir(first);
    EXPECT_EQ(run_job(def, first, {.checkpoint_dir = dir}).last_epoch, kEpochs);
    uncommit_after(first, dir, 4);
    victim = job_node(kNodes - 1);  // hosted by the last rank
    EXPECT_EQ(first.rank_of(victim), (kNodes - 1) % first.size());
    if (first.rank() == 0) {
      // One byte of the victim's epoch-4 DB flipped, in the middle of the file.
      const auto path = std::filesystem::path(dir) / get_ckpt_filename(victim, 4);
      std::FILE* f = std::fopen(path.c_str(), "r+b");
      EXPECT_NE(f, nullptr);
      if (f) {
        const auto size = static_cast<long>(std::filesystem::file_size(path));
        std::fseek(f, size / 2, SEEK_SET);
        const int c = std::fgetc(f);
        std::fseek(f, size / 2, SEEK_SET);
        std::fputc(c ^ 0x5a, f);
        std::fclose(f);
      }
    }
    barrier(first);
  }
  MpiSession resumed;
  JobRunOptions options{.checkpoint_dir = dir};
  options.resume_latest = true;
  const JobRunResult r = run_job(def, resumed, options);
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(3));
  EXPECT_EQ(r.skipped.size(), 1u);
  if (!r.skipped.empty()) {
    EXPECT_EQ(r.skipped[0].first, 4);
    EXPECT_NE(r.skipped[0].second.find("node '" + victim + "'"), std::string::npos) << r.skipped[0].second;
    if (resumed.size() > 1) {  // the rank that hosts the node vetoed the epoch
      EXPECT_NE(r.skipped[0].second.find(fmt::format("rank {}", resumed.rank_of(victim))), std::string::npos)
          << r.skipped[0].second;
    }
  }
  EXPECT_EQ(r.last_epoch, kEpochs);
  testing::expect_same_tensors(blobs_of(local), blobs_of(resumed));
  barrier(resumed);
  if (resumed.rank() == 0) std::filesystem::remove_all(dir);
}

TEST(MpiJob, JobRunnerCheckpointsAcrossRanksWithAMultiNodeManagerAndResumes) {
  Job local_job = trainers_job();
  LocalSession local;
  EXPECT_EQ(JobRunner(local_job, nullptr).train(local), kEpochs);
  // One job for both runs, as a restarted program builds the same names again.
  const Job job = trainers_job();
  std::string dir;
  {
    MpiSession first;
    dir = shared_dir(first);
    auto cm = std::make_shared<MultiNodeCheckpointManager>(dir, "minidb");
    EXPECT_EQ(JobRunner(job, cm).train(first), kEpochs);
    barrier(first);
    EXPECT_EQ(committed_epochs(dir), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
    if (first.rank() == 0) {
      EXPECT_EQ(verify_checkpoint(dir, kEpochs).files.size(), static_cast<size_t>(kNodes));
    }
    uncommit_after(first, dir, 2);
  }
  MpiSession resumed;
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir, "minidb");
  JobRunnerOptions options;
  options.resume_latest = true;
  EXPECT_EQ(JobRunner(job, cm, options).train(resumed), kEpochs);
  testing::expect_same_tensors(blobs_of(local), blobs_of(resumed));
  barrier(resumed);
  if (resumed.rank() == 0) std::filesystem::remove_all(dir);
}

// One trainer node per rank, each reading its shard of one dataset; checkpointed every epoch, then resumed
// from the middle of a pass: the same tallies as an uninterrupted run in one process.
TEST(MpiJob, ShardedReadersOnEveryRankReadEachRecordOncePerPassAndResumeMidPass) {
  MpiSession first;
  const testing::ShardedJobShape shape{.shards = first.size(), .rows = 24, .per_epoch = 12 / first.size(), .epochs = 5};
  Job job = testing::sharded_job(shape);
  LocalSession compiling;
  const JobDef def = job.compile(compiling);
  LocalSession local;
  EXPECT_EQ(run_job(def, local).last_epoch, shape.epochs);
  auto tallies = [&](Session& s) {
    std::map<std::string, Tensor> out;
    for (int i = 0; i < shape.shards; ++i)
      for (const char* blob : {"total", "count"})
        out[testing::shard_node(i) + "/" + blob] = s.fetch(testing::shard_node(i), blob);
    return out;
  };
  const auto want = tallies(local);
  for (int i = 0; i < shape.shards; ++i)
    EXPECT_EQ(want.at(testing::shard_node(i) + "/total").values<int64_t>()[0],
              testing::expected_total_and_count(shape, i).first);
  const std::string dir = shared_dir(first);
  EXPECT_EQ(run_job(def, first, {.checkpoint_dir = dir}).last_epoch, shape.epochs);
  testing::expect_same_tensors(want, tallies(first));
  for (int i = 0; i < shape.shards; ++i) EXPECT_EQ(first.rank_of(testing::shard_node(i)), i);
  uncommit_after(first, dir, 1);  // epoch 1 ends in the middle of a pass (a pass takes two epochs)
  MpiSession resumed;
  JobRunOptions options{.checkpoint_dir = dir};
  options.resume_latest = true;
  const JobRunResult r = run_job(def, resumed, options);
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(1));
  testing::expect_same_tensors(want, tallies(resumed));
  barrier(resumed);
  if (resumed.rank() == 0) std::filesystem::remove_all(dir);
}

// Background saves across ranks: each rank's writer thread writes its nodes' snapshots and agrees on the
// commit over a channel of its own while the next epoch runs; the same files as a foreground save, and a
// resume from them ends as an uninterrupted run. Through run_job and through JobRunner.
TEST(MpiJob, BackgroundSavesAcrossRanksCommitTheFilesOfAForegroundSave) {
  const JobDef def = trainers_def();
  LocalSession local;
  MpiSession mpi;
  const std::string fg = shared_dir(mpi) + "_fg";
  const std::string bg = shared_dir(mpi);
  EXPECT_EQ(run_job(def, local).last_epoch, kEpochs);
  if (mpi.rank() == 0) {
    LocalSession foreground;
    EXPECT_EQ(run_job(def, foreground, {.checkpoint_dir = fg}).last_epoch, kEpochs);
  }
  JobRunOptions options{.checkpoint_dir = bg};
  options.background_save = true;
  int written = 0;
  options.on_checkpoint_written = [&](const CheckpointWritten& w) { written += w.ok ? 1 : 0; };
  EXPECT_EQ(run_job(def, mpi, options).last_epoch, kEpochs);
  EXPECT_EQ(written, kEpochs + 1);
  barrier(mpi);
  EXPECT_EQ(committed_epochs(bg), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  if (mpi.rank() == 0) {
    for (int64_t e = 0; e <= kEpochs; ++e) EXPECT_EQ(verify_checkpoint(bg, e).files, verify_checkpoint(fg, e).files);
  }
  uncommit_after(mpi, bg, 2);
  MpiSession resumed;
  options.resume_latest = true;
  const JobRunResult r = run_job(def, resumed, options);
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(2));
  testing::expect_same_tensors(blobs_of(local), blobs_of(resumed));
  barrier(resumed);
  if (resumed.rank() == 0) {
    std::filesystem::remove_all(bg);
    std::filesystem::remove_all(fg);
  }
}

// One rank's background write fails (its node's DB path of epoch 3 is a directory): every rank learns it
// from the writers' agreement, tolerates the same error, and epoch 3 alone is missing.
TEST(MpiJob, AFailedBackgroundWriteOnOneRankIsTheSameFailureOnEveryRank) {
  const JobDef def = trainers_def();
  MpiSession mpi;
  const std::string dir = shared_dir(mpi);
  const std::string victim = job_node(kNodes - 1);
  if (mpi.rank() == 0)
    std::filesystem::create_directories(std::filesystem::path(dir) / get_ckpt_filename(victim, 3) / "x");
  barrier(mpi);
  JobRunOptions options{.checkpoint_dir = dir};
  options.background_save = true;
  options.tolerate_save_failures = true;
  const JobRunResult r = run_job(def, mpi, options);
  EXPECT_EQ(r.last_epoch, kEpochs);
  EXPECT_EQ(r.save_errors.size(), 1u);
  if (!r.save_errors.empty()) {
    EXPECT_NE(r.save_errors[0].find("epoch 3"), std::string::npos) << r.save_errors[0];
    if (mpi.size() > 1) {
      EXPECT_NE(r.save_errors[0].find(fmt::format("rank {}", mpi.rank_of(victim))), std::string::npos)
          << r.save_errors[0];
    }
  }
  // Every rank holds the same message.
  const auto all = mpi.allgather(r.save_errors.empty() ? std::string() : r.save_errors[0]);
  for (const auto& e : all) EXPECT_EQ(e, all.front());
  barrier(mpi);
  EXPECT_EQ(committed_epochs(dir), (std::vector<int64_t>{0, 1, 2, 4, 5}));
  barrier(mpi);
  if (mpi.rank() == 0) std::filesystem::remove_all(dir);
}

TEST(MpiJob, JobRunnerSavesInTheBackgroundAcrossRanks) {
  Job local_job = trainers_job();
  LocalSession local;
  EXPECT_EQ(JobRunner(local_job, nullptr).train(local), kEpochs);
  const Job job = trainers_job();
  MpiSession mpi;
  const std::string dir = shared_dir(mpi);
  JobRunnerOptions options;
  options.background_save = true;
  EXPECT_EQ(JobRunner(job, std::make_shared<MultiNodeCheckpointManager>(dir, "minidb"), options).train(mpi), kEpochs);
  testing::expect_same_tensors(blobs_of(local), blobs_of(mpi));
  barrier(mpi);
  EXPECT_EQ(committed_epochs(dir), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  barrier(mpi);
  if (mpi.rank() == 0) std::filesystem::remove_all(dir);
}

// The seed's job for real: its reader on rank 0 feeding one trainer on each other rank through a queue that lives
// on the reader, checkpointed every epoch; the trainers' totals add up to the seed's 145, as in one process, in
// a run resumed after epoch 2 too, and every epoch's checkpoint holds every node's DB.
TEST(MpiJob, TheSeedJobsReaderRankFeedsTrainerRanksAndResumes) {
  int trainers = 1;
  MpiSessionOptions placed;
  {
    MpiSession probe;
    trainers = std::max(1, probe.size() - 1);
    placed.node_ranks["reader"] = 0;
    for (int i = 0; i < trainers; ++i) placed.node_ranks[testing::seed_trainer(i)] = probe.size() == 1 ? 0 : 1 + i;
  }
  const Job job = testing::seed_job_with_trainers(trainers);
  LocalSession local;
  EXPECT_EQ(JobRunner(job, nullptr).train(local), 4);
  std::string dir;
  {
    MpiSession first(placed);
    dir = shared_dir(first);
    auto cm = std::make_shared<MultiNodeCheckpointManager>(dir, "minidb");
    EXPECT_EQ(JobRunner(job, cm).train(first), 4);
    EXPECT_EQ(testing::seed_total(first, trainers), 145);
    barrier(first);
    EXPECT_EQ(committed_epochs(dir), (std::vector<int64_t>{0, 1, 2, 3, 4}));
    if (first.rank() == 0) {
      EXPECT_EQ(verify_checkpoint(dir, 4).files.size(), static_cast<size_t>(trainers + 1));
    }
    uncommit_after(first, dir, 2);
  }
  MpiSession resumed(placed);
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir, "minidb");
  JobRunnerOptions options;
  options.resume_latest = true;
  EXPECT_EQ(JobRunner(job, cm, options).train(resumed), 4);
  EXPECT_EQ(testing::seed_total(resumed, trainers), 145);
  // (Which trainer read which record depends on timing; their sum does not.)
  EXPECT_EQ(testing::seed_total(local, trainers), 145);
  barrier(resumed);
  if (resumed.rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moka
