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

TEST(SpinWait, AYieldThatLosesTheCoreSwitchesSpinsToPausing) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);

  // A busy thread on the same core as the yielding thread: the scheduler gives it the core on a
  // yield, for the rest of a time slice (milliseconds), which is what a loaded machine looks like.
  std::atomic<bool> stop{false};
  std::atomic<int> busy_pinned{-1};  // -1 until the busy thread has tried to pin itself, then 0 or 1
  std::thread busy([&] {
    busy_pinned = pin_to(cpu) ? 1 : 0;
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (busy_pinned.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (busy_pinned.load() == 0) {
    stop = true;
    busy.join();
    GTEST_SKIP() << "this system does not let a thread pin itself to CPU " << cpu;
  }
  std::thread yielder([&] {
    ASSERT_TRUE(pin_to(cpu));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!loaded() && std::chrono::steady_clock::now() < deadline) spin_yield();
  });
  yielder.join();
  stop = true;
  busy.join();
  EXPECT_TRUE(loaded()) << "no yield lost the core to a busy thread pinned to the same CPU within 10 s";
  // While loaded, spin_yield pauses and returns (no yield).
  for (int i = 0; i < 1000; ++i) spin_yield();
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
