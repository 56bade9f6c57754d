// spin_yield(): sched_yield while yields are cheap or go to moka's own threads, pauses while other
// programs crowd the machine (see spin_wait.h).
#include "core/spin_wait.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace moka::detail {

namespace {

// A yield that returns later than this gave the core to another thread for most of a time slice;
// a yield with nothing else to run returns in about a microsecond.
constexpr int64_t kSlowYieldNs = 500'000;
// Slow yields of one thread within kSlowYieldsWithinNs before it asks who took the core: one alone
// may be a virtual machine's pause, and the process's CPU time is only telling over a millisecond or more.
constexpr int kSlowYieldsToJudge = 3;
constexpr int64_t kSlowYieldsWithinNs = 50'000'000;
// How long spins pause instead of yielding once other programs were found crowding the machine: 20 ms
// at first, twice as long each time they are found crowding it again right after a pause, up to 320 ms
// (so a lasting load costs a few slow yields every 320 ms, and a passing one or a false alarm 20 ms).
constexpr int64_t kMinPauseNs = 20'000'000;
constexpr int64_t kMaxPauseNs = 320'000'000;
// Pauses standing in for one yield (about as long as a cheap yield: ~25 ns each on x86).
constexpr int kPausesPerYield = 20;
// The share of its usable CPUs below which a process whose yields keep losing the core is crowded out.
constexpr double kCrowdedShare = 0.6;

// steady_clock ns until which spin_yield pauses, and the length of that pause; relaxed: hints, and
// any stale value is harmless.
std::atomic<int64_t> pause_until_ns{0};
std::atomic<int64_t> pause_ns{kMinPauseNs};

// A thread's recent slow yields: how many, when the first returned, and the process's CPU time then.
struct SlowYields {
  int count = 0;
  int64_t wall0_ns = 0;
  int64_t cpu0_ns = 0;
};

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of all the process's threads (a system call: only on the slow path).
int64_t process_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

std::size_t affinity_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<std::size_t>(CPU_COUNT(&set));
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

bool crowded_out(double process_cpu_rate, std::size_t cpus) noexcept {
  return process_cpu_rate < kCrowdedShare * static_cast<double>(cpus);
}

bool loaded() noexcept { return now_ns() < pause_until_ns.load(std::memory_order_relaxed); }

void spin_yield() noexcept {
  const int64_t before = now_ns();
  if (before < pause_until_ns.load(std::memory_order_relaxed)) {
    for (int i = 0; i < kPausesPerYield; ++i) cpu_relax();
    return;
  }
  std::this_thread::yield();
  const int64_t after = now_ns();
  if (after - before <= kSlowYieldNs) return;
  thread_local SlowYields recent;
  if (recent.count == 0 || after - recent.wall0_ns > kSlowYieldsWithinNs) {
    recent = {1, after, process_cpu_ns()};
    return;
  }
  if (++recent.count < kSlowYieldsToJudge) return;
  recent.count = 0;
  static const std::size_t cpus = affinity_cpus();
  const double rate =
      static_cast<double>(process_cpu_ns() - recent.cpu0_ns) / static_cast<double>(after - recent.wall0_ns);
  if (!crowded_out(rate, cpus)) return;
  // Crowded again within one pause length of the last pause's end: the load lasts, pause longer.
  const int64_t last_end = pause_until_ns.load(std::memory_order_relaxed);
  const int64_t last_len = pause_ns.load(std::memory_order_relaxed);
  const int64_t len = after - last_end < last_len ? std::min(2 * last_len, kMaxPauseNs) : kMinPauseNs;
  pause_ns.store(len, std::memory_order_relaxed);
  pause_until_ns.store(after + len, std::memory_order_relaxed);
}

}  // namespace moka::detail
