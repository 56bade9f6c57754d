// Asymmetric fences for Dekker-style hand-shakes with a hot side and a rare side: the hot side
// (a queue publishing a record, then looking whether anybody sleeps) needs only a compiler fence,
// because the rare side (a thread about to sleep) makes every running thread of the process execute
// a full fence, through Linux's membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED).
//
// Why: on x86 the hot side's full fence is a locked instruction (a seq_cst store is an XCHG), which
// waits for the core's store buffer to drain — in a pipe's per-batch path, right after the batch was
// written, about 5 ns each time (docs/benchmarks-history.md). A sleeper spins first and sleeps through
// system calls anyway, so a system call more on its side costs little.
//
// The argument, for a publisher P (store X; light fence; load Y) and a sleeper S (store Y; heavy
// fence; load X): membarrier makes P's CPU execute a full fence at some point during S's heavy fence.
// If P's load of Y came before that point, P's store of X (earlier in program order) is visible once
// the fence has run, so S's load of X sees it; if P's load came after, it sees S's store of Y, which
// was visible before S's heavy fence began. Either way one of them sees the other.
#pragma once

#include <atomic>

namespace moka::detail {

/// @brief True when heavy_fence() is a process-wide membarrier, so that light_fence() suffices on the
/// hot side. Registers the process for private expedited membarriers on the first call (Linux 4.14
/// and later); false where the kernel or a seccomp filter refuses, and then callers keep full fences
/// on both sides. Objects decide once, at construction (see force_symmetric_fences_for_testing).
/// Thread-safety: any thread.
bool asymmetric_fences_available() noexcept;

/// @brief The hot side's fence: orders the compiler only (the heavy side does the rest).
inline void light_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

/// @brief The rare side's fence: every running thread of the process executes a full memory fence
/// before it returns (about a microsecond). Requires that asymmetric_fences_available() said true
/// (aborts otherwise: the light fences paired with it would be unsafe). Thread-safety: any thread.
void heavy_fence() noexcept;

/// @brief Tests: makes asymmetric_fences_available() answer false (true again with `false`), so
/// that the full-fence protocol keeps being exercised on machines where membarrier works.
void force_symmetric_fences_for_testing(bool force) noexcept;

}  // namespace moka::detail
