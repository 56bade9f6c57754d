// A status-line reader for benchmarks: MOKA_BENCH_STATUS_MS=N reads, every N ms on a thread of its own, what
// `moka job run`'s live status line reads (the stat registry's export, each pipe's counts, every live queue's
// stats), so a benchmark run with and without it shows what the line costs the work it watches.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "moka/moka.h"

namespace moka_bench {

/// Construct once, at namespace scope: reads MOKA_BENCH_STATUS_MS (1 to 60000; another value exits with
/// status 2 and a message) and, when set, reads the status every that many ms until the program exits.
class StatusReader {
 public:
  StatusReader() {
    const char* text = std::getenv("MOKA_BENCH_STATUS_MS");
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    const long ms = std::strtol(text, &end, 10);
    if (*end != '\0' || ms < 1 || ms > 60000) {
      std::fprintf(stderr, "MOKA_BENCH_STATUS_MS=%s: expected milliseconds between reads, 1 to 60000\n", text);
      std::exit(2);
    }
    thread_ = std::thread([this, interval = std::chrono::milliseconds(ms)] {
      std::unique_lock lk(mu_);
      while (!cv_.wait_for(lk, interval, [this] { return stop_; })) {
        const auto t0 = std::chrono::steady_clock::now();
        for (const moka::PipeCounts& p : moka::pipe_counts(moka::StatRegistry::global().export_all(false)))
          sink_ += p.records + p.batches;
        for (const moka::QueueStats& q : moka::live_queue_stats()) sink_ += q.depth;
        read_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
        ++reads_;
      }
    });
  }
  ~StatusReader() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::fprintf(stderr, "status reader: %ld reads, %.1f us each (mean), %.4f%% of the time it ran\n", reads_,
                 reads_ > 0 ? static_cast<double>(read_ns_) / static_cast<double>(reads_) / 1e3 : 0.0,
                 100.0 * static_cast<double>(read_ns_) /
                     static_cast<double>(
                         std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
                             .count()));
  }
  StatusReader(const StatusReader&) = delete;
  StatusReader& operator=(const StatusReader&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  long reads_ = 0;
  int64_t read_ns_ = 0;  // time spent reading
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int64_t sink_ = 0;  // keeps the reads from being optimized out
  std::thread thread_;
};

}  // namespace moka_bench
