// spin_yield(): sched_yield while yields are cheap, pauses while the machine is loaded (see spin_wait.h).
#include "core/spin_wait.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace moka::detail {

namespace {

// A yield that returns later than this gave the core to another thread for most of a time slice;
// a yield with nothing else to run returns in about a microsecond.
constexpr int64_t kSlowYieldNs = 500'000;
// How long spins pause instead of yielding after a slow yield.
constexpr int64_t kPauseWindowNs = 200'000'000;
// Pauses standing in for one yield (about as long as a cheap yield: ~25 ns each on x86).
constexpr int kPausesPerYield = 20;

// steady_clock ns until which spin_yield pauses; relaxed: a hint, and any stale value is harmless.
std::atomic<int64_t> pause_until_ns{0};

// The worker pool's running, not waiting, jobs (set_own_running_threads).
std::atomic<std::size_t> own_running{0};

// CPUs this process may run on (its affinity mask; hardware_concurrency where that is unknown).
std::size_t usable_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<std::size_t>(CPU_COUNT(&set));
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool loaded() noexcept { return now_ns() < pause_until_ns.load(std::memory_order_relaxed); }

void set_own_running_threads(std::size_t n) noexcept { own_running.store(n, std::memory_order_relaxed); }

void spin_yield() noexcept {
  const int64_t before = now_ns();
  if (before < pause_until_ns.load(std::memory_order_relaxed)) {
    for (int i = 0; i < kPausesPerYield; ++i) cpu_relax();
    return;
  }
  std::this_thread::yield();
  const int64_t after = now_ns();
  if (after - before <= kSlowYieldNs) return;
  static const std::size_t cpus = usable_cpus();
  if (own_running.load(std::memory_order_relaxed) > cpus) return;  // our own threads took the core
  pause_until_ns.store(after + kPauseWindowNs, std::memory_order_relaxed);
}

}  // namespace moka::detail
