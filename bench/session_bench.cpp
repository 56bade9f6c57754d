// Session benchmarks beside their peers: a TaskGroup of 64 one-Add tasks per LocalSession run vs 64
// std::threads per run; a DSL-built plan vs the same plan written as definitions; Task instances over a
// CountUp loop vs a plain C++ loop.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>

#include "moka/moka.h"

namespace {

using namespace moka;
namespace mops = moka::ops;

constexpr int kTasks = 64;

// 64 tasks, one scalar Add each, in one TaskGroup; one LocalSession runs it repeatedly.
void BM_TaskGroup64(benchmark::State& state) {
  const auto type = state.range(0) == 0 ? WorkspaceType::Private : WorkspaceType::Global;
  LocalSession session;
  session.run(Task([&] {
    mops::Const(1, {.blob_out = "a"});
    mops::Const(2, {.blob_out = "b"});
  }));
  TaskGroup tg(type, [&] {
    for (int i = 0; i < kTasks; ++i)
      Task({.name = "t"}, [&] { mops::Add({BlobRef("a"), BlobRef("b")}, {BlobRef("c" + std::to_string(i))}); });
  });
  session.run(tg);  // compile outside the timing
  for (auto _ : state) session.run(tg);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(type == WorkspaceType::Private ? "PRIVATE tasks" : "GLOBAL tasks");
}
BENCHMARK(BM_TaskGroup64)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Peer: what Caffe2 did per run — one std::thread per task, each doing its Add.
void BM_ThreadPerTask64(benchmark::State& state) {
  Tensor a = Tensor::scalar<int64_t>(1), b = Tensor::scalar<int64_t>(2);
  std::vector<Tensor> c(kTasks, Tensor::scalar<int64_t>(0));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    threads.reserve(kTasks);
    for (int i = 0; i < kTasks; ++i)
      threads.emplace_back([&, i] { c[i].mutable_data<int64_t>()[0] = a.data<int64_t>()[0] + b.data<int64_t>()[0]; });
    for (auto& t : threads) t.join();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ThreadPerTask64)->Unit(benchmark::kMicrosecond)->UseRealTime();

constexpr int64_t kLoop = 100'000;

// A counting loop built with the DSL ...
void BM_DslPlan(benchmark::State& state) {
  NetBuilder nb({.name = "dsl"}, [&] {
    BlobRef total = mops::Const(0, {.blob_out = "total"});
    BlobRef one = mops::Const(1);
    mops::loop(kLoop, [&] { mops::Add({total, one}, {total}); });
  });
  Plan plan("dsl_plan");
  plan.add_step(to_execution_step(nb));
  const PlanDef def = plan.proto();
  Workspace ws;
  for (auto _ : state) run_plan(ws, def);
  state.SetItemsProcessed(state.iterations() * kLoop);
}
BENCHMARK(BM_DslPlan)->Unit(benchmark::kMillisecond);

// ... and the same definitions written by hand (what the DSL generates: a check net that resets
// the stop blob and ORs in iter >= n, then the body net).
void BM_HandWrittenPlan(benchmark::State& state) {
  auto fill = [](const std::string& out, int64_t v) {
    return make_op("ConstantFill", {}, {out},
                   {make_arg("shape", std::vector<int64_t>{}), make_arg("value", v), make_arg("dtype", int64_t{10})});
  };
  PlanDef plan;
  NetDef init;
  init.name = "init";
  init.op = {fill("total", 0), fill("one", 1), fill("iter", 0), fill("n", kLoop), fill("inc", 1)};
  NetDef check;
  check.name = "check";
  check.op = {make_op("GE", {"iter", "n"}, {"ge"}),
              make_op("ConstantFill", {}, {"stop"},
                      {make_arg("shape", std::vector<int64_t>{}), make_arg("value", int64_t{0}),
                       make_arg("dtype", int64_t{5})}),
              make_op("Or", {"stop", "ge"}, {"stop"})};
  NetDef body;
  body.name = "body";
  body.op = {make_op("Add", {"total", "one"}, {"total"}), make_op("Add", {"iter", "inc"}, {"iter"})};
  plan.network = {init, check, body};
  ExecutionStepDef si;
  si.name = "init";
  si.network = {"init"};
  ExecutionStepDef sl;
  sl.name = "loop";
  sl.network = {"check", "body"};
  sl.should_stop_blob = "stop";
  plan.execution_step = {si, sl};
  Workspace ws;
  for (auto _ : state) run_plan(ws, plan);
  state.SetItemsProcessed(state.iterations() * kLoop);
}
BENCHMARK(BM_HandWrittenPlan)->Unit(benchmark::kMillisecond);

// Task(num_instances = 64) over ops::loop(1000) of one CountUp: time per instance-iteration.
void BM_TaskInstances(benchmark::State& state) {
  LocalSession session;
  session.run(Task([&] { mops::CreateCounter({}, {"counter"}); }));
  Task task({.workspace_type = WorkspaceType::Global, .num_instances = 64},
            [&] { mops::loop(1000, [&] { mops::CountUp({BlobRef("counter")}); }); });
  session.run(task);
  for (auto _ : state) session.run(task);
  state.SetItemsProcessed(state.iterations() * 64 * 1000);
}
BENCHMARK(BM_TaskInstances)->Unit(benchmark::kMillisecond)->UseRealTime();

// Peer: a plain loop of 64 x 1000 atomic increments.
void BM_PlainCountUp(benchmark::State& state) {
  std::atomic<int64_t> counter{0};
  for (auto _ : state)
    for (int i = 0; i < 64 * 1000; ++i) benchmark::DoNotOptimize(counter.fetch_add(1));
  state.SetItemsProcessed(state.iterations() * 64 * 1000);
}
BENCHMARK(BM_PlainCountUp)->Unit(benchmark::kMillisecond);

}  // namespace
