// Tests for AtomicMutex (moka/core/atomic_mutex.h): mutual exclusion under contention (checked by the
// count and, under TSan, by the race detector on a plain counter), try_lock, and waking a sleeper.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "moka/core/atomic_mutex.h"
#include "moka/ops/mutex.h"

namespace moka {
namespace {

TEST(AtomicMutex, ExcludesUnderContention) {
  AtomicMutex mu;
  int64_t counter = 0;  // plain: only ever touched under mu
  constexpr int kThreads = 4;
  constexpr int kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kIters; ++i) {
        std::lock_guard lk(mu);
        // A read-modify-write spread over a yield now and then, so that contenders do wait.
        const int64_t v = counter;
        if (i % 1024 == 0) std::this_thread::yield();
        counter = v + 1;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIters);
}

TEST(AtomicMutex, TryLockFailsWhileHeldAndSucceedsAfter) {
  AtomicMutex mu;
  ASSERT_TRUE(mu.try_lock());
  std::atomic<bool> got{true};
  std::thread([&] { got = mu.try_lock(); }).join();
  EXPECT_FALSE(got.load());
  mu.unlock();
  std::thread([&] {
    got = mu.try_lock();
    if (got) mu.unlock();
  }).join();
  EXPECT_TRUE(got.load());
}

TEST(AtomicMutex, WakesAWaiterThatWentToSleep) {
  AtomicMutex mu;
  mu.lock();
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    std::lock_guard lk(mu);  // spins briefly, then sleeps until the unlock below
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // well past the spin
  EXPECT_FALSE(entered.load());
  mu.unlock();
  waiter.join();  // a lost wake-up would hang here (the test's timeout fails it)
  EXPECT_TRUE(entered.load());
  EXPECT_TRUE(mu.try_lock());  // free again after the waiter's unlock
  mu.unlock();
}

TEST(BlobMutex, IsLockable) {
  BlobMutex mu;
  {
    std::unique_lock lk(mu);
    EXPECT_FALSE(mu.try_lock());
  }
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

}  // namespace
}  // namespace moka
