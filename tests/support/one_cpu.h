// Test helper: pins the calling thread to one CPU of its affinity mask for a scope (and restores the mask),
// so a test can see what moka does where only one CPU is available (Concurrency::automatic picks fibers).
#pragma once

#include <sched.h>

namespace moka::testing {

/// @brief While alive, the calling thread (and any process or thread it starts) runs on the first CPU
/// of its affinity mask only. ok() is false when the mask could not be read or set.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    CPU_ZERO(&saved_);
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &saved_)) {
        CPU_SET(c, &one);
        break;
      }
    ok_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinnedToOneCpu() {
    if (ok_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;

  bool ok() const noexcept { return ok_; }
  /// @brief CPUs in the mask before pinning.
  int cpus_before() const noexcept { return CPU_COUNT(&saved_); }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

}  // namespace moka::testing
