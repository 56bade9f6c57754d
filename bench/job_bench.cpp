// Background vs foreground checkpoint saves (issue 5, part 5): the same job — an epoch of Adds over a
// weights tensor, checkpointed every epoch to minidb with fsync — run by run_job with the save in the
// epoch loop (the peer) and with the save written while the next epoch runs. Reports wall seconds per
// epoch; BackgroundSave's vs_foreground is its epoch rate over ForegroundSave's (> 1: faster).
// Args: weights MiB, epochs, Adds per epoch (the epoch's length: with a long enough epoch, a
// background save is hidden entirely). Environment: MOKA_BENCH_DIR (default /tmp) holds the checkpoints.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>

#include "moka/defs/json.h"
#include "moka/job/run_job.h"

namespace {

namespace fs = std::filesystem;

std::map<std::string, double>& seconds_per_epoch() {
  static std::map<std::string, double> s;
  return s;
}

moka::JobDef make_job(int64_t weights_mib, int64_t epochs, int64_t adds_per_epoch) {
  const int64_t floats = weights_mib * (1 << 20) / 4;
  return moka::job_from_json(fmt::format(R"({{
    "init_group": {{"nodes": [{{"node": "trainer", "plan": {{
      "network": [{{"name": "init", "op": [
        {{"type": "ConstantFill", "output": ["weights"], "arg": [{{"name": "shape", "ints": [{0}]}}, {{"name": "value", "f": 0.5}}]}},
        {{"type": "ConstantFill", "output": ["delta"], "arg": [{{"name": "shape", "ints": [{0}]}}, {{"name": "value", "f": 0.001}}]}},
        {{"type": "CreateCounter", "output": ["left"], "arg": [{{"name": "init_count", "i": {1}}}]}}
      ]}}],
      "execution_step": [{{"name": "init", "network": ["init"]}}]}}}}]}},
    "epoch_group": {{"nodes": [{{"node": "trainer", "outputs": ["done"], "plan": {{
      "network": [
        {{"name": "train", "op": [{{"type": "Add", "input": ["weights", "delta"], "output": ["weights"]}}]}},
        {{"name": "end", "op": [{{"type": "CountDown", "input": ["left"], "output": ["done"]}}]}}
      ],
      "execution_step": [{{"name": "train", "network": ["train"], "num_iter": {2}}}, {{"name": "end", "network": ["end"]}}]}}}}]}},
    "stop_conditions": [{{"node": "trainer", "blob": "done"}}]
  }})",
                                         floats, epochs - 1, adds_per_epoch));
}

void run(benchmark::State& state, bool background) {
  const int64_t mib = state.range(0);
  const int64_t epochs = state.range(1);
  const int64_t adds = state.range(2);
  const moka::JobDef job = make_job(mib, epochs, adds);
  const char* base = std::getenv("MOKA_BENCH_DIR");
  const fs::path dir = fs::path(base ? base : "/tmp") / fmt::format("moka-job-bench-{}", ::getpid());
  double seconds = 0, epoch_loop = 0, save_paid = 0;
  for (auto _ : state) {
    fs::remove_all(dir);
    moka::NodeWorkspaces nodes;
    moka::JobRunOptions opt{.checkpoint_dir = dir.string(), .background_save = background};
    opt.on_epoch = [&](const moka::EpochReport& r) {
      epoch_loop += r.seconds;
      save_paid += r.checkpoint_seconds;
    };
    const auto t0 = std::chrono::steady_clock::now();
    moka::run_job(job, nodes, opt);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  fs::remove_all(dir);
  const double n = static_cast<double>(state.iterations() * epochs);
  const std::string key = fmt::format("{}/{}/{}", mib, epochs, adds);
  const double per_epoch = seconds / n;
  state.counters["s_per_epoch"] = per_epoch;
  state.counters["compute_s_per_epoch"] = epoch_loop / n;
  state.counters["save_s_paid_per_epoch"] = save_paid / n;
  if (!background) {
    seconds_per_epoch()[key] = per_epoch;
  } else if (auto it = seconds_per_epoch().find(key); it != seconds_per_epoch().end()) {
    state.counters["vs_foreground"] = it->second / per_epoch;
    state.counters["epoch_time_saved_pct"] = 100.0 * (1.0 - per_epoch / it->second);
  }
}

void ForegroundSave(benchmark::State& state) { run(state, false); }
void BackgroundSave(benchmark::State& state) { run(state, true); }

// Each foreground run before the background run of the same arguments (vs_foreground needs it).
BENCHMARK(ForegroundSave)->Args({64, 6, 24})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BackgroundSave)->Args({64, 6, 24})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(ForegroundSave)->Args({64, 6, 96})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BackgroundSave)->Args({64, 6, 96})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
