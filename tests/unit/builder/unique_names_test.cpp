// UniqueNames: Caffe2's names (base, base_1, ...) from a store that does not grow with names handed out
// again and again from the same base.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "../../../src/builder/unique_names.h"

namespace moka::detail {
namespace {

// Caffe2's _get_next_net_name: every name ever handed out or reserved is remembered.
struct NaiveNames {
  std::unordered_set<std::string> used;
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int i = 1; used.contains(name); ++i) name = base + "_" + std::to_string(i);
    used.insert(name);
    return name;
  }
};

TEST(UniqueNames, SameNamesAsCaffe2) {
  UniqueNames names;
  NaiveNames naive;
  // Bases that collide with each other's suffixed names, a leading zero, reserved names.
  const std::vector<std::string> bases = {"a", "a_1", "a_2", "a_1_1", "a_01", "a_0", "b", "b_10", "_", "x_"};
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    const std::string& base = bases[rng() % bases.size()];
    if (rng() % 10 == 0) {
      const std::string reserved = base + "_" + std::to_string(rng() % 40);
      names.reserve(reserved);
      naive.used.insert(reserved);
      continue;
    }
    ASSERT_EQ(names.unique(base), naive.unique(base)) << "call " << i << ", base " << base;
  }
}

TEST(UniqueNames, OneBaseAgainAndAgainStoresOneCounter) {
  UniqueNames names;
  EXPECT_EQ(names.unique("n/checkpoint_save"), "n/checkpoint_save");
  for (int i = 1; i <= 10000; ++i)
    ASSERT_EQ(names.unique("n/checkpoint_save"), "n/checkpoint_save_" + std::to_string(i));
  EXPECT_EQ(names.stored(), 2u) << "the base itself and its counter";
  EXPECT_EQ(names.unique("n/checkpoint_save_5000"), "n/checkpoint_save_5000_1") << "handed out, though not stored";
}

}  // namespace
}  // namespace moka::detail
