// The consumer project's program: uses moka's public headers and library from an installed prefix.
#include <cstdint>
#include <cstdio>
#include <exception>

#include "moka/core/tensor.h"
#include "moka/core/workspace.h"

int main() {
  try {
    moka::Workspace ws;
    ws.create_blob("answer")->emplace<moka::Tensor>(moka::Tensor::scalar<int64_t>(41));
    const int64_t got = ws.blob("answer").get<moka::Tensor>().item<int64_t>();
    if (got != 41) {
      std::fprintf(stderr, "moka_consumer: expected 41, read %lld\n", static_cast<long long>(got));
      return 1;
    }
    std::printf("moka_consumer: ok (answer = %lld)\n", static_cast<long long>(got));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moka_consumer: %s\n", e.what());
    return 1;
  }
}
