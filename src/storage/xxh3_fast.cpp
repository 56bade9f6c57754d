// Run-time choice of the XXH3 implementation for bulk hashing (see xxh3_fast.h), and the baseline
// implementation (what the compiler targets by default: SSE2 on x86-64).
#include "storage/xxh3_fast.h"

#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace moka::detail {
namespace {

uint64_t b_hash(const void* p, std::size_t n, uint64_t seed) noexcept { return XXH3_64bits_withSeed(p, n, seed); }
void b_reset(void* state, uint64_t seed) noexcept {
  auto* st = static_cast<XXH3_state_t*>(state);
  XXH3_INITSTATE(st);  // reset_withSeed trusts the old seed field: fresh memory must be initialised first
  XXH3_64bits_reset_withSeed(st, seed);
}
void b_update(void* state, const void* p, std::size_t n) noexcept {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), p, n);
}
uint64_t b_digest(const void* state) noexcept { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state)); }
static_assert(sizeof(XXH3_state_t) == Xxh3Stream::kStateSize);
static_assert(alignof(XXH3_state_t) <= 64);

const Xxh3Impl kBaseline{"baseline", b_hash, b_reset, b_update, b_digest};

// __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
bool cpu_has(const char* name) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (std::strcmp(name, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(name, "avx512") == 0) return __builtin_cpu_supports("avx512f");
#endif
  (void)name;
  return false;
}

}  // namespace

std::vector<const Xxh3Impl*> xxh3_runnable_impls() {
  std::vector<const Xxh3Impl*> out{&kBaseline};
  if (const Xxh3Impl* i = xxh3_avx2_impl(); i && cpu_has("avx2")) out.push_back(i);
  if (const Xxh3Impl* i = xxh3_avx512_impl(); i && cpu_has("avx512")) out.push_back(i);
  return out;
}

const Xxh3Impl& xxh3_impl() noexcept {
  static const Xxh3Impl* chosen = [] {
    const std::vector<const Xxh3Impl*> impls = xxh3_runnable_impls();
    if (const char* want = std::getenv("MOKA_XXH3"); want != nullptr && want[0] != '\0')
      for (const Xxh3Impl* i : impls)
        if (std::strcmp(i->name, want) == 0) return i;
    return impls.back();  // the widest
  }();
  return *chosen;
}

}  // namespace moka::detail
