// XXH3-64 built for AVX-512 (selected at run time by xxh3_fast.cpp only on CPUs that have it; the
// rest of moka stays plain x86-64).
#include "storage/xxh3_fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
// Every header xxhash.h needs, included before the target switch so their inline functions are
// compiled for the baseline.
#include <immintrin.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)  // clang ignores GCC's target pragma
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
#define MOKA_XXH3_VECTOR XXH_AVX512
#include "storage/xxh3_variant.inc"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace moka::detail {
const Xxh3Impl* xxh3_avx512_impl() noexcept {
  static const Xxh3Impl impl{"avx512", v_hash, v_reset, v_update, v_digest};
  return &impl;
}
}  // namespace moka::detail
#else
namespace moka::detail {
const Xxh3Impl* xxh3_avx512_impl() noexcept { return nullptr; }
}  // namespace moka::detail
#endif
