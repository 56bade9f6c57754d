// mpi_checkpoint_bench: a job checkpointing one node per rank (--mib MiB each) under mpirun — every rank
// writing and verifying its node's DB, rank 0 committing the epoch — beside each rank writing and fsyncing
// the same number of bytes to a file of its own, in the same run and directory. Rank 0 prints a markdown
// table (docs/benchmarks.md, "Checkpoints across ranks"). Own main: every rank must make the same calls.
#include <fcntl.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"

namespace {

using namespace moka;
namespace mops = moka::ops;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The slowest rank's value.
double slowest(double mine) {
  double out = 0;
  MPI_Allreduce(&mine, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The peer: `bytes` bytes written to `path` in 8 MiB writes, then fsync (what a rank alone would do).
double write_and_fsync(const std::string& path, const std::vector<char>& chunk, std::size_t bytes) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(chunk.size(), bytes - done);
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w <= 0) std::abort();
    done += static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0) std::abort();
  ::close(fd);
  const double t = seconds_since(t0);
  ::unlink(path.c_str());
  return slowest(t);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t mib = 256;
  int64_t epochs = 6;
  std::string base = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib")
      mib = std::atoll(argv[i + 1]);
    else if (flag == "--epochs")
      epochs = std::atoll(argv[i + 1]);
    else if (flag == "--dir")
      base = argv[i + 1];
  }
  MpiSessionOptions options;
  const int ranks = [] {
    MpiSession probe;
    return probe.size();
  }();
  for (int r = 0; r < ranks; ++r) options.node_ranks[fmt::format("n{}", r)] = r;
  MpiSession session(options);
  const int rank = session.rank();
  const std::size_t bytes = static_cast<std::size_t>(mib) << 20;

  std::string dir;
  if (rank == 0) {
    std::string tmpl = (std::filesystem::path(base) / "moka_ckpt_bench_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    dir = tmpl;
  }
  dir = session.allgather(dir).front();

  Job job([&](Job& j) {
    for (int r = 0; r < ranks; ++r) {
      Node(fmt::format("n{}", r), [&] {
        j.init_group([&] {
          Task([&] {
            mops::op("ConstantFill", {}, {BlobRef("weights")},
                     {{"shape", std::vector<int64_t>{static_cast<int64_t>(bytes / sizeof(float))}},
                      {"value", 0.5f + static_cast<float>(r)}});
          });
        });
        Task([&] { mops::Const(int64_t{r}, {.blob_out = "epoch_mark"}); });
        if (r == 0) epoch_limiter(j, epochs);
      });
    }
  });
  LocalSession compiling;
  const JobDef def = job.compile(compiling);

  // Interleaved, so that both see the same state of the page cache and the disk: after each epoch's
  // checkpoint (on_epoch runs on every rank at the same point), the peer writes the same bytes.
  std::vector<double> moka_seconds;
  std::vector<double> peer_seconds;
  const std::vector<char> chunk(8u << 20, 'x');
  JobRunOptions run{.checkpoint_dir = dir};
  run.retention = {.keep_last = 1, .keep_every = 0};  // the previous epoch deleted, as the peer deletes its file
  run.on_epoch = [&](const EpochReport& r) {
    if (r.epoch == 0) return;  // epoch 0 also faults the tensors in
    moka_seconds.push_back(r.checkpoint_seconds);
    peer_seconds.push_back(write_and_fsync(fmt::format("{}/peer.{}", dir, rank), chunk, bytes));
  };
  run_job(def, session, run);

  // Every rank's checkpoint time is the same agreed save; the slowest rank's peer time is the peer's.
  const double moka_t = slowest(median(moka_seconds));
  const double peer_t = median(peer_seconds);
  if (rank == 0) {
    const double total = static_cast<double>(bytes) * ranks / double(1 << 20);
    fmt::print("| work | moka | peer (each rank write + fsync alone) | moka / peer bandwidth |\n|---|---|---|---|\n");
    fmt::print(
        "| checkpoint of {} rank(s) x {} MiB, minidb | {:.3f} s ({:.0f} MiB/s) | {:.3f} s ({:.0f} MiB/s) | {:.2f}x |\n",
        ranks, mib, moka_t, total / moka_t, peer_t, total / peer_t, peer_t / moka_t);
    std::filesystem::remove_all(dir);
  }
  return 0;
}
