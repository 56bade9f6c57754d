// Unit tests: Fiber and run_on_fibers — queue hand-offs between fibers on one thread, waits for another
// thread (the back-off), read timeouts, nested fiber schedulers, exceptions, deep stacks, no room for a stack.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "../../../src/exec/fiber.h"
#include "moka/core/tensor.h"
#include "moka/operators/blobs_queue.h"

namespace moka {
namespace {

using detail::run_on_fibers;

void put(BlobsQueue& q, int64_t v) {
  Blob b;
  b.get_mutable<Tensor>() = Tensor::scalar<int64_t>(v);
  Blob* in[] = {&b};
  ASSERT_TRUE(q.blocking_write(in));
}

// Reads until the queue is closed and drained.
std::vector<int64_t> drain(BlobsQueue& q) {
  std::vector<int64_t> got;
  Blob b;
  Blob* out[] = {&b};
  while (q.blocking_read(out)) got.push_back(b.get<Tensor>().item<int64_t>());
  return got;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(RunOnFibers, QueueHandOffBetweenFibersOnTheCallingThread) {
  // Capacity 2 and 1000 records: the writer fills the queue and must let the reader run, hundreds
  // of times, or this never ends — there is only the calling thread.
  BlobsQueue q("q", 2, 1);
  std::vector<int64_t> got;
  std::set<std::thread::id> threads;
  run_on_fibers(2, [&](std::size_t j) {
    threads.insert(std::this_thread::get_id());
    if (j == 0) {
      for (int64_t i = 0; i < 1000; ++i) put(q, i);
      q.close();
    } else {
      got = drain(q);
    }
  });
  EXPECT_EQ(got, iota(1000));
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(RunOnFibers, ManyWritersAndReaders) {
  BlobsQueue q("q", 3, 1);
  std::atomic<int> writers_left{4};
  std::vector<std::vector<int64_t>> got(3);
  run_on_fibers(7, [&](std::size_t j) {
    if (j < 4) {
      for (int64_t i = 0; i < 250; ++i) put(q, static_cast<int64_t>(j) * 1000 + i);
      if (--writers_left == 0) q.close();
    } else {
      got[j - 4] = drain(q);
    }
  });
  std::multiset<int64_t> all;
  for (const auto& g : got) all.insert(g.begin(), g.end());
  std::multiset<int64_t> want;
  for (int64_t w = 0; w < 4; ++w)
    for (int64_t i = 0; i < 250; ++i) want.insert(w * 1000 + i);
  EXPECT_EQ(all, want);
}

TEST(RunOnFibers, WaitsForAnotherThreadWithoutSpinningForever) {
  // The reader fiber's record comes from a thread outside the fibers: every round is idle until it
  // arrives, so the scheduler backs off (sleeps) and still sees it.
  BlobsQueue q("q", 1, 1);
  std::thread feeder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    put(q, 42);
    q.close();
  });
  std::vector<int64_t> got;
  run_on_fibers(1, [&](std::size_t) { got = drain(q); });
  feeder.join();
  EXPECT_EQ(got, std::vector<int64_t>{42});
}

TEST(RunOnFibers, ReadTimeoutInAFiber) {
  BlobsQueue q("q", 1, 1);
  QueueResult r = QueueResult::ok;
  const auto t0 = std::chrono::steady_clock::now();
  run_on_fibers(1, [&](std::size_t) {
    Blob b;
    Blob* out[] = {&b};
    r = q.read(out, 0.05);
  });
  EXPECT_EQ(r, QueueResult::timed_out);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
}

TEST(RunOnFibers, NestedSchedulerYieldsToItsSiblings) {
  // Fiber 0 runs two fibers of its own that read what fiber 1 (its sibling) writes: when both inner
  // fibers wait, fiber 0 must yield to fiber 1 rather than wait in place.
  BlobsQueue q("q", 1, 1);
  std::vector<int64_t> inner[2];
  run_on_fibers(2, [&](std::size_t j) {
    if (j == 0) {
      run_on_fibers(2, [&](std::size_t k) { inner[k] = drain(q); });
    } else {
      for (int64_t i = 0; i < 100; ++i) put(q, i);
      q.close();
    }
  });
  std::vector<int64_t> all(inner[0]);
  all.insert(all.end(), inner[1].begin(), inner[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(100));
}

// A fiber that never waits (it spins until its sibling sets a flag) yields at preempt_point once its
// turn is over; without turns the sibling would never run.
TEST(RunOnFibers, AFiberThatNeverWaitsYieldsWhenItsTurnIsOver) {
  std::atomic<bool> flag{false};
  int64_t spins = 0;
  const auto t0 = std::chrono::steady_clock::now();
  run_on_fibers(2, [&](std::size_t j) {
    if (j == 0) {
      while (!flag.load()) {
        ++spins;
        detail::preempt_point();
      }
    } else {
      flag = true;
    }
  });
  EXPECT_GT(spins, 0);
  // One turn (2 ms) plus a coarse clock tick or two.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// The same one level down: busy nested fibers must let their scheduler's siblings run too.
TEST(RunOnFibers, BusyNestedFibersDoNotStarveTheOuterOnes) {
  std::atomic<bool> flag{false};
  run_on_fibers(2, [&](std::size_t j) {
    if (j == 0) {
      run_on_fibers(2, [&](std::size_t) {
        while (!flag.load()) detail::preempt_point();
      });
    } else {
      flag = true;
    }
  });
  EXPECT_TRUE(flag.load());
}

// Outside a fiber, preempt_point does nothing.
TEST(RunOnFibers, PreemptPointOutsideAFiberIsANoOp) {
  for (int i = 0; i < 100; ++i) detail::preempt_point();
  SUCCEED();
}

TEST(RunOnFibers, ExceptionIsRethrownAfterEveryFiberEnded) {
  BlobsQueue q("q", 1, 1);
  std::vector<int64_t> got;
  try {
    run_on_fibers(3, [&](std::size_t j) {
      if (j == 0) throw std::runtime_error("job 0 failed");
      if (j == 1) {
        for (int64_t i = 0; i < 10; ++i) put(q, i);
        q.close();
      } else {
        got = drain(q);
      }
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "job 0 failed");
  }
  EXPECT_EQ(got, iota(10));  // the others ran to their end
}

// Uses about `depth` KiB of stack.
int64_t recurse(int depth) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(depth & 63);
  if (depth == 0) return pad[0];
  return recurse(depth - 1) + pad[0];
}

TEST(RunOnFibers, DeepStackAndStackReuse) {
  // 1 MiB of frames on a fiber's stack, then again on a reused one.
  for (int round = 0; round < 3; ++round) {
    int64_t r = -1;
    run_on_fibers(2, [&](std::size_t j) {
      if (j == 0) r = recurse(1000);
    });
    EXPECT_GE(r, 0);
  }
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // their shadow memory needs more address space than a low RLIMIT_AS leaves
#else
constexpr bool kSanitized = false;
#endif

TEST(RunOnFibers, NoAddressSpaceForAStackIsAnErrorNotACrash) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS and sanitizers do not mix";
  // In a child: address space capped a little above what is mapped now, then more fibers than the
  // stack pool holds (64) — the mmap of a new 8 MiB stack fails, and run_on_fibers throws.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ifstream status("/proc/self/status");
    std::string line;
    long long vm_kib = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::atoll(line.c_str() + 7);
    const rlim_t cap = static_cast<rlim_t>(vm_kib + 64 * 1024) * 1024;  // 64 MiB more: under 70 stacks
    const rlimit lim{cap, cap};
    if (vm_kib == 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(3);
    try {
      run_on_fibers(70, [](std::size_t) {});
      ::_exit(1);  // no error
    } catch (const std::system_error& e) {
      ::_exit(std::string(e.what()).find("fiber stack: mmap") != std::string::npos ? 0 : 2);
    } catch (...) {
      ::_exit(2);
    }
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "the child crashed (signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "1: no error; 2: another error than the mmap failure; 3: setup failed";
}

}  // namespace
}  // namespace moka
