// Asymmetric fences (asymmetric_fence.h): registration for, and calls of, Linux's private expedited membarrier.
#include "core/asymmetric_fence.h"

#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace moka::detail {

namespace {

std::atomic<bool> forced_symmetric{false};

#if defined(__linux__) && defined(__NR_membarrier)
long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

bool register_once() noexcept {
  static const bool registered = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return registered;
}
#else
bool register_once() noexcept { return false; }
#endif

}  // namespace

bool asymmetric_fences_available() noexcept {
  return !forced_symmetric.load(std::memory_order_relaxed) && register_once();
}

void heavy_fence() noexcept {
#if defined(__linux__) && defined(__NR_membarrier)
  // Once registered, the kernel does not refuse the command.
  if (register_once() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
#endif
  // A caller that did not check asymmetric_fences_available() relies on light fences that nothing
  // completes: stopping is the only honest answer (no caller in moka gets here).
  std::fputs("moka: heavy_fence() without a registered membarrier (check asymmetric_fences_available())\n", stderr);
  std::abort();
}

void force_symmetric_fences_for_testing(bool force) noexcept {
  forced_symmetric.store(force, std::memory_order_relaxed);
}

}  // namespace moka::detail
