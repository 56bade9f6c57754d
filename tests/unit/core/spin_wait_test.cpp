// Tests for spin_yield() / loaded() (src/core/spin_wait.h): a yield that loses the core to a busy thread
// switches every spin to pausing; spin_yield stays safe to call from many threads at once (TSan).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../../../src/core/spin_wait.h"

namespace moka::detail {
namespace {

// Pins the calling thread to `cpu`; false where the system does not let it.
bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// Runs spin_yield() on `cpu` beside a busy thread pinned to the same CPU (which a yield hands the core
// to for the rest of a time slice, as on a loaded machine) until loaded(), `want_slow` calls that took
// over a millisecond (counted into *slow), or 10 s. False where threads cannot pin themselves.
bool yield_beside_busy_thread(int cpu, int want_slow, int* slow) {
  std::atomic<bool> stop{false};
  std::atomic<int> busy_pinned{-1};  // -1 until the busy thread has tried to pin itself, then 0 or 1
  std::thread busy([&] {
    busy_pinned = pin_to(cpu) ? 1 : 0;
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (busy_pinned.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bool pinned = busy_pinned.load() == 1;
  if (pinned) {
    std::thread yielder([&] {
      pinned = pin_to(cpu);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (pinned && !loaded() && *slow < want_slow) {
        const auto before = std::chrono::steady_clock::now();
        if (before >= deadline) break;
        spin_yield();
        if (std::chrono::steady_clock::now() - before > std::chrono::milliseconds(1)) ++*slow;
      }
    });
    yielder.join();
  }
  stop = true;
  busy.join();
  return pinned;
}

int first_usable_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  return -1;
}

// Waits out a pause window left by an earlier test in this process.
void wait_until_not_loaded() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (loaded() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_FALSE(loaded()) << "a pause window outlasted 2 s";
}

TEST(SpinWait, AYieldThatLosesTheCoreSwitchesSpinsToPausing) {
  const int cpu = first_usable_cpu();
  ASSERT_GE(cpu, 0);
  set_own_running_threads(0);
  int slow = 0;
  if (!yield_beside_busy_thread(cpu, 1 << 30, &slow))
    GTEST_SKIP() << "this system does not let a thread pin itself to CPU " << cpu;
  EXPECT_TRUE(loaded()) << "no yield lost the core to a busy thread pinned to the same CPU within 10 s";
  // While loaded, spin_yield pauses and returns (no yield).
  for (int i = 0; i < 1000; ++i) spin_yield();
}

TEST(SpinWait, SlowYieldsAreNotLoadWhileOwnThreadsOutnumberTheCores) {
  wait_until_not_loaded();
  const int cpu = first_usable_cpu();
  ASSERT_GE(cpu, 0);
  // As the worker pool reports when more of its jobs run than there are cores: the yields lose the
  // core as above, and that is what they are for.
  set_own_running_threads(std::size_t{1} << 20);
  int slow = 0;
  const bool pinned = yield_beside_busy_thread(cpu, 3, &slow);
  const bool was_loaded = loaded();
  set_own_running_threads(0);
  if (!pinned) GTEST_SKIP() << "this system does not let a thread pin itself to CPU " << cpu;
  EXPECT_EQ(slow, 3) << "no yield lost the core to a busy thread pinned to the same CPU within 10 s";
  EXPECT_FALSE(was_loaded) << "a slow yield switched spins to pausing although own threads outnumber the cores";
}

TEST(SpinWait, ManyThreadsSpinAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int64_t> calls{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        spin_yield();
        cpu_relax();
        if (loaded()) calls.fetch_add(1, std::memory_order_relaxed);
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_GE(calls.load(), 8 * 2000);
}

}  // namespace
}  // namespace moka::detail
