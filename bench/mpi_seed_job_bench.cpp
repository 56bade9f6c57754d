// mpi_seed_job_bench: the seed's job with its reader on a node of its own feeding trainer nodes through a
// queue on the reader (tests/support/seed_job.h, docs/distributed.md §6.3), timed per epoch under MpiSession —
// the reader on rank 0, one trainer on each other rank — beside the same job in one process (LocalSession, on
// rank 0, in the same run). With and without a checkpoint every epoch (minidb, in one directory all ranks see).
// Run it under `mpirun -np 3` (docs/benchmarks.md, "The seed job across ranks"); rank 0 prints a markdown table.
#include <fmt/format.h>
#include <mpi.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "mpi_bench.h"
#include "support/seed_job.h"

namespace {

using namespace moka;
using bench::Row;

constexpr int kEpochs = 4;  // the seed job stops after its fourth epoch

// A fresh directory under `root` (rank 0 makes it; every rank gets its name).
std::string fresh_dir(Session& session, const std::string& root) {
  std::string dir;
  if (session.process() == 0) {
    std::string tmpl = root + "/moka_seed_bench_XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
  }
  dir = session.allgather(dir).front();
  if (dir.empty()) throw RuntimeError("mpi_seed_job_bench: cannot make a directory under " + root);
  return dir;
}

// One whole run of the job (init, four epochs, exit) in `session`, checkpointing into `dir` unless it is empty.
// Checks the seed's total.
void train(Session& session, const Job& job, int trainers, const std::string& dir) {
  std::shared_ptr<MultiNodeCheckpointManager> cm;
  if (!dir.empty()) cm = std::make_shared<MultiNodeCheckpointManager>(dir, "minidb");
  if (JobRunner(job, cm).train(session) != kEpochs) throw RuntimeError("mpi_seed_job_bench: not four epochs");
  const int64_t total = testing::seed_total(session, trainers);
  if (total != 145) throw RuntimeError(fmt::format("mpi_seed_job_bench: total {}, not the seed's 145", total));
}

std::string ms(double seconds) { return fmt::format("{:.2f} ms", seconds * 1e3); }

}  // namespace

int main(int argc, char** argv) {
  bench::BenchArgs args{.repeats = 5, .only = {}};
  if (!bench::parse_bench_args(argc, argv, "mpi_seed_job_bench",
                               "mpirun -np 3 mpi_seed_job_bench [--repeats N] [--only checkpoints|plain]", args))
    return 2;
  const std::string root = std::filesystem::temp_directory_path().string();
  try {
    int size = 1;
    {
      MpiSession probe;
      size = probe.size();
    }
    const int trainers = std::max(1, size - 1);
    MpiSessionOptions options;
    options.node_ranks["reader"] = 0;
    for (int i = 0; i < trainers; ++i) options.node_ranks[testing::seed_trainer(i)] = size == 1 ? 0 : 1 + i;
    // A fresh pair of sessions for every run: a job trained twice in one session finds the first run's queue
    // handle among the blobs its checkpoints save.
    const int runs = args.repeats + 1;  // the first compiles and checks outside the timing
    MpiSession session(options);
    const Job job = testing::seed_job_with_trainers(trainers);
    std::vector<Row> rows;
    for (const bool checkpoints : {false, true}) {
      const std::string name = checkpoints ? "checkpoints" : "plain";
      if (!args.only.empty() && args.only != name) continue;
      std::vector<std::string> dirs;  // removed after the row
      auto dir_for = [&](Session& s) {
        if (!checkpoints) return std::string();
        dirs.push_back(fresh_dir(s, root));
        return dirs.back();
      };
      std::vector<std::unique_ptr<MpiSession>> mpi;
      std::vector<std::unique_ptr<LocalSession>> local;
      for (int i = 0; i < runs; ++i) {
        mpi.push_back(std::make_unique<MpiSession>(options));
        local.push_back(std::make_unique<LocalSession>());
      }
      train(*mpi[0], job, trainers, dir_for(*mpi[0]));
      int next = 1;
      const double mpi_s = bench::slowest_rank_median(args.repeats, [&] {
        MpiSession& s = *mpi[next++];
        train(s, job, trainers, dir_for(s));
      });
      // In one process: rank 0 alone (the other ranks wait in the timing's barrier).
      if (session.rank() == 0) train(*local[0], job, trainers, dir_for(*local[0]));
      next = 1;
      const double local_s = bench::slowest_rank_median(args.repeats, [&] {
        LocalSession& s = *local[next++];
        if (session.rank() == 0) train(s, job, trainers, dir_for(s));
      });
      MPI_Barrier(MPI_COMM_WORLD);
      if (session.rank() == 0)
        for (const std::string& d : dirs) std::filesystem::remove_all(d);
      rows.push_back({fmt::format("the seed job, {} trainer{}, {}", trainers, trainers == 1 ? "" : "s",
                                  checkpoints ? "a minidb checkpoint every epoch" : "no checkpoints"),
                      ms(mpi_s / kEpochs), ms(local_s / kEpochs), fmt::format("{:.2f}×", mpi_s / local_s)});
    }
    if (session.rank() == 0)
      bench::print_rows(
          "| work | per epoch, MpiSession (reader rank 0, trainer ranks) | per epoch, LocalSession (same "
          "run) | MPI / local time |",
          rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_seed_job_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
