// XXH3-64 for bulk data (record payloads), with the widest vector unit the CPU has, chosen at run
// time: AVX-512, AVX2, else the baseline build (SSE2 on x86-64). Results are identical on every path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace moka::detail {

/// One implementation of XXH3-64 (see xxh3_fast.cpp); the state is an XXH3_state_t.
struct Xxh3Impl {
  const char* name;
  uint64_t (*hash)(const void* p, std::size_t n, uint64_t seed) noexcept;
  void (*reset)(void* state, uint64_t seed) noexcept;
  void (*update)(void* state, const void* p, std::size_t n) noexcept;
  uint64_t (*digest)(const void* state) noexcept;
};

/// @brief The implementation in use: the fastest this CPU runs, unless MOKA_XXH3=<name> (at the
/// first call) picks another one it can run ("baseline", "avx2", "avx512").
/// Thread-safety: thread-safe.
const Xxh3Impl& xxh3_impl() noexcept;
/// @brief Every implementation this CPU can run (for tests that compare them).
/// Thread-safety: thread-safe.
std::vector<const Xxh3Impl*> xxh3_runnable_impls();

/// @brief XXH3-64 of [p, p + n) with `seed`; equals XXH3_64bits_withSeed.
/// Thread-safety: thread-safe.
inline uint64_t xxh3_64_fast(const void* p, std::size_t n, uint64_t seed) noexcept {
  return xxh3_impl().hash(p, n, seed);
}

/// @brief Streaming XXH3-64 with a seed: update() in pieces of any size, then digest(); the result
/// equals xxh3_64_fast over the concatenation.
/// Thread-safety: one thread at a time per object.
class Xxh3Stream {
 public:
  explicit Xxh3Stream(uint64_t seed, const Xxh3Impl& impl = xxh3_impl()) noexcept : impl_(&impl) {
    impl_->reset(state_, seed);
  }
  void update(const void* p, std::size_t n) noexcept { impl_->update(state_, p, n); }
  uint64_t digest() const noexcept { return impl_->digest(state_); }

  static constexpr std::size_t kStateSize = 576;  // sizeof(XXH3_state_t), checked in xxh3_fast.cpp

 private:
  const Xxh3Impl* impl_;
  alignas(64) unsigned char state_[kStateSize];
};

// The vector variants (xxh3_avx2.cpp, xxh3_avx512.cpp); null where the compiler cannot build them.
const Xxh3Impl* xxh3_avx2_impl() noexcept;
const Xxh3Impl* xxh3_avx512_impl() noexcept;

}  // namespace moka::detail
