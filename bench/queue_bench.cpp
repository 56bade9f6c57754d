// Queue throughput: moka::BlobsQueue against tbb::concurrent_bounded_queue and a plain mutex + condition
// variable bounded queue, 1 producer/1 consumer and 2/2, capacity 64, each item a blob holding a float[16].
//
// Payloads: moka and the mutex queue swap blobs (the producer gets back the storage a consumer returned, so
// tensors are recycled); tbb_blob moves the Blob (std::move leaves the producer's blob empty, so it builds a
// new tensor per item — what a user of a move-only queue does); tbb_ptr passes pointers into a preallocated
// pool (pure queue cost, no allocation). Benchmarks run in registration order; the moka ones report their
// throughput as a ratio of the peers measured just before them in the same run (vs_tbb_blob, vs_tbb_ptr,
// vs_mutex_cv).
// MOKA_BENCH_BUSY=N runs N spinning processes beside it (a loaded machine; see busy_neighbours.h).
#include <benchmark/benchmark.h>
#include <tbb/concurrent_queue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moka/operators/blobs_queue.h"

#include "busy_neighbours.h"

namespace {

// MOKA_BENCH_BUSY=N: N spinning processes beside the benchmark (busy_neighbours.h).
const moka_bench::BusyNeighbours busy_neighbours;

using moka::Blob;
using moka::DType;
using moka::Tensor;

constexpr int kCapacity = 64;
constexpr int64_t kItems = 200'000;  // per benchmark iteration, split over the producers
constexpr int64_t kPayload = 16;     // floats per tensor

std::map<std::string, double>& rates() {
  static std::map<std::string, double> r;
  return r;
}

std::string key(const char* impl, int64_t producers) { return std::string(impl) + "/" + std::to_string(producers); }

// Fills b with item i, building the tensor only when the blob holds none.
inline void produce(Blob& b, int64_t i) {
  Tensor* t = b.tensor_or_null();
  if (t == nullptr) t = &b.emplace<Tensor>(DType::Float, std::vector<int64_t>{kPayload});
  t->mutable_data<float>()[0] = static_cast<float>(i);
}

inline float consume(const Blob& b) { return b.get<Tensor>().data<float>()[0]; }

// Runs `producers` producer threads and as many consumers until kItems went through; returns checksum.
template <class Producer, class Consumer, class Finish>
double run_threads(int64_t producers, Producer producer, Consumer consumer, Finish finish) {
  std::vector<std::thread> ts;
  std::atomic<int64_t> producers_left{producers};
  std::vector<double> sums(static_cast<std::size_t>(producers), 0.0);
  for (int64_t p = 0; p < producers; ++p)
    ts.emplace_back([&, p] {
      producer(p, kItems / producers);
      if (producers_left.fetch_sub(1) == 1) finish();
    });
  for (int64_t c = 0; c < producers; ++c) ts.emplace_back([&, c] { sums[static_cast<std::size_t>(c)] = consumer(); });
  for (auto& t : ts) t.join();
  double s = 0;
  for (double x : sums) s += x;
  return s;
}

template <class Body>
void timed(benchmark::State& state, const char* impl, Body body) {
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(body());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.SetItemsProcessed(state.iterations() * kItems);
  const double rate = static_cast<double>(state.iterations() * kItems) / seconds;
  rates()[key(impl, state.range(0))] = rate;
}

void BM_MutexCv(benchmark::State& state) {
  // The textbook bounded queue: notify on every operation, no spinning; swaps like BlobsQueue.
  struct Q {
    std::mutex mu;
    std::condition_variable not_empty, not_full;
    std::vector<Blob> ring = std::vector<Blob>(kCapacity);
    int64_t head = 0, tail = 0;
    bool closed = false;
    void push(Blob& b) {
      std::unique_lock lk(mu);
      not_full.wait(lk, [&] { return tail - head < kCapacity; });
      ring[static_cast<std::size_t>(tail++ % kCapacity)].swap(b);
      lk.unlock();
      not_empty.notify_one();
    }
    bool pop(Blob& b) {
      std::unique_lock lk(mu);
      not_empty.wait(lk, [&] { return tail != head || closed; });
      if (tail == head) return false;
      ring[static_cast<std::size_t>(head++ % kCapacity)].swap(b);
      lk.unlock();
      not_full.notify_one();
      return true;
    }
    void close() {
      {
        std::lock_guard lk(mu);
        closed = true;
      }
      not_empty.notify_all();
    }
  };
  const int64_t n = state.range(0);
  timed(state, "mutex_cv", [&] {
    Q q;
    return run_threads(
        n,
        [&](int64_t, int64_t items) {
          Blob b;
          for (int64_t i = 0; i < items; ++i) {
            produce(b, i);
            q.push(b);
          }
        },
        [&] {
          Blob b;
          double s = 0;
          while (q.pop(b)) s += consume(b);
          return s;
        },
        [&] { q.close(); });
  });
}

void BM_TbbBlob(benchmark::State& state) {
  const int64_t n = state.range(0);
  timed(state, "tbb_blob", [&] {
    tbb::concurrent_bounded_queue<Blob> q;
    q.set_capacity(kCapacity);
    return run_threads(
        n,
        [&](int64_t, int64_t items) {
          Blob b;
          for (int64_t i = 0; i < items; ++i) {
            produce(b, i);
            q.push(std::move(b));  // leaves b empty: the next produce() builds a new tensor
          }
        },
        [&] {
          Blob b;
          double s = 0;
          for (;;) {
            q.pop(b);
            if (!b.is_initialized()) return s;  // an empty blob is the end marker
            s += consume(b);
          }
        },
        [&] {
          for (int64_t c = 0; c < n; ++c) q.push(Blob());
        });
  });
}

void BM_TbbPtr(benchmark::State& state) {
  const int64_t n = state.range(0);
  // Per producer, a pool larger than everything that can be in flight (capacity + one per thread).
  constexpr int64_t kPool = 4 * kCapacity;
  std::vector<std::vector<Blob>> pools(static_cast<std::size_t>(n));
  for (auto& pool : pools) {
    pool = std::vector<Blob>(kPool);
    for (int64_t i = 0; i < kPool; ++i) produce(pool[static_cast<std::size_t>(i)], i);
  }
  timed(state, "tbb_ptr", [&] {
    tbb::concurrent_bounded_queue<Blob*> q;
    q.set_capacity(kCapacity);
    return run_threads(
        n,
        [&](int64_t p, int64_t items) {
          auto& pool = pools[static_cast<std::size_t>(p)];
          for (int64_t i = 0; i < items; ++i) {
            Blob& b = pool[static_cast<std::size_t>(i % kPool)];
            produce(b, i);
            q.push(&b);
          }
        },
        [&] {
          double s = 0;
          for (;;) {
            Blob* b = nullptr;
            q.pop(b);
            if (b == nullptr) return s;
            s += consume(*b);
          }
        },
        [&] {
          for (int64_t c = 0; c < n; ++c) q.push(nullptr);
        });
  });
}

void BM_Moka(benchmark::State& state) {
  const int64_t n = state.range(0);
  timed(state, "moka", [&] {
    moka::BlobsQueue q("bench", kCapacity, 1);
    return run_threads(
        n,
        [&](int64_t, int64_t items) {
          Blob b;
          Blob* in[] = {&b};
          for (int64_t i = 0; i < items; ++i) {
            produce(b, i);
            q.blocking_write(in);
          }
        },
        [&] {
          Blob b;
          Blob* out[] = {&b};
          double s = 0;
          while (q.blocking_read(out)) s += consume(b);
          return s;
        },
        [&] { q.close(); });
  });
  const double mine = rates()[key("moka", n)];
  for (const char* peer : {"tbb_blob", "tbb_ptr", "mutex_cv"}) {
    auto it = rates().find(key(peer, n));
    if (it != rates().end() && it->second > 0)
      state.counters[std::string("vs_") + peer] = benchmark::Counter(mine / it->second);
  }
}

}  // namespace

BENCHMARK(BM_MutexCv)->ArgName("producers_consumers")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TbbBlob)->ArgName("producers_consumers")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TbbPtr)->ArgName("producers_consumers")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Moka)->ArgName("producers_consumers")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
