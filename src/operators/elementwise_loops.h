// The elementwise loops of the binary arithmetic operators (Add, Sub, Mul, Div), built twice on
// x86-64: for the baseline target (SSE2) and for AVX2, picked once per process by what the CPU has.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#define MOKA_ELEMENTWISE_AVX2 1
#endif

namespace moka::detail {

// The loop bodies; always inlined, so each caller below compiles them for its own target. Every
// element gets one IEEE operation (or one integer operation), so both builds give identical results:
// only the vector width differs. `po` may alias `pa` or `pb` (in-place operators); the compiler checks.
template <class Fn, class T>
[[gnu::always_inline]] inline void loop_same(const T* pa, const T* pb, T* po, int64_t n) {
  for (int64_t k = 0; k < n; ++k) po[k] = Fn::apply(pa[k], pb[k]);
}
template <class Fn, class T>
[[gnu::always_inline]] inline void loop_right(const T* pa, T y, T* po, int64_t n) {
  for (int64_t k = 0; k < n; ++k) po[k] = Fn::apply(pa[k], y);
}
template <class Fn, class T>
[[gnu::always_inline]] inline void loop_left(T x, const T* pb, T* po, int64_t n) {
  for (int64_t k = 0; k < n; ++k) po[k] = Fn::apply(x, pb[k]);
}

#ifdef MOKA_ELEMENTWISE_AVX2
template <class Fn, class T>
[[gnu::target("avx2")]] void loop_same_avx2(const T* pa, const T* pb, T* po, int64_t n) {
  loop_same<Fn>(pa, pb, po, n);
}
template <class Fn, class T>
[[gnu::target("avx2")]] void loop_right_avx2(const T* pa, T y, T* po, int64_t n) {
  loop_right<Fn>(pa, y, po, n);
}
template <class Fn, class T>
[[gnu::target("avx2")]] void loop_left_avx2(T x, const T* pb, T* po, int64_t n) {
  loop_left<Fn>(x, pb, po, n);
}

/// True when the CPU runs AVX2 (decided once, at load time).
inline const bool kCpuHasAvx2 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}();
#endif

/// po[k] = Fn(pa[k], pb[k]) for k < n.
template <class Fn, class T>
void elementwise_same(const T* pa, const T* pb, T* po, int64_t n) {
#ifdef MOKA_ELEMENTWISE_AVX2
  if (kCpuHasAvx2) return loop_same_avx2<Fn>(pa, pb, po, n);
#endif
  loop_same<Fn>(pa, pb, po, n);
}
/// po[k] = Fn(pa[k], y) for k < n.
template <class Fn, class T>
void elementwise_right(const T* pa, T y, T* po, int64_t n) {
#ifdef MOKA_ELEMENTWISE_AVX2
  if (kCpuHasAvx2) return loop_right_avx2<Fn>(pa, y, po, n);
#endif
  loop_right<Fn>(pa, y, po, n);
}
/// po[k] = Fn(x, pb[k]) for k < n.
template <class Fn, class T>
void elementwise_left(T x, const T* pb, T* po, int64_t n) {
#ifdef MOKA_ELEMENTWISE_AVX2
  if (kCpuHasAvx2) return loop_left_avx2<Fn>(x, pb, po, n);
#endif
  loop_left<Fn>(x, pb, po, n);
}

}  // namespace moka::detail
