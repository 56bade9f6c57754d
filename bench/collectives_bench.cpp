// collectives_bench: moka's Allreduce, a trivial TaskGroup per MpiSession::run and a TaskOutput's broadcast,
// each beside raw MPI (MPI_Allreduce, MPI_Barrier + MPI_Bcast) on the same buffers in the same run. Run it
// under mpirun (docs/benchmarks.md, "Collectives across ranks"); rank 0 prints a markdown table.
//
// Not a Google Benchmark binary: every rank must make the same collective calls the same number of times,
// so the iteration counts are fixed, not tuned while running. Each figure is the median over --repeats
// measurements of the slowest rank's time.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "mpi_bench.h"

namespace {

using namespace moka;
using bench::Row;
namespace mops = moka::ops;

std::string node_of(int rank) { return fmt::format("n{}", rank); }

std::string human_time(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.2f} µs", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

std::string human_bytes(std::size_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10)) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

// A row of per-operation times and, for large buffers, bandwidths (bytes / time).
Row time_row(std::string work, double moka_s, double peer_s, std::size_t bytes) {
  auto with_bw = [&](double s) {
    std::string t = human_time(s);
    if (bytes >= (1u << 20)) t += fmt::format(" ({:.2f} GB/s)", static_cast<double>(bytes) / s / 1e9);
    return t;
  };
  return {std::move(work), with_bw(moka_s), with_bw(peer_s), fmt::format("{:.2f}×", moka_s / peer_s)};
}

// Allreduce (sum, in place) of `count` floats, `iters` times in one run, vs MPI_Allreduce on a buffer of
// the same size. The buffer is filled by an earlier run, so the timed run holds only the loop.
Row allreduce_row(MpiSession& session, int size, std::size_t count, int iters, int repeats) {
  const std::string x = fmt::format("x{}", count);
  TaskGroup fill(WorkspaceType::Global, [&] {
    for (int r = 0; r < size; ++r)
      Node(node_of(r), [&] {
        Task([&] {
          mops::op("ConstantFill", {}, {BlobRef(x)},
                   {{"shape", std::vector<int64_t>{static_cast<int64_t>(count)}}, {"value", 0.0}});
        });
      });
  });
  session.run(fill);
  TaskGroup loop(WorkspaceType::Global, [&] {
    for (int r = 0; r < size; ++r)
      Node(node_of(r), [&] {
        Task([&] {
          const BlobRef cw = mops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          mops::loop(iters, [&] { mops::op("Allreduce", {cw, BlobRef(x)}, {BlobRef(x)}); });
        });
      });
  });
  session.run(loop);  // compiles and checks the definition outside the timing
  const double moka_s = bench::slowest_rank_median(repeats, [&] { session.run(loop); }) / iters;

  // The peer works on a tensor of the same size allocated as moka allocates it (large tensors live in
  // huge-page-aligned mappings), so both sides move the same kind of memory.
  Tensor tensor;
  tensor.resize(DType::Float, {static_cast<int64_t>(count)});
  float* const buf = tensor.mutable_data<float>();
  const double peer_s = bench::slowest_rank_median(repeats,
                                                   [&] {
                                                     for (int i = 0; i < iters; ++i)
                                                       MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count),
                                                                     MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                                                   }) /
                        iters;
  const std::size_t bytes = count * sizeof(float);
  return time_row(fmt::format("`Allreduce` of {} of float32 (sum, in place), {} ranks", human_bytes(bytes), size),
                  moka_s, peer_s, bytes);
}

// One trivial task per node (an int64 scalar as its TaskOutput), per run(), vs what the run must do at
// least: a barrier and each node's output broadcast from its rank.
Row trivial_group_row(MpiSession& session, int size, int runs, int repeats) {
  std::vector<TaskOutput> outs;
  TaskGroup tg([&] {
    for (int r = 0; r < size; ++r)
      Node(node_of(r), [&] { Task([&] { outs.push_back(final_output(mops::Const(int64_t{r}))); }); });
  });
  session.run(tg);
  const double moka_s = bench::slowest_rank_median(repeats,
                                                   [&] {
                                                     for (int i = 0; i < runs; ++i) session.run(tg);
                                                   }) /
                        runs;
  int64_t value = 0;
  const double peer_s = bench::slowest_rank_median(repeats,
                                                   [&] {
                                                     for (int i = 0; i < runs; ++i) {
                                                       MPI_Barrier(MPI_COMM_WORLD);
                                                       for (int r = 0; r < size; ++r)
                                                         MPI_Bcast(&value, 1, MPI_INT64_T, r, MPI_COMM_WORLD);
                                                     }
                                                   }) /
                        runs;
  return time_row(fmt::format("TaskGroup of one trivial task per node, per `run()`, {} ranks", size), moka_s, peer_s,
                  0);
}

// A run whose only work is the TaskOutput of `count` floats on the last rank's node, broadcast to every
// rank after the run, vs a barrier and MPI_Bcast of the same bytes.
Row output_row(MpiSession& session, int size, std::size_t count, int runs, int repeats) {
  const std::string y = fmt::format("y{}", count);
  const std::string owner = node_of(size - 1);
  TaskGroup fill(WorkspaceType::Global, [&] {
    Node(owner, [&] {
      Task([&] {
        mops::op("ConstantFill", {}, {BlobRef(y)},
                 {{"shape", std::vector<int64_t>{static_cast<int64_t>(count)}}, {"value", 1.0}});
      });
    });
  });
  session.run(fill);
  TaskOutput out;
  TaskGroup tg(WorkspaceType::Global, [&] {
    for (int r = 0; r < size; ++r)
      Node(node_of(r), [&] {
        Task([&] {
          if (r == size - 1) out = final_output(BlobRef(y));
        });
      });
  });
  session.run(tg);
  if (out.fetch().numel() != static_cast<int64_t>(count)) {
    std::fprintf(stderr, "collectives_bench: the broadcast output has %lld elements, not %zu\n",
                 static_cast<long long>(out.fetch().numel()), count);
    std::exit(1);
  }
  const double moka_s = bench::slowest_rank_median(repeats,
                                                   [&] {
                                                     for (int i = 0; i < runs; ++i) session.run(tg);
                                                   }) /
                        runs;
  Tensor tensor;  // allocated as moka allocates tensors, as above
  tensor.resize(DType::Float, {static_cast<int64_t>(count)});
  float* const buf = tensor.mutable_data<float>();
  const double peer_s =
      bench::slowest_rank_median(repeats,
                                 [&] {
                                   for (int i = 0; i < runs; ++i) {
                                     MPI_Barrier(MPI_COMM_WORLD);
                                     MPI_Bcast(buf, static_cast<int>(count), MPI_FLOAT, size - 1, MPI_COMM_WORLD);
                                   }
                                 }) /
      runs;
  const std::size_t bytes = count * sizeof(float);
  return time_row(fmt::format("TaskOutput of {} of float32 broadcast after a run, {} ranks", human_bytes(bytes), size),
                  moka_s, peer_s, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchArgs args{.repeats = 5, .only = {}};
  if (!bench::parse_bench_args(argc, argv, "collectives_bench",
                               "mpirun -np N collectives_bench [--repeats N] [--only allreduce|group|output|...-1MiB]",
                               args))
    return 2;
  const int repeats = args.repeats;
  const std::string& only = args.only;
  try {
    // Node n<r> on rank r. The session initializes MPI, which the peers then use directly.
    MpiSessionOptions options;
    int size = 1;
    {
      MpiSession probe;  // learns the number of ranks
      size = probe.size();
    }
    for (int r = 0; r < size; ++r) options.node_ranks[node_of(r)] = r;
    MpiSession session(options);

    // Each row: its name (for --only) and how to measure it.
    const std::vector<std::pair<std::string, std::function<Row()>>> all = {
        {"allreduce-8B", [&] { return allreduce_row(session, size, 2, 20000, repeats); }},
        {"allreduce-1MiB", [&] { return allreduce_row(session, size, 1u << 18, 200, repeats); }},
        {"allreduce-64MiB", [&] { return allreduce_row(session, size, 1u << 24, 5, repeats); }},
        {"group", [&] { return trivial_group_row(session, size, 2000, repeats); }},
        {"output-8B", [&] { return output_row(session, size, 2, 2000, repeats); }},
        {"output-1MiB", [&] { return output_row(session, size, 1u << 18, 100, repeats); }},
        {"output-64MiB", [&] { return output_row(session, size, 1u << 24, 5, repeats); }},
    };
    std::vector<Row> rows;
    for (const auto& [name, row] : all)
      if (only.empty() || name.find(only) != std::string::npos) rows.push_back(row());
    if (session.rank() == 0) {
      bench::print_rows("| work | moka | raw MPI (same run) | moka / MPI time |", rows);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
