// Unit tests of detail::usable_cpus(): the affinity mask of the calling thread, capped by cgroup CPU
// quotas (whose file formats are parsed by cpu_limit_from_cpu_max / cpu_limit_from_cfs).
#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "../../../src/exec/usable_cpus.h"
#include "support/one_cpu.h"

namespace moka::detail {
namespace {

TEST(UsableCpus, CgroupV2CpuMax) {
  EXPECT_EQ(cpu_limit_from_cpu_max("50000 100000\n"), 0.5);
  EXPECT_EQ(cpu_limit_from_cpu_max("150000 100000"), 1.5);
  EXPECT_EQ(cpu_limit_from_cpu_max("max 100000\n"), std::nullopt);  // no limit
  EXPECT_EQ(cpu_limit_from_cpu_max(""), std::nullopt);              // no such file
  EXPECT_EQ(cpu_limit_from_cpu_max("100000"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cpu_max("0 100000"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cpu_max("50000 0"), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cpu_max("5x000 100000"), std::nullopt);
}

TEST(UsableCpus, CgroupV1CfsQuota) {
  EXPECT_EQ(cpu_limit_from_cfs("200000\n", "100000\n"), 2.0);
  EXPECT_EQ(cpu_limit_from_cfs("-1\n", "100000\n"), std::nullopt);  // no limit
  EXPECT_EQ(cpu_limit_from_cfs("", ""), std::nullopt);
  EXPECT_EQ(cpu_limit_from_cfs("abc", "100000"), std::nullopt);
}

// The calling thread's affinity mask counts: pinned to one CPU, it may use one.
TEST(UsableCpus, FollowTheCallingThreadsAffinity) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  const std::size_t before = usable_cpus();
  EXPECT_GE(before, 1u);
  EXPECT_LE(before, static_cast<std::size_t>(CPU_COUNT(&all)));
  std::thread pinned([&] {
    const testing::PinnedToOneCpu one;
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(usable_cpus(), 1u);
  });
  pinned.join();
  EXPECT_EQ(usable_cpus(), before);  // other threads keep theirs
}

}  // namespace
}  // namespace moka::detail
