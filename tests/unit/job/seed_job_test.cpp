// The seed's build_job with its reader feeding trainer nodes through a queue (tests/support/seed_job.h), under
// LocalSession: the seed's totals, every epoch checkpointed, a resume from the middle ending the same.
#include <gtest/gtest.h>

#include "moka/moka.h"
#include "support/seed_job.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

TEST(SeedJobWithTrainers, TheTrainersTotalsAddUpToTheSeedsEveryEpoch) {
  for (int trainers : {1, 2, 3}) {
    testing::TempDir dir("moka_seed");
    const Job job = testing::seed_job_with_trainers(trainers);
    LocalSession session;
    auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
    EXPECT_EQ(JobRunner(job, cm).train(session), 4);
    EXPECT_EQ(testing::seed_total(session, trainers), 145) << trainers << " trainers";
    std::vector<int64_t> per_epoch;
    for (int64_t e = 1; e <= 4; ++e) {
      TaskGroup load = cm->load(e);
      session.run(load);
      per_epoch.push_back(testing::seed_total(session, trainers));
    }
    EXPECT_EQ(per_epoch, (std::vector<int64_t>{103, 115, 136, 145})) << trainers << " trainers";
    // A fresh process resumes after epoch 2: the reader's cursor and every trainer's total come back.
    LocalSession resumed;
    auto cm2 = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
    EXPECT_EQ(JobRunner(job, cm2, {.resume_from_epoch = 2}).train(resumed), 4);
    EXPECT_EQ(testing::seed_total(resumed, trainers), 145) << trainers << " trainers";
  }
}

}  // namespace
}  // namespace moka
