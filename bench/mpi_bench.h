// What the MPI benchmarks share: timing the slowest rank, their table rows, and their command line
// (`--repeats N`, `--only NAME`).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace moka::bench {

/// The slowest rank's seconds for fn(), median over `repeats` (every rank calls this together).
inline double slowest_rank_median(int repeats, const std::function<void()>& fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    fn();
    double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// One line of a benchmark's markdown table.
struct Row {
  std::string work, moka, peer, ratio;
};

/// Prints `rows` under a header of `columns` (four names), as markdown.
inline void print_rows(const char* columns, const std::vector<Row>& rows) {
  std::printf("%s\n|---|---|---|---|\n", columns);
  for (const Row& r : rows)
    std::printf("| %s | %s | %s | %s |\n", r.work.c_str(), r.moka.c_str(), r.peer.c_str(), r.ratio.c_str());
}

/// `--repeats N` and `--only NAME` of an MPI benchmark; false (after printing `usage`) for anything else.
struct BenchArgs {
  int repeats;
  std::string only;
};
inline bool parse_bench_args(int argc, char** argv, const char* name, const char* usage, BenchArgs& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc) {
      args.repeats = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      args.only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s\n", usage);
      return false;
    }
  }
  if (args.repeats < 1) {
    std::fprintf(stderr, "%s: --repeats must be at least 1\n", name);
    return false;
  }
  return true;
}

}  // namespace moka::bench
