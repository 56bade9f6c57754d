// Runs a libFuzzer target without libFuzzer (any compiler, so the test suite and its sanitizer builds
// run it): every input of the given corpus folders or files, then --mutations seeded random damages of
// each — flipped bits, random bytes, boundary integers (0, 1, 2^32 - 1, 2^63 - 1, ...) written over
// 4 or 8 bytes, truncations. A target reports a failure by aborting, so a clean exit is a pass.
//
//   moka_fuzz_replay_minidb [--mutations N] [--seed S] tests/fuzz/corpus/minidb
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void run(const std::vector<uint8_t>& input) {
  // libFuzzer never passes a null pointer; an empty vector's data() may be one.
  static const uint8_t empty = 0;
  LLVMFuzzerTestOneInput(input.empty() ? &empty : input.data(), input.size());
}

std::vector<uint8_t> mutate(std::vector<uint8_t> v, std::mt19937_64& rng) {
  static constexpr uint64_t kBoundaries[] = {
      0,    1, 2, 31, 32, 64, 0x7fffffffull, 0xffffffffull, 1ull << 32, 0x7fffffffffffffffull, 0x8000000000000000ull,
      ~0ull};
  const int damages = 1 + static_cast<int>(rng() % 3);
  for (int d = 0; d < damages && !v.empty(); ++d) {
    const std::size_t pos = rng() % v.size();
    switch (rng() % 4) {
      case 0:
        v[pos] = static_cast<uint8_t>(v[pos] ^ (1u << (rng() % 8)));
        break;
      case 1:
        v[pos] = static_cast<uint8_t>(rng());
        break;
      case 2: {
        const uint64_t x = kBoundaries[rng() % std::size(kBoundaries)];
        const std::size_t width = rng() % 2 ? 4 : 8;
        const std::size_t at = pos & ~std::size_t{3};  // the formats' integers are 4-byte aligned
        if (at + width <= v.size()) std::memcpy(v.data() + at, &x, width);
        break;
      }
      default:
        v.resize(pos);
        break;
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 0;
  uint64_t seed = 1;
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--mutations" || a == "--seed") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0') {
        std::fprintf(stderr, "%s: %s needs a number, got \"%s\"\n", argv[0], a.c_str(), argv[i]);
        return 2;
      }
      if (a == "--mutations")
        mutations = static_cast<long>(v);
      else
        seed = v;
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (std::filesystem::is_regular_file(a)) {
      inputs.emplace_back(a);
    } else {
      std::fprintf(stderr, "%s: \"%s\" is neither an option nor a corpus file or folder\n", argv[0], a.c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());  // the same order, so the same mutations, every run
  long runs = 0;
  for (const auto& p : inputs) {
    const std::vector<uint8_t> base = read_bytes(p);
    run(base);
    ++runs;
    std::mt19937_64 rng(seed ^ std::hash<std::string>{}(p.filename().string()));
    for (long m = 0; m < mutations; ++m, ++runs) run(mutate(base, rng));
  }
  std::printf("%s: %ld inputs from %zu corpus files, no failure\n", argv[0], runs, inputs.size());
  return 0;
}
