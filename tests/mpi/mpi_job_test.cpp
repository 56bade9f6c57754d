// Jobs under MpiSession, run by ctest under mpirun with 1 to 4 ranks (and once without a launcher): a JobDef
// through run_job and a Job through JobRunner end with the blobs they have under LocalSession, on every rank;
// checkpoints across ranks are refused before anything runs. Only EXPECT_* (see mpi_session_test.cpp).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "support/collective_groups.h"

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

TEST(MpiJob, CheckpointsAcrossRanksAreRefusedBeforeAnythingRuns) {
  Job job = trainers_job();
  LocalSession compiling;
  const JobDef def = job.compile(compiling);
  MpiSession mpi;
  // One path per process: a run that went ahead would create it.
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("moka_mpi_job_" + std::to_string(::getpid()) + "_" + std::to_string(mpi.rank())))
                              .string();
  std::filesystem::remove_all(dir);
  if (mpi.size() == 1) {
    EXPECT_EQ(run_job(def, mpi, {.checkpoint_dir = dir}).last_epoch, kEpochs);
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "moka-manifest.5.json"));
  } else {
    try {
      run_job(def, mpi, {.checkpoint_dir = dir});
      ADD_FAILURE() << "checkpoints across ranks ran";
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find("not supported yet"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moka
