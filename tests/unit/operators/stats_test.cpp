// Unit tests of moka::StatRegistry.
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "moka/operators/stats.h"

namespace moka {
namespace {

TEST(StatRegistry, AddSetGet) {
  StatRegistry r;
  EXPECT_FALSE(r.has("a"));
  EXPECT_EQ(r.get("a"), 0);
  EXPECT_EQ(r.add("a", 5), 5);
  EXPECT_EQ(r.add("a", -2), 3);
  r.set("b", 7);
  EXPECT_TRUE(r.has("a"));
  EXPECT_EQ(r.get("b"), 7);
  r.set("max", std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r.add("max", 1), std::numeric_limits<int64_t>::min());  // wraps, no UB
}

TEST(StatRegistry, ExportIsSortedAndResets) {
  StatRegistry r;
  r.set("z", 1);
  r.set("a", 2);
  r.set("m", 3);
  using E = StatRegistry::Entry;
  EXPECT_EQ(r.export_all(false), (std::vector<E>{{"a", 2}, {"m", 3}, {"z", 1}}));
  EXPECT_EQ(r.export_all(true), (std::vector<E>{{"a", 2}, {"m", 3}, {"z", 1}}));
  EXPECT_EQ(r.export_all(false), (std::vector<E>{{"a", 0}, {"m", 0}, {"z", 0}}));
}

TEST(StatRegistry, StatCellIsStable) {
  StatRegistry r;
  std::atomic<int64_t>& cell = r.stat("k");
  for (int i = 0; i < 100; ++i) r.set("k" + std::to_string(i), i);
  EXPECT_EQ(&r.stat("k"), &cell);
  cell.fetch_add(4);
  EXPECT_EQ(r.get("k"), 4);
}

TEST(StatRegistry, ConcurrentAdds) {
  StatRegistry r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        r.add("shared", 1);
        r.add("own" + std::to_string(t), 1);
        if (i % 100 == 0) (void)r.export_all(false);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(r.get("shared"), 4000);
  EXPECT_EQ(r.get("own3"), 1000);
  EXPECT_EQ(&StatRegistry::global(), &StatRegistry::global());
}

TEST(StatShare, CountsInTheKeysValueAndFoldsIntoTheCellWhenDestroyed) {
  StatRegistry r;
  r.add("k", 10);
  {
    StatShare a(r, "k");
    StatShare b(r, "k");
    a.add(3);
    b.add(4);
    EXPECT_EQ(r.get("k"), 17);
    EXPECT_EQ(r.add("k", 1), 18);  // add's result counts the shares too
    using E = StatRegistry::Entry;
    EXPECT_EQ(r.export_all(false), (std::vector<E>{{"k", 18}}));
  }
  EXPECT_EQ(r.get("k"), 18);  // both shares folded into the cell
  EXPECT_EQ(r.stat("k").load(), 18);
}

TEST(StatShare, ResetAndSetZeroTheSharesWithoutTouchingTheirWords) {
  StatRegistry r;
  StatShare s(r, "k");
  s.add(5);
  using E = StatRegistry::Entry;
  EXPECT_EQ(r.export_all(true), (std::vector<E>{{"k", 5}}));
  EXPECT_EQ(r.get("k"), 0);
  s.add(2);
  EXPECT_EQ(r.get("k"), 2);
  r.set("k", 100);
  EXPECT_EQ(r.get("k"), 100);
  s.add(1);
  EXPECT_EQ(r.get("k"), 101);
}

TEST(StatShare, WrapsAtTheInt64Limits) {
  StatRegistry r;
  StatShare s(r, "k");
  s.add(std::numeric_limits<int64_t>::max());
  s.add(1);
  EXPECT_EQ(r.get("k"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.export_all(true).at(0).second, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.get("k"), 0);
}

// Owners add while another thread exports with reset: nothing is lost or counted twice (TSan: no race).
TEST(StatShare, OwnersAddWhileOthersExportAndReset) {
  StatRegistry r;
  constexpr int kThreads = 3;
  constexpr int64_t kAdds = 20000;
  std::atomic<int> done{0};
  int64_t exported = 0;
  std::thread reader([&] {
    while (done.load() < kThreads) {
      for (const auto& [k, v] : r.export_all(true)) exported += v;
      (void)r.get("k");
    }
  });
  std::vector<std::thread> owners;
  for (int t = 0; t < kThreads; ++t)
    owners.emplace_back([&] {
      StatShare s(r, "k");
      for (int64_t i = 0; i < kAdds; ++i) s.add(1);
      done.fetch_add(1);
    });
  for (auto& th : owners) th.join();
  reader.join();
  EXPECT_EQ(exported + r.get("k"), kThreads * kAdds);
}

}  // namespace
}  // namespace moka
