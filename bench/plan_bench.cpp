// Plan executor benchmarks, each beside its peer: num_iter loops and should_stop loops vs a plain C++
// loop on the same tensors, concurrent substeps vs one std::thread per substep per iteration, and
// plans of many nets vs plans of as many steps over one net (compile-and-run time linear in both).
#include <benchmark/benchmark.h>

#include <thread>

#include "moka/moka.h"

namespace {

using namespace moka;

constexpr int64_t kLoopIters = 1'000'000;
constexpr int64_t kConcurrentIters = 10'000;

void fill_scalars(Workspace& ws) {
  ws.create_blob("a")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  ws.create_blob("b")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(2);
}

NetDef add_net(const std::string& name, int num_ops, const std::string& out_prefix = "c") {
  NetDef n;
  n.name = name;
  for (int i = 0; i < num_ops; ++i) n.op.push_back(make_op("Add", {"a", "b"}, {out_prefix + std::to_string(i)}));
  return n;
}

// A num_iter step over a net of `ops` scalar Adds.
void BM_PlanLoop(benchmark::State& state) {
  const int ops = static_cast<int>(state.range(0));
  Workspace ws;
  fill_scalars(ws);
  PlanDef plan;
  plan.network.push_back(add_net("n", ops));
  ExecutionStepDef s;
  s.name = "loop";
  s.network = {"n"};
  s.num_iter = kLoopIters;
  plan.execution_step.push_back(s);
  for (auto _ : state) run_plan(ws, plan);
  state.SetItemsProcessed(state.iterations() * kLoopIters);
}
BENCHMARK(BM_PlanLoop)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);

// Peer: the same additions in a plain C++ loop over the same tensors.
void BM_PlainLoop(benchmark::State& state) {
  const int ops = static_cast<int>(state.range(0));
  Tensor a = Tensor::scalar<int64_t>(1), b = Tensor::scalar<int64_t>(2);
  std::vector<Tensor> c(static_cast<std::size_t>(ops), Tensor::scalar<int64_t>(0));
  for (auto _ : state) {
    for (int64_t i = 0; i < kLoopIters; ++i) {
      for (auto& t : c) {
        t.mutable_data<int64_t>()[0] = a.data<int64_t>()[0] + b.data<int64_t>()[0];
        benchmark::DoNotOptimize(t.mutable_data<int64_t>());
      }
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * kLoopIters);
}
BENCHMARK(BM_PlainLoop)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);

// A should_stop_blob loop: i += 1; stop = i >= limit.
void BM_ShouldStopLoop(benchmark::State& state) {
  Workspace ws;
  PlanDef plan;
  NetDef init;
  init.name = "init";
  auto fill = [](const std::string& out, int64_t v) {
    return make_op("ConstantFill", {}, {out},
                   {make_arg("shape", std::vector<int64_t>{}), make_arg("value", v), make_arg("dtype", int64_t{10})});
  };
  init.op = {fill("i", 0), fill("one", 1), fill("limit", kLoopIters)};
  NetDef body;
  body.name = "body";
  body.op = {make_op("Add", {"i", "one"}, {"i"}), make_op("GE", {"i", "limit"}, {"stop"})};
  plan.network = {init, body};
  ExecutionStepDef si;
  si.name = "init";
  si.network = {"init"};
  ExecutionStepDef sl;
  sl.name = "loop";
  sl.network = {"body"};
  sl.should_stop_blob = "stop";
  plan.execution_step = {si, sl};
  for (auto _ : state) run_plan(ws, plan);
  state.SetItemsProcessed(state.iterations() * kLoopIters);
}
BENCHMARK(BM_ShouldStopLoop)->Unit(benchmark::kMillisecond);

// Peer: the same counting loop written in C++ on tensors.
void BM_PlainShouldStopLoop(benchmark::State& state) {
  for (auto _ : state) {
    Tensor i = Tensor::scalar<int64_t>(0), one = Tensor::scalar<int64_t>(1),
           limit = Tensor::scalar<int64_t>(kLoopIters);
    Tensor stop = Tensor::scalar<bool>(false);
    while (!stop.data<bool>()[0]) {
      i.mutable_data<int64_t>()[0] = i.data<int64_t>()[0] + one.data<int64_t>()[0];
      stop.mutable_data<bool>()[0] = i.data<int64_t>()[0] >= limit.data<int64_t>()[0];
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * kLoopIters);
}
BENCHMARK(BM_PlainShouldStopLoop)->Unit(benchmark::kMillisecond);

// A step with k concurrent substeps of one Add each, run kConcurrentIters times, with `concurrency`.
void run_concurrent_substeps(benchmark::State& state, Concurrency concurrency) {
  const int k = static_cast<int>(state.range(0));
  Workspace ws;
  fill_scalars(ws);
  PlanDef plan;
  ExecutionStepDef top;
  top.name = "top";
  top.concurrent_substeps = true;
  top.num_iter = kConcurrentIters;
  for (int i = 0; i < k; ++i) {
    plan.network.push_back(add_net("n" + std::to_string(i), 1, "c" + std::to_string(i) + "_"));
    ExecutionStepDef s;
    s.name = "s" + std::to_string(i);
    s.network = {"n" + std::to_string(i)};
    top.substep.push_back(s);
  }
  plan.execution_step.push_back(top);
  RunOptions options;
  options.concurrency = concurrency;
  for (auto _ : state) run_plan(ws, plan, options);
  state.SetItemsProcessed(state.iterations() * kConcurrentIters);
}
// Substeps on pool workers.
void BM_ConcurrentSubsteps(benchmark::State& state) { run_concurrent_substeps(state, Concurrency::threads); }
BENCHMARK(BM_ConcurrentSubsteps)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
// Substeps as fibers on the thread running the step (Concurrency::fibers).
void BM_ConcurrentSubstepsOnFibers(benchmark::State& state) { run_concurrent_substeps(state, Concurrency::fibers); }
BENCHMARK(BM_ConcurrentSubstepsOnFibers)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// Peer: what Caffe2 did — one std::thread per substep per iteration, each doing its Add.
void BM_ThreadPerSubstep(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const int64_t iters = kConcurrentIters / 10;  // slow; fewer iterations, same per-iteration figure
  Tensor a = Tensor::scalar<int64_t>(1), b = Tensor::scalar<int64_t>(2);
  std::vector<Tensor> c(static_cast<std::size_t>(k), Tensor::scalar<int64_t>(0));
  for (auto _ : state) {
    for (int64_t it = 0; it < iters; ++it) {
      std::vector<std::thread> threads;
      threads.reserve(static_cast<std::size_t>(k));
      for (int i = 0; i < k; ++i)
        threads.emplace_back([&, i] {
          c[static_cast<std::size_t>(i)].mutable_data<int64_t>()[0] = a.data<int64_t>()[0] + b.data<int64_t>()[0];
        });
      for (auto& t : threads) t.join();
    }
  }
  state.SetItemsProcessed(state.iterations() * iters);
}
BENCHMARK(BM_ThreadPerSubstep)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// Runs plan once per benchmark iteration in a fresh workspace; items are the plan's steps.
void run_plan_per_iteration(benchmark::State& state, const PlanDef& plan) {
  for (auto _ : state) {
    Workspace ws;
    fill_scalars(ws);
    run_plan(ws, plan);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// A plan of n nets of one Add each and n steps, step i running net i: checked, instantiated and
// run once per iteration (run_plan), so the time is the compile time of n nets.
void BM_PlanOfNets(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  PlanDef plan;
  for (std::size_t i = 0; i < n; ++i) {
    plan.network.push_back(add_net("n" + std::to_string(i), 1));
    ExecutionStepDef s;
    s.name = "s" + std::to_string(i);
    s.network = {plan.network.back().name};
    plan.execution_step.push_back(std::move(s));
  }
  run_plan_per_iteration(state, plan);
}
BENCHMARK(BM_PlanOfNets)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

// Peer: the same n steps, every one running one net of one Add.
void BM_PlanOfSteps(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  PlanDef plan;
  plan.network.push_back(add_net("n", 1));
  for (std::size_t i = 0; i < n; ++i) {
    ExecutionStepDef s;
    s.name = "s" + std::to_string(i);
    s.network = {"n"};
    plan.execution_step.push_back(std::move(s));
  }
  run_plan_per_iteration(state, plan);
}
BENCHMARK(BM_PlanOfSteps)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
