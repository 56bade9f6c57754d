// Spin-wait helpers for moka's short spins before sleeping: cpu_relax(), and spin_yield() / loaded(),
// which stop yielding while other programs crowd the machine.
//
// Why not plain std::this_thread::yield(): on a quiet machine a yield is cheap (~0.5 µs) and lets
// another moka thread on the same core run (a pipe with more stages than cores needs that), but on a
// loaded one Linux's fair scheduler answers it by moving the thread behind every other runnable thread
// on its core, so a thread that yields while its peer is microseconds from handing it work loses its
// core for a whole time slice (milliseconds). With two busy processes beside it, a pipe whose stages
// yielded in their hand-off spins ran 10–50× slower than on a quiet machine (docs/benchmarks-history.md).
//
// spin_yield() times its yields. When three of one thread's yields within 50 ms take longer than
// 500 µs each, it asks whether the process itself kept the cores busy meanwhile (its CPU time over that
// stretch, against the CPUs it may run on): if it used at least 60% of them, the yields went to moka's
// own threads, which is what they are for; if not, other programs are taking the cores, and every
// spin_yield() in the process pauses instead of yielding for a while (20 ms, doubling up to 320 ms
// while the load lasts), while the worker pool's
// idle polls and a step's wait for its substeps (which check loaded()) go to sleep at once instead of
// spinning. Then it tries yielding again. A single slow yield is not enough: a virtual machine's
// pauses and a sibling thread being woken on the same core make those too.
#pragma once

#include <chrono>
#include <cstddef>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace moka::detail {

/// One spin-wait pause (x86 PAUSE, Arm YIELD — a CPU hint, not a system call); a compiler barrier elsewhere.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

/// @brief One step of a spin loop that may let other threads run: a sched_yield, unless other
/// programs were found crowding the machine a short while ago — then about half a microsecond of
/// pauses (see above).
/// Thread-safety: thread-safe.
void spin_yield() noexcept;

/// @brief True while spin_yield() pauses (other programs were found crowding the machine).
bool loaded() noexcept;

/// @brief Spins (spin_yield) until `ready()` holds, `spin_time` has passed, or the machine is found
/// loaded; returns whether `ready()` held. The clock and loaded() are checked every 16 tries.
/// The caller sleeps on its own condition when this returns false.
template <class Ready>
bool spin_yield_until(std::chrono::microseconds spin_time, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + spin_time;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 15) == 15 && (std::chrono::steady_clock::now() >= deadline || loaded())) return false;
    spin_yield();
  }
}

/// @brief CPUs in the calling thread's affinity mask (hardware_concurrency where that is unknown; at
/// least 1). One system call, no file reads.
/// Thread-safety: thread-safe.
std::size_t affinity_cpus() noexcept;

/// @brief Whether a thread whose yields kept losing its core while this process used
/// `process_cpu_rate` cores (CPU seconds per second) out of `usable_cpus` was crowded out by other
/// programs: below 60% of the usable CPUs.
bool crowded_out(double process_cpu_rate, std::size_t usable_cpus) noexcept;

}  // namespace moka::detail
