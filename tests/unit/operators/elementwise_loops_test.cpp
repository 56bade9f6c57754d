// The binary operators' elementwise loops: the build the CPU picked (AVX2 where it has it) gives
// bit-identical results to the baseline build and to one operation per element, for every length
// around the vector widths, unaligned starts, in-place aliasing and every numeric dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "../../../src/operators/elementwise_loops.h"

namespace moka::detail {
namespace {

struct Plus {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
      return a + b;
  }
};
struct Times {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else
      return a * b;
  }
};
struct Over {
  template <class T>
  static T apply(T a, T b) {
    return a / b;
  }  // floating point only here
};

template <class T>
std::vector<T> random_values(std::mt19937_64& rng, std::size_t n) {
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(rng());
    } else {
      x = static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(rng));
    }
  }
  return v;
}

template <class T>
bool same_bits(const T* a, const T* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;  // empty vectors may hold null pointers
}

template <class Fn, class T>
void check_type() {
  std::mt19937_64 rng(42);
  for (int64_t n = 0; n <= 70; ++n) {
    for (int64_t offset = 0; offset < 3; ++offset) {  // unaligned starts
      const auto a = random_values<T>(rng, static_cast<std::size_t>(n + offset));
      auto b = random_values<T>(rng, static_cast<std::size_t>(n + offset));
      if constexpr (!std::is_integral_v<T>) {
        for (auto& x : b)
          if (x == 0) x = 1;
      }
      const T* pa = a.data() + offset;
      const T* pb = b.data() + offset;
      T y = random_values<T>(rng, 1)[0];  // the broadcast side: not an element of b
      if (y == T(0)) y = T(3);
      std::vector<T> want(static_cast<std::size_t>(n)), got(want.size()), base(want.size());
      for (int64_t k = 0; k < n; ++k) want[k] = Fn::apply(pa[k], pb[k]);
      const auto fresh = [](std::vector<T>& v) { std::fill(v.begin(), v.end(), T(77)); };
      fresh(got);
      elementwise_same<Fn>(pa, pb, got.data(), n);
      loop_same<Fn>(pa, pb, base.data(), n);
      ASSERT_TRUE(same_bits(want.data(), got.data(), want.size())) << "same, n=" << n;
      ASSERT_TRUE(same_bits(want.data(), base.data(), want.size())) << "same (baseline), n=" << n;

      for (int64_t k = 0; k < n; ++k) want[k] = Fn::apply(pa[k], y);
      fresh(got);
      elementwise_right<Fn>(pa, y, got.data(), n);
      ASSERT_TRUE(same_bits(want.data(), got.data(), want.size())) << "right, n=" << n;
      for (int64_t k = 0; k < n; ++k) want[k] = Fn::apply(y, pb[k]);
      fresh(got);
      elementwise_left<Fn>(y, pb, got.data(), n);
      ASSERT_TRUE(same_bits(want.data(), got.data(), want.size())) << "left, n=" << n;

      // In place: the output is the first input (Add's allow_inplace {0, 0}).
      std::vector<T> io(pa, pa + n);
      for (int64_t k = 0; k < n; ++k) want[k] = Fn::apply(pa[k], pb[k]);
      elementwise_same<Fn>(io.data(), pb, io.data(), n);
      ASSERT_TRUE(same_bits(want.data(), io.data(), want.size())) << "in place, n=" << n;
    }
  }
}

TEST(ElementwiseLoops, MatchOneOperationPerElement) {
  check_type<Plus, float>();
  check_type<Plus, double>();
  check_type<Plus, int8_t>();
  check_type<Plus, uint8_t>();
  check_type<Plus, int16_t>();
  check_type<Plus, int32_t>();
  check_type<Plus, int64_t>();
  check_type<Times, float>();
  check_type<Times, int32_t>();
  check_type<Times, int64_t>();
  check_type<Over, float>();
  check_type<Over, double>();
}

TEST(ElementwiseLoops, NaNAndInfinityPassThrough) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a(19, 1.0f);
  a[3] = nan;
  a[17] = inf;
  std::vector<float> out(a.size());
  elementwise_right<Plus>(a.data(), -inf, out.data(), static_cast<int64_t>(a.size()));
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_TRUE(std::isnan(out[17]));  // inf + -inf
  EXPECT_EQ(out[0], -inf);
}

}  // namespace
}  // namespace moka::detail
