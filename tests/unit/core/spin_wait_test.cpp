// Tests for spin_yield() / loaded() (src/core/spin_wait.h): yields that lose the core to another program
// switch every spin to pausing, yields that go to the process's own threads do not, and spin_yield stays
// safe to call from many threads at once (TSan).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "../../../src/core/spin_wait.h"

namespace moka::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

std::vector<int> usable_cpu_list() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  return cpus;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Yields {
  int slow = 0;         // calls that took over a millisecond; -1 where the thread could not pin itself
  bool loaded = false;  // loaded() when the loop ended
};

// Runs spin_yield() in a thread pinned to `cpu` until loaded(), `want_slow` calls that took over a
// millisecond, or 10 s.
Yields yield_on(int cpu, int want_slow) {
  Yields y;
  std::thread yielder([&] {
    if (!pin_to(cpu)) {
      y.slow = -1;
      return;
    }
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (!(y.loaded = loaded()) && y.slow < want_slow) {
      const auto before = steady_clock::now();
      if (before >= deadline) break;
      spin_yield();
      if (steady_clock::now() - before > milliseconds(1)) ++y.slow;
    }
  });
  yielder.join();
  return y;
}

// A child process spinning on one CPU, standing in for another program; killed and reaped on scope exit.
class BusyProcess {
 public:
  explicit BusyProcess(int cpu) {
    pid_ = fork();
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(3);
      for (;;) {
      }
    }
  }
  ~BusyProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;
  /// False where it could not start or pin itself.
  bool running() {
    if (pid_ <= 0) return false;
    std::this_thread::sleep_for(milliseconds(20));
    int status = 0;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  pid_t pid_ = -1;
};

TEST(SpinWait, CrowdedOutBelowSixtyPercentOfTheUsableCpus) {
  EXPECT_TRUE(crowded_out(0.0, 1));
  EXPECT_TRUE(crowded_out(0.5, 1));
  EXPECT_FALSE(crowded_out(0.6, 1));
  EXPECT_FALSE(crowded_out(1.0, 1));
  EXPECT_TRUE(crowded_out(1.0, 2));   // two busy neighbours beside a pipe on two cores: ~0.03–1.0
  EXPECT_FALSE(crowded_out(1.5, 2));  // four pipe stages of its own on two cores: ~1.5–2.0
  EXPECT_TRUE(crowded_out(4.0, 16));
  EXPECT_FALSE(crowded_out(16.0, 16));
}

TEST(SpinWait, YieldsThatLoseTheCoreToAnotherProgramSwitchSpinsToPausing) {
  const std::vector<int> cpus = usable_cpu_list();
  ASSERT_FALSE(cpus.empty());
  BusyProcess busy(cpus[0]);  // a yield hands it the core for the rest of a time slice
  if (!busy.running()) GTEST_SKIP() << "could not start a busy process pinned to CPU " << cpus[0];
  const Yields y = yield_on(cpus[0], 1 << 30);
  if (y.slow < 0) GTEST_SKIP() << "this system does not let a thread pin itself to CPU " << cpus[0];
  EXPECT_TRUE(y.loaded) << "yields beside a busy process on the same CPU did not switch spins to pausing in 10 s ("
                        << y.slow << " took over 1 ms)";
}

TEST(SpinWait, YieldsThatGoToOwnThreadsKeepYielding) {
  // Outwait a pause window left by an earlier test in this process.
  const auto calm = steady_clock::now() + std::chrono::seconds(2);
  while (loaded() && steady_clock::now() < calm) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_FALSE(loaded()) << "a pause window outlasted 2 s";
  const std::vector<int> cpus = usable_cpu_list();
  ASSERT_FALSE(cpus.empty());
  // Busy threads of this process on every usable CPU: the yields lose the core, but to this process.
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (std::size_t i = 0; i < cpus.size() && i < 64; ++i)
    busy.emplace_back([&, cpu = cpus[i]] {
      pin_to(cpu);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  const auto wall0 = steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  const Yields y = yield_on(cpus[0], 6);
  const double rate =
      (process_cpu_seconds() - cpu0) / std::chrono::duration<double>(steady_clock::now() - wall0).count();
  stop = true;
  for (auto& t : busy) t.join();
  if (y.slow < 0) GTEST_SKIP() << "this system does not let a thread pin itself to CPU " << cpus[0];
  if (rate < 0.8 * static_cast<double>(cpus.size()))
    GTEST_SKIP() << "other programs held the CPUs (this process used " << rate << " of " << cpus.size()
                 << "): cannot tell own threads from theirs here";
  EXPECT_EQ(y.slow, 6) << "no yield lost the core to a busy thread pinned to the same CPU within 10 s";
  EXPECT_FALSE(y.loaded) << "yields that went to this process's own threads switched spins to pausing";
}

TEST(SpinWait, SpinYieldUntilReturnsWhenReadyOrAfterItsSpinTime) {
  int tries = 0;
  EXPECT_TRUE(spin_yield_until(std::chrono::microseconds(50), [&] { return ++tries == 5; }));
  EXPECT_EQ(tries, 5) << "ready() is asked once per spin, and spinning stops as soon as it holds";

  std::atomic<bool> flag{false};
  // The setter waits long enough that a spinner preempted by a busy machine (a sanitizer build
  // beside it once stopped one for over 5 ms) still returns first.
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(500));
    flag.store(true);
  });
  const auto start = steady_clock::now();
  const bool got = spin_yield_until(std::chrono::microseconds(50), [&] { return flag.load(); });
  const auto took = steady_clock::now() - start;
  EXPECT_FALSE(got) << "a condition that holds only after 500 ms is not awaited past the 50 µs spin time";
  EXPECT_LT(took, milliseconds(250));
  setter.join();
  EXPECT_TRUE(spin_yield_until(std::chrono::microseconds(50), [&] { return flag.load(); }));
}

TEST(SpinWait, ManyThreadsSpinAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int64_t> calls{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        spin_yield();
        cpu_relax();
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 8 * 2000);
}

}  // namespace
}  // namespace moka::detail
