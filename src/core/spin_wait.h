// Spin-wait helpers for moka's short spins before sleeping: cpu_relax(), and spin_yield() / loaded(),
// which stop yielding while the machine is loaded.
//
// Why not plain std::this_thread::yield(): on a quiet machine a yield is cheap (~0.5 µs) and lets
// another moka thread on the same core run (a pipe with more stages than cores needs that), but on a
// loaded one Linux's fair scheduler answers it by moving the thread behind every other runnable thread
// on its core, so a thread that yields while its peer is microseconds from handing it work loses its
// core for a whole time slice (milliseconds). With two busy processes beside it, a pipe whose stages
// yielded in their hand-off spins ran 10–50× slower than on a quiet machine (docs/benchmarks.md §4).
// spin_yield() times its yields: once one has kept the thread off its core for longer than 500 µs,
// every spin_yield() in the process pauses instead for the next 200 ms, and the worker pool's idle
// polls and a step's wait for its substeps (which check loaded()) go to sleep at once instead of
// spinning, then it tries yielding again. A slow yield while more of moka's own pool threads are
// running jobs than the process has cores does not count: it handed the core to one of them, which is
// what the yield is for (a pipe of four stages on two cores), and pausing there would only delay it.
#pragma once

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

/// @brief One step of a spin loop that may let other threads run: a sched_yield, unless a recent
/// yield (in any thread) lost the core for more than 500 µs — then about half a microsecond of
/// pauses, for the next 200 ms.
/// Thread-safety: thread-safe.
void spin_yield() noexcept;

/// @brief True while spin_yield() pauses (a recent yield found the machine loaded).
bool loaded() noexcept;

/// @brief Tells spin_yield() how many of the process's own threads are running work and not waiting
/// (the worker pool calls it whenever that changes). While they outnumber the cores the process may
/// run on, a slow yield is put down to them and does not make spins pause.
void set_own_running_threads(std::size_t n) noexcept;

}  // namespace moka::detail
