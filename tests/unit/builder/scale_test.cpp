// Building at scale: a plan collecting many nets, a group of many tasks of one name, merging many nets — linear in
// their size.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

// The fastest of three calls of fn (other work on the machine slows single runs down, rarely all three).
double best_seconds(const std::function<void()>& fn) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Plan::add_step collects the nets of a step in order of first use. It searched the names
// collected so far for every net: a step of 50k substeps with a net each took ~1.5 s in release.
TEST(BuildScale, PlanCollectsManyNetsInLinearTime) {
  constexpr int kSubsteps = 50'000;
  std::vector<StepOrNet> own_nets, shared_net;
  own_nets.reserve(kSubsteps);
  shared_net.reserve(kSubsteps);
  Net shared("scale_shared");
  for (int i = 0; i < kSubsteps; ++i) {
    own_nets.emplace_back(execution_step("s", Net("scale_own")));
    shared_net.emplace_back(execution_step("s", shared));
  }
  const ExecutionStep many_nets = execution_step("many_nets", own_nets);
  const ExecutionStep one_net = execution_step("one_net", shared_net);
  std::size_t collected = 0;
  const double with_many = best_seconds([&] { collected = Plan("p").add_step(many_nets).nets().size(); });
  const double with_one = best_seconds([&] { Plan("p").add_step(one_net); });
  EXPECT_EQ(collected, static_cast<std::size_t>(kSubsteps));
  // Measured (release): 33 ms for 50k nets, 5 ms over one net (each new net is frozen and indexed
  // once: a constant per net); the search per net made it 300x.
  EXPECT_LT(with_many, 30 * with_one) << with_many << " s for " << kSubsteps << " nets, " << with_one
                                      << " s for as many substeps over one net";
}

// Naming a task searched every task of its group per candidate name: n tasks of one name cost
// O(n^3) — 2500 took 6 s, 5000 took 55 s.
TEST(BuildScale, ManyTasksOfOneNameAreNamedInLinearTime) {
  constexpr int kTasks = 3000;
  std::vector<std::string> names;
  auto build = [&](bool same_name) {
    TaskGroup group([&] {
      for (int i = 0; i < kTasks; ++i) Task({.name = same_name ? "t" : "t" + std::to_string(i)}, [] {});
    });
    names.clear();
    for (const Task& t : group.tasks()) names.push_back(t.name());
  };
  const double one_name = best_seconds([&] { build(true); });
  ASSERT_EQ(names.size(), static_cast<std::size_t>(kTasks));
  EXPECT_EQ(names[0], "local/t");
  EXPECT_EQ(names[1], "local/t:1");
  EXPECT_EQ(names.back(), "local/t:" + std::to_string(kTasks - 1));
  const double distinct = best_seconds([&] { build(false); });
  EXPECT_LT(one_name, 5 * distinct) << one_name << " s for " << kTasks << " tasks of one name, " << distinct
                                    << " s for as many of distinct names";
}

// merge_nets (what an IfNet/WhileNet block's nets become) rebuilt the set of blobs the merged net
// knows for every net it appended: n nets cost O(n^2) — 8000 nets of one operator took seconds.
TEST(BuildScale, MergeNetsIsLinearInTheNumberOfNets) {
  constexpr int kOps = 8000;
  auto nets_of = [](int num_nets) {
    std::vector<NetDef> nets(static_cast<std::size_t>(num_nets));
    for (int i = 0; i < kOps; ++i) {
      NetDef& n = nets[static_cast<std::size_t>(i % num_nets)];
      const std::string in = "in_" + std::to_string(i), out = "out_" + std::to_string(i);
      n.op.push_back(make_op("Copy", {in}, {out}));
      n.external_input.push_back(in);
      n.external_output.push_back(out);
    }
    return nets;
  };
  const std::vector<NetDef> many = nets_of(kOps), two = nets_of(2);
  NetDef merged;
  const double with_many = best_seconds([&] { merged = merge_nets(many, {"out_0"}); });
  const double with_two = best_seconds([&] { merge_nets(two, {"out_0"}); });
  EXPECT_EQ(merged.op.size(), static_cast<std::size_t>(kOps));
  EXPECT_EQ(merged.external_input.size(), static_cast<std::size_t>(kOps));
  EXPECT_EQ(merged.external_output, std::vector<std::string>{"out_0"});
  EXPECT_LT(with_many, 10 * with_two) << with_many << " s for " << kOps << " nets, " << with_two
                                      << " s for 2 nets of as many operators";
}

// The suffix search resumes where it stopped without skipping a free name: names taken by tasks
// added from elsewhere, and by tasks named `t:2` explicitly, are skipped; nothing else is.
TEST(BuildScale, TaskSuffixesSkipOnlyTakenNames) {
  Task outside({.name = "t:1"});
  std::vector<std::string> names;
  TaskGroup group([&] {
    Task({.name = "t"});
    TaskGroup::current()->add(outside);  // "local/t:1", taken without the group naming it
    Task({.name = "t:2"});
    Task({.name = "t"});
    Task({.name = "t"});
    Task({.name = "t"});
  });
  for (const Task& t : group.tasks()) names.push_back(t.name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"local/t:1", "local/t", "local/t:2", "local/t:3", "local/t:4", "local/t:5"}));
}

}  // namespace
}  // namespace moka
