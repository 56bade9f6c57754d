// FutexMutex: mutual exclusion under contention, try_lock, and that a blocked locker is woken.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "moka/core/futex_mutex.h"

namespace moka {
namespace {

// Four threads (more than this machine's cores, so holders get preempted and lockers sleep) add to
// a plain counter under the lock; a lost update or a torn pair would show in the totals.
TEST(FutexMutex, ExcludesUnderContention) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 100'000;
  FutexMutex mu;
  int64_t counter = 0;
  int64_t pair_a = 0;
  int64_t pair_b = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lk(mu);
        ++counter;
        ++pair_a;
        ASSERT_EQ(pair_a, pair_b + 1);
        ++pair_b;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kRounds);
  EXPECT_EQ(pair_a, pair_b);
}

TEST(FutexMutex, TryLockFailsWhileHeldAndSucceedsAfter) {
  FutexMutex mu;
  ASSERT_TRUE(mu.try_lock());
  std::thread other([&] { EXPECT_FALSE(mu.try_lock()); });
  other.join();
  mu.unlock();
  std::thread again([&] {
    EXPECT_TRUE(mu.try_lock());
    mu.unlock();
  });
  again.join();
}

// A locker that found the lock held goes to sleep; the holder's unlock must wake it (a lost wake-up
// would hang here until the test's timeout).
TEST(FutexMutex, UnlockWakesABlockedLocker) {
  for (int round = 0; round < 20; ++round) {
    FutexMutex mu;
    mu.lock();
    std::atomic<bool> got{false};
    std::thread waiter([&] {
      mu.lock();
      got.store(true);
      mu.unlock();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 4 == 0 ? 5 : 0));
    EXPECT_FALSE(got.load());
    mu.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_TRUE(mu.try_lock());  // free again: the woken locker released it
    mu.unlock();
  }
}

// Several sleepers behind one holder: each unlock passes the lock on until all got through.
TEST(FutexMutex, EveryWaiterGetsThrough) {
  FutexMutex mu;
  mu.lock();
  std::atomic<int> through{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      std::lock_guard lk(mu);
      through.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(through.load(), 0);
  mu.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(through.load(), 3);
}

}  // namespace
}  // namespace moka
