// Pipe throughput (issue 4, part 6): dataset reader → processor (Add of a constant on the batch) → queue(64) →
// dataset writer, against tbb::parallel_pipeline doing the same arithmetic on the same data.
//
// Args: batch size (1, 64, 1024) and threads (1, 2). moka: every pipe gets num_runtime_threads = threads
// (two pipes, so moka runs 2 × threads task instances); TBB: a task_arena of `threads` running a
// serial_in_order input filter that copies a batch out of the source (as ReadNextBatch does), a parallel
// filter adding the constant into a new buffer (as Add does) and a serial_in_order filter appending to the
// destination (as AtomicAppend does), with 64 tokens (the queue's capacity). Items are records (rows).
// Benchmarks run in registration order: TBB first, then moka reporting vs_tbb = moka rate / TBB rate:
// BM_Moka with Concurrency::threads (every task instance on a pool worker), BM_MokaFibers with
// Concurrency::fibers (all of them on one thread, taking turns at the queue — one core, as TBB's
// one-thread arena; with threads = 2 it runs four task instances on that one thread).
// MOKA_BENCH_BUSY=N runs N spinning processes beside it (a loaded machine; see busy_neighbours.h);
// MOKA_BENCH_STATUS_MS=N reads what `moka job run`'s status line reads every N ms (status_reader.h).
#include <benchmark/benchmark.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "moka/moka.h"

#include "busy_neighbours.h"
#include "status_reader.h"

namespace {

// MOKA_BENCH_BUSY=N: N spinning processes beside the benchmark (busy_neighbours.h).
const moka_bench::BusyNeighbours busy_neighbours;
// MOKA_BENCH_STATUS_MS=N: the status line's reads every N ms (status_reader.h).
moka_bench::StatusReader status_reader;

using moka::schema::Field;

constexpr int64_t kCapacity = 64;
constexpr float kAddend = 1.0f;

// Rows per iteration: enough batches at every size to amortise a run's start-up.
int64_t rows_for(int64_t batch) { return batch == 1 ? (int64_t{1} << 14) : (int64_t{1} << 20); }

std::map<std::string, double>& rates() {
  static std::map<std::string, double> r;
  return r;
}

std::string key(int64_t batch, int64_t threads) { return std::to_string(batch) + "/" + std::to_string(threads); }

std::vector<float> source_data(int64_t rows) {
  std::vector<float> v(static_cast<std::size_t>(rows));
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

// Times each iteration with a steady clock (setup between iterations excluded) and records the rate.
template <class Setup, class Body>
void timed(benchmark::State& state, const char* impl, int64_t rows, Setup setup, Body body) {
  double seconds = 0;
  for (auto _ : state) {
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double rate = static_cast<double>(state.iterations() * rows) / seconds;
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["records_per_s"] = benchmark::Counter(rate);
  rates()[std::string(impl) + "/" + key(state.range(0), state.range(1))] = rate;
}

void BM_Tbb(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const auto threads = static_cast<int>(state.range(1));
  const int64_t rows = rows_for(batch);
  const std::vector<float> src = source_data(rows);
  std::vector<float> dst;
  tbb::task_arena arena(threads);
  timed(
      state, "tbb", rows, [&] { dst.clear(); },  // keeps the capacity, as the moka destination does
      [&] {
        arena.execute([&] {
          int64_t next = 0;
          tbb::parallel_pipeline(
              kCapacity,
              tbb::make_filter<void, std::vector<float>>(tbb::filter_mode::serial_in_order,
                                                         [&](tbb::flow_control& fc) -> std::vector<float> {
                                                           if (next >= rows) {
                                                             fc.stop();
                                                             return {};
                                                           }
                                                           const int64_t end = std::min(rows, next + batch);
                                                           std::vector<float> b(src.begin() + next, src.begin() + end);
                                                           next = end;
                                                           return b;
                                                         }) &
                  tbb::make_filter<std::vector<float>, std::vector<float>>(tbb::filter_mode::parallel,
                                                                           [](const std::vector<float>& in) {
                                                                             std::vector<float> out(in.size());
                                                                             for (std::size_t i = 0; i < in.size(); ++i)
                                                                               out[i] = in[i] + kAddend;
                                                                             return out;
                                                                           }) &
                  tbb::make_filter<std::vector<float>, void>(
                      tbb::filter_mode::serial_in_order,
                      [&](const std::vector<float>& b) { dst.insert(dst.end(), b.begin(), b.end()); }));
        });
      });
  if (static_cast<int64_t>(dst.size()) != rows || dst.back() != src.back() + kAddend)
    state.SkipWithError("tbb: wrong result");
}

// The moka pipe; `concurrency` says how the two pipes' task instances share threads.
void run_moka(benchmark::State& state, const char* impl, moka::Concurrency concurrency) {
  const int64_t batch = state.range(0);
  const auto threads = static_cast<int32_t>(state.range(1));
  const int64_t rows = rows_for(batch);

  moka::LocalSessionOptions options;
  options.run.concurrency = concurrency;
  moka::LocalSession session(options);
  moka::Net init("pipe_bench_init");
  moka::schema::Struct data({{"val", moka::schema::Scalar(moka::Tensor::vector<float>(source_data(rows)))}});
  const Field src_blobs = moka::name_scope("pb_src", [&] { return moka::schema::NewRecord(init, data); });
  moka::schema::FeedRecord(src_blobs, data, session.workspace());
  moka::Dataset src(src_blobs, "pb_src");
  moka::Dataset dst(data.clone_schema(), "pb_dst");
  // Running `reset` empties the destination (InitEmptyRecord's fills) between iterations.
  moka::Net reset("pipe_bench_reset");
  moka::name_scope("pb_dst", [&] { dst.init_empty(reset); });
  const moka::BlobRef addend("pipe_bench/addend");
  init.op("ConstantFill", {}, {addend},
          {{"shape", std::vector<int64_t>{}}, {"value", static_cast<double>(kAddend)}, {"dtype", moka::DType::Float}});
  session.run(init);

  moka::TaskGroup tg([&] {
    moka::ReaderSource q =
        moka::pipe(src.reader({.batch_size = batch}),
                   {.processor = moka::Processor(
                        [&](const Field& rec) {
                          Field out = moka::schema::NewRecord(rec);
                          moka::ops::Add({rec["val"](), addend}, {out["val"]()}, {{"broadcast", true}});
                          return out;
                        },
                        "add"),
                    .capacity = kCapacity,
                    .num_runtime_threads = threads});
    moka::pipe(q, {.output = dst.writer(), .num_runtime_threads = threads});
  });
  session.run(reset);
  session.run(tg);  // compiles the group (cached by the session) and warms the workers up

  timed(
      state, impl, rows, [&] { session.run(reset); }, [&] { session.run(tg); });

  const Field got = moka::schema::FetchRecord(dst.content(), session.workspace());
  const moka::Tensor& t = *got["val"].value();
  // One runtime thread per pipe keeps the order (the last row is the last source row plus the addend);
  // with two, rows arrive in any order.
  if (t.numel() != rows || (threads == 1 && t.data<float>()[rows - 1] != static_cast<float>(rows - 1) + kAddend))
    state.SkipWithError("moka: wrong result");
  const double mine = rates()[std::string(impl) + "/" + key(batch, threads)];
  auto it = rates().find("tbb/" + key(batch, threads));
  if (it != rates().end() && it->second > 0) state.counters["vs_tbb"] = benchmark::Counter(mine / it->second);
}

// Every pipe's task instances on the pool's threads, at once (Caffe2's model).
void BM_Moka(benchmark::State& state) { run_moka(state, "moka", moka::Concurrency::threads); }
// All task instances of the node as fibers on one thread, taking turns at the queue.
void BM_MokaFibers(benchmark::State& state) { run_moka(state, "moka_fibers", moka::Concurrency::fibers); }

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "threads"});
  for (int64_t batch : {1, 64, 1024})
    for (int64_t threads : {1, 2}) b->Args({batch, threads});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_Tbb)->Apply(args);
BENCHMARK(BM_Moka)->Apply(args);
BENCHMARK(BM_MokaFibers)->Apply(args);
