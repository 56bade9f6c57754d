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

// Sources are read at export: merged into the sorted cells, equal keys summed, never reset.
TEST(StatRegistry, SourcesAreReadAtExportAndNotReset) {
  struct Fixed final : StatSource {
    std::vector<StatRegistry::Entry> entries;
    void read(std::vector<StatRegistry::Entry>& out) const override {
      out.insert(out.end(), entries.begin(), entries.end());
    }
  };
  StatRegistry r;
  r.set("b", 1);
  r.set("d", 2);
  Fixed one, two;
  one.entries = {{"c", 10}, {"a", 20}, {"d", 5}};
  two.entries = {{"c", 1}};
  r.add_source(&one);
  r.add_source(&two);
  using E = StatRegistry::Entry;
  EXPECT_EQ(r.export_all(true), (std::vector<E>{{"a", 20}, {"b", 1}, {"c", 11}, {"d", 7}}));
  EXPECT_EQ(r.export_all(false), (std::vector<E>{{"a", 20}, {"b", 0}, {"c", 11}, {"d", 5}}));
  r.remove_source(&one);
  r.remove_source(&two);
  EXPECT_EQ(r.export_all(false), (std::vector<E>{{"b", 0}, {"d", 0}}));
}

// The pipes' timer keys (docs/pipelines.md §5.1) are read back by pipe_counts, with their records where the pipe
// counts them; other keys are not pipes.
TEST(StatRegistry, PipeCountsReadThePipesTimerAndRecordCounts) {
  const std::vector<StatRegistry::Entry> stats{{"reader/pipe/read_shard_0/TextFileReader/batches_0", 900},
                                               {"reader/pipe/read_shard_0/TextFileReader/batches_0/count", 3},
                                               {"reader/pipe/read_shard_0/TextFileReader/batches_0/records", 250},
                                               {"trainer/pipe/sgd/q/NoOutput/count", 7},
                                               {"queue/pipe/count", 1},
                                               {"my/count", 2},
                                               {"a/pipe/count", 4},
                                               {"b/pipe/x/count", 5},
                                               {"c/pipe/lone/records", 6}};
  const std::vector<PipeCounts> pipes = pipe_counts(stats);
  ASSERT_EQ(pipes.size(), 3u);
  EXPECT_EQ(pipes[0].pipe, "reader/pipe/read_shard_0/TextFileReader/batches_0");
  EXPECT_EQ(pipes[0].label, "reader/read_shard_0");
  EXPECT_EQ(pipes[0].batches, 3);
  EXPECT_TRUE(pipes[0].counts_records);
  EXPECT_EQ(pipes[0].records, 250);
  EXPECT_EQ(pipes[1].label, "trainer/sgd");
  EXPECT_EQ(pipes[1].batches, 7);
  EXPECT_FALSE(pipes[1].counts_records);  // no "/records" key: its reader yields no record
  EXPECT_EQ(pipes[1].records, 0);
  EXPECT_EQ(pipes[2].pipe, "b/pipe/x");  // a name without input and output still counts
  EXPECT_EQ(pipes[2].label, "b/x");
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
