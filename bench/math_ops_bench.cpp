// Dense math operators (MatMul, FC, ReduceMean, Sigmoid, Scale, WeightedSum), each run as a one-operator
// SimpleNet beside a plain C++ loop doing the same computation on the same sizes in the same binary.
//
// Benchmarks run in registration order: each plain loop runs just before its operator, which reports
// `vs_plain`, its time per run over the plain loop's (below 1: the operator is faster). The plain loops are
// what one writes without thinking about speed: the i-k-j triple loop for a matrix product, one running sum
// for a mean, std::exp for the sigmoid; they are compiled for the baseline x86-64 target, as moka is (moka
// adds an AVX2 build of its loops, picked at run time).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace {

using namespace moka;
using Clock = std::chrono::steady_clock;

// Seconds per run of each plain loop, by case name, for the operator benchmark that follows it.
std::map<std::string, double>& plain_seconds() {
  static std::map<std::string, double> m;
  return m;
}

std::vector<float> random_floats(int64_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

Tensor random_tensor(std::vector<int64_t> shape, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector<float>(std::move(shape), random_floats(n, seed));
}

// Runs `body` for the benchmark's iterations and returns the seconds per run.
template <class F>
double timed_loop(benchmark::State& state, F&& body) {
  const auto t0 = Clock::now();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return state.iterations() > 0 ? s / static_cast<double>(state.iterations()) : 0;
}

void record_plain(const std::string& name, double seconds) { plain_seconds()[name] = seconds; }

// A workspace holding `inputs`, and a net of one operator over them, created once and run per iteration.
struct OneOpNet {
  Workspace ws;
  SimpleNet* net = nullptr;
  OneOpNet(const std::vector<std::pair<std::string, Tensor>>& inputs, OperatorDef op) {
    for (const auto& [name, t] : inputs) ws.create_blob(name)->get_mutable<Tensor>() = t;
    NetDef def;
    def.name = "bench";
    def.op.push_back(std::move(op));
    net = create_net(ws, def);
    net->run();  // sizes the outputs
  }
};

void report_op(benchmark::State& state, const std::string& name, double seconds) {
  auto it = plain_seconds().find(name);
  if (it != plain_seconds().end() && it->second > 0) state.counters["vs_plain"] = seconds / it->second;
}

// ---------------------------------------------------------------------------------------------- MatMul

// The i-k-j triple loop: C = A (M x K) * B (K x N), all row-major.
void plain_matmul(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    float* ci = c + i * N;
    for (int64_t j = 0; j < N; ++j) ci[j] = 0;
    for (int64_t k = 0; k < K; ++k) {
      const float x = a[i * K + k];
      const float* bk = b + k * N;
      for (int64_t j = 0; j < N; ++j) ci[j] += x * bk[j];
    }
  }
}

std::string mm_name(int64_t M, int64_t N, int64_t K) {
  return "matmul_" + std::to_string(M) + "_" + std::to_string(N) + "_" + std::to_string(K);
}

void BM_PlainMatMul(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto a = random_floats(M * K, 1), b = random_floats(K * N, 2);
  std::vector<float> c(static_cast<std::size_t>(M * N));
  const double s = timed_loop(state, [&] {
    plain_matmul(a.data(), b.data(), c.data(), M, N, K);
    benchmark::DoNotOptimize(c.data());
  });
  record_plain(mm_name(M, N, K), s);
  state.SetItemsProcessed(state.iterations() * M * N * K);  // multiply-adds
}

void BM_MatMul(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  OneOpNet n({{"A", random_tensor({M, K}, 1)}, {"B", random_tensor({K, N}, 2)}}, make_op("MatMul", {"A", "B"}, {"Y"}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, mm_name(M, N, K), s);
  state.SetItemsProcessed(state.iterations() * M * N * K);
}

// ---------------------------------------------------------------------------------------------- FC

// Y = X W^T + b, one dot product per output.
void plain_fc(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[i * K + k] * w[j * K + k];
      y[i * N + j] = s + b[j];
    }
}

std::string fc_name(int64_t M, int64_t N, int64_t K) {
  return "fc_" + std::to_string(M) + "_" + std::to_string(N) + "_" + std::to_string(K);
}

void BM_PlainFC(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const auto x = random_floats(M * K, 3), w = random_floats(N * K, 4), b = random_floats(N, 5);
  std::vector<float> y(static_cast<std::size_t>(M * N));
  const double s = timed_loop(state, [&] {
    plain_fc(x.data(), w.data(), b.data(), y.data(), M, N, K);
    benchmark::DoNotOptimize(y.data());
  });
  record_plain(fc_name(M, N, K), s);
  state.SetItemsProcessed(state.iterations() * M * N * K);
}

void BM_FC(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  OneOpNet n({{"X", random_tensor({M, K}, 3)}, {"W", random_tensor({N, K}, 4)}, {"b", random_tensor({N}, 5)}},
             make_op("FC", {"X", "W", "b"}, {"Y"}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, fc_name(M, N, K), s);
  state.SetItemsProcessed(state.iterations() * M * N * K);
}

// ---------------------------------------------------------------------------------------------- elementwise and
// reductions

constexpr int64_t kElems = 1'000'000;

void BM_PlainReduceMean(benchmark::State& state) {
  const auto x = random_floats(kElems, 6, 0, 1);
  float mean = 0;
  const double s = timed_loop(state, [&] {
    float sum = 0;
    for (int64_t k = 0; k < kElems; ++k) sum += x[static_cast<std::size_t>(k)];
    mean = sum / static_cast<float>(kElems);
    benchmark::DoNotOptimize(mean);
  });
  record_plain("reduce_mean", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_ReduceMean(benchmark::State& state) {
  OneOpNet n({{"X", Tensor::from_vector<float>({kElems}, random_floats(kElems, 6, 0, 1))}},
             make_op("ReduceMean", {"X"}, {"Y"}, {make_arg("keepdims", 0)}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, "reduce_mean", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_PlainSigmoid(benchmark::State& state) {
  const auto x = random_floats(kElems, 7, -8, 8);
  std::vector<float> y(static_cast<std::size_t>(kElems));
  const double s = timed_loop(state, [&] {
    for (std::size_t k = 0; k < y.size(); ++k) y[k] = 1.0f / (1.0f + std::exp(-x[k]));
    benchmark::DoNotOptimize(y.data());
  });
  record_plain("sigmoid", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_Sigmoid(benchmark::State& state) {
  OneOpNet n({{"X", Tensor::from_vector<float>({kElems}, random_floats(kElems, 7, -8, 8))}},
             make_op("Sigmoid", {"X"}, {"Y"}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, "sigmoid", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_PlainScale(benchmark::State& state) {
  const auto x = random_floats(kElems, 8);
  std::vector<float> y(static_cast<std::size_t>(kElems));
  const float scale = 0.5f;
  const double s = timed_loop(state, [&] {
    for (std::size_t k = 0; k < y.size(); ++k) y[k] = x[k] * scale;
    benchmark::DoNotOptimize(y.data());
  });
  record_plain("scale", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_Scale(benchmark::State& state) {
  OneOpNet n({{"X", Tensor::from_vector<float>({kElems}, random_floats(kElems, 8))}},
             make_op("Scale", {"X"}, {"Y"}, {make_arg("scale", 0.5)}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, "scale", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

// The SGD update, in place: param = 1 * param + (-lr) * grad.
void BM_PlainWeightedSum(benchmark::State& state) {
  auto p = random_floats(kElems, 9);
  const auto g = random_floats(kElems, 10);
  const float w0 = 1.0f, w1 = -1e-3f;
  const double s = timed_loop(state, [&] {
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = w0 * p[k] + w1 * g[k];
    benchmark::DoNotOptimize(p.data());
  });
  record_plain("weighted_sum", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

void BM_WeightedSum(benchmark::State& state) {
  OneOpNet n({{"param", Tensor::from_vector<float>({kElems}, random_floats(kElems, 9))},
              {"one", Tensor::from_vector<float>({1}, {1.0f})},
              {"grad", Tensor::from_vector<float>({kElems}, random_floats(kElems, 10))},
              {"neg_lr", Tensor::from_vector<float>({1}, {-1e-3f})}},
             make_op("WeightedSum", {"param", "one", "grad", "neg_lr"}, {"param"}));
  const double s = timed_loop(state, [&] { n.net->run(); });
  report_op(state, "weighted_sum", s);
  state.SetItemsProcessed(state.iterations() * kElems);
}

}  // namespace

// Each plain loop before its operator (registration order is run order).
BENCHMARK(BM_PlainMatMul)->Args({256, 1, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul)->Args({256, 1, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainMatMul)->Args({512, 512, 512})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatMul)->Args({512, 512, 512})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlainFC)->Args({256, 1, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FC)->Args({256, 1, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainReduceMean)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReduceMean)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainSigmoid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sigmoid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainScale)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Scale)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainWeightedSum)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WeightedSum)->Unit(benchmark::kMicrosecond);
