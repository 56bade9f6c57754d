// mpi_queue_bench: records through a Queue shared by a node on rank 0 (a pipe writing batches of rows) and a
// node on rank 1 (a pipe draining them), beside raw MPI_Send/MPI_Recv of the same bytes in the same run. Run it
// under `mpirun -np 2` (docs/benchmarks.md, "Queues across ranks"); rank 0 prints a markdown table.
//
// Fixed record counts (both ranks must run the same runs). Each figure is the median over --repeats runs of the
// slowest rank's time; records/s counts rows (a batch of 1024 rows is 1024 records), and the ratio is moka's
// records/s over MPI's.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "mpi_bench.h"

namespace {

using namespace moka;
using bench::Row;

std::string rate(double records_per_s) {
  if (records_per_s >= 1e6) return fmt::format("{:.2f} M rec/s", records_per_s / 1e6);
  return fmt::format("{:.0f} k rec/s", records_per_s / 1e3);
}

// `batches` batches of `batch` rows of `row_bytes` bytes each from node "src" (rank 0) to node "dst" (rank 1)
// through a queue of capacity 8 on "src"; the peer sends the same batches with MPI_Send / MPI_Recv.
Row queue_row(MpiSession& session, int64_t row_bytes, int64_t batch, int64_t batches, int repeats) {
  // A dataset of at most 64 MiB, read over and over (a random reader looping over it, batch by batch).
  const int64_t rows = std::max<int64_t>(batch, std::min<int64_t>(batch * batches, (int64_t{64} << 20) / row_bytes));
  std::shared_ptr<DatasetRandomReader> reader;
  TaskGroup fill(WorkspaceType::Global, [&] {
    Node("src", [&] {
      Task([&] {
        const BlobRef payload =
            ops::op("ConstantFill", {}, 1,
                    {{"shape", std::vector<int64_t>{rows, row_bytes}}, {"dtype", DType::UInt8}, {"value", 7}})
                .single();
        const schema::Field data = schema::from_blob_list(schema::from_column_list({"payload"}), {payload});
        Net init = ops::net();
        reader = Dataset(data, "rows").random_reader({.init_net = init, .batch_size = batch, .loop_over = true});
        reader->compute_offset(init);
        reader->sort_and_shuffle(init);  // shuffle_size 1: the rows in order
      });
    });
  });
  session.run(fill);
  TaskGroup stream(WorkspaceType::Global, [&] {
    auto queue = Queue::make(8, {.name = "stream"});
    Node("src", [&] { pipe(std::make_shared<ReaderWithLimit>(reader, batches), {.output = queue, .name = "send"}); });
    Node("dst", [&] { pipe(queue, {.processor = Processor([](const schema::Field&) {}, "drop"), .name = "receive"}); });
  });
  session.run(stream);  // compiles and checks the definition outside the timing
  const double moka_s = bench::slowest_rank_median(repeats, [&] { session.run(stream); });

  std::vector<unsigned char> buf(static_cast<std::size_t>(batch * row_bytes), 7);
  const int rank = session.rank();
  const double peer_s = bench::slowest_rank_median(repeats, [&] {
    for (int64_t i = 0; i < batches; ++i) {
      if (rank == 0)
        MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      else if (rank == 1)
        MPI_Recv(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  });
  const double records = static_cast<double>(batch * batches);
  return {fmt::format("batches of {} × {} B rows, rank 0 → rank 1", batch, row_bytes), rate(records / moka_s),
          rate(records / peer_s), fmt::format("{:.2f}×", peer_s / moka_s)};
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchArgs args{.repeats = 3, .only = {}};
  if (!bench::parse_bench_args(argc, argv, "mpi_queue_bench",
                               "mpirun -np 2 mpi_queue_bench [--repeats N] [--only BATCHxBYTES]", args))
    return 2;
  const int repeats = args.repeats;
  const std::string& only = args.only;
  try {
    MpiSessionOptions options;
    options.node_ranks = {{"src", 0}, {"dst", 1}};
    {
      MpiSession probe;
      if (probe.size() != 2) {
        if (probe.rank() == 0) std::fprintf(stderr, "mpi_queue_bench: run it with mpirun -np 2\n");
        return 2;
      }
    }
    MpiSession session(options);
    std::vector<Row> rows;
    for (int64_t row_bytes : {int64_t{64}, int64_t{4096}})
      for (int64_t batch : {int64_t{1}, int64_t{64}, int64_t{1024}}) {
        if (!only.empty() && fmt::format("{}x{}", batch, row_bytes) != only) continue;
        const int64_t batches = batch == 1 ? 20000 : batch == 64 ? 4000 : (row_bytes == 64 ? 1000 : 200);
        rows.push_back(queue_row(session, row_bytes, batch, batches, repeats));
      }
    if (session.rank() == 0) {
      bench::print_rows("| work | moka queue | raw MPI_Send/MPI_Recv (same run) | moka / MPI records/s |", rows);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_queue_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
