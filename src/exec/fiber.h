// Internal: Fiber (a function on a stack of its own, resumed and suspended on one thread) and
// run_on_fibers, which runs a concurrent step's jobs as fibers taking turns on the calling thread.
#pragma once

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>

#include "moka/core/blocking.h"

namespace moka::detail {

/// A suspended execution context: on x86-64 the stack pointer of moka's own switch (six callee-saved
/// registers and the floating-point control words on the stack; no system call), elsewhere a ucontext
/// (whose swapcontext also saves the signal mask with a system call per switch).
struct FiberContext {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t uc{};
#endif
};

/// @brief A function running on its own stack, on the thread that resumes it.
///
/// resume() runs the function until it finishes or waits (FiberYield::yield, reached through
/// yield_until_ready in a queue wait), then returns to the caller; the next resume() continues where it
/// waited. While it runs, detail::t_fiber points at it (and is restored when it yields), so waits
/// nested in it yield to its caller. An exception escaping the function is kept (error()).
/// Stacks are 8 MiB (a thread's default) of reserved address space (pages are committed on use) below
/// a guard page, and are reused by later fibers. Switches are annotated for AddressSanitizer and ThreadSanitizer.
/// Thread-safety: a fiber is resumed by one thread at a time; it must not be destroyed while it runs.
class Fiber final : public FiberYield {
 public:
  explicit Fiber(std::function<void()> body);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /// Runs the fiber until it yields or finishes. Not after finished().
  void resume();
  bool finished() const noexcept { return finished_; }
  /// Whether its last yield said it made no progress since the resume before.
  bool idle() const noexcept { return idle_; }
  /// The trace lane its turns record into (1-based within its group; 0: the thread's own track).
  uint32_t trace_lane = 0;
  /// What escaped the body, if anything.
  std::exception_ptr error() const noexcept { return error_; }

  void yield(bool idle) noexcept override;

 private:
  static void entry(void* self);
  void run_body() noexcept;
  void switch_to_caller(bool finishing) noexcept;
  void* stack_bottom() const noexcept;  // lowest usable address, above the guard page

  std::function<void()> body_;
  void* stack_ = nullptr;  // the whole mapping, guard page included
  FiberContext ctx_;
  FiberContext caller_;
  bool finished_ = false;
  bool idle_ = false;
  std::exception_ptr error_;
  FiberYield* outer_ = nullptr;  // t_fiber of the caller (a scheduler nested in another fiber)
  // Sanitizer state (unused in other builds).
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;
  void* asan_fake_ = nullptr;
  const void* caller_stack_ = nullptr;
  std::size_t caller_stack_size_ = 0;
};

/// How long a fiber runs before preempt_point() makes it yield to its siblings (a turn). Long enough
/// that a pipe's fibers, which yield at their queue every few microseconds, never reach it.
inline constexpr int64_t kFiberTurnNs = 2'000'000;

/// When the calling thread's innermost fiber was last resumed (CLOCK_MONOTONIC_COARSE ns), and a
/// counter that makes preempt_point() read the clock only every 16th call.
inline thread_local int64_t t_turn_started_ns = 0;
inline thread_local uint32_t t_preempt_calls = 0;

/// The slow half of preempt_point(): yields when the turn is over.
void preempt_if_turn_over() noexcept;

/// @brief A place where a fiber that has run for a whole turn (kFiberTurnNs) yields to its siblings;
/// outside a fiber, nothing. The executor calls it after every iteration of a step and after every
/// sequential substep, so that a substep that never waits
/// (a loop until a sibling sets its stop blob, a long loop a failing sibling should cancel) cannot keep
/// the thread from its siblings: fibers take turns at waits, and at least every turn. A scheduler
/// nested in a fiber calls it between rounds, so that busy nested fibers do not starve the outer ones.
/// Thread-safety: for the calling thread.
inline void preempt_point() noexcept {
  if (t_fiber != nullptr && (++t_preempt_calls & 15) == 0) preempt_if_turn_over();
}

/// @brief Runs job(0) … job(n - 1) as fibers on the calling thread until every one has returned.
///
/// Fibers take turns: each runs until it waits (yield_until_ready) or ends. When a whole round made
/// no progress — every fiber still waits for something no fiber of this round provides (another
/// thread, another node, a closed queue's cancellation) — the thread backs off: inside an outer fiber
/// it yields to that fiber's siblings; otherwise it spins briefly, then sleeps in growing steps
/// (10 µs to 1 ms) between rounds. Rethrows the first exception that escaped a job, after all ended.
/// A fiber also yields when its turn is over (preempt_point), and so does a nested scheduler.
/// Thread-safety: for the calling thread; job must not wait except through yield_until_ready.
void run_on_fibers(std::size_t n, const std::function<void(std::size_t)>& job);

/// The most jobs one concurrent iteration runs as fibers: each fiber has a stack of its own, all
/// made before the first runs, so a num_concurrent_instances of 2·10^9 would exhaust memory before
/// anything ran (or a cancellation could be seen). Larger iterations run on threads.
inline constexpr std::size_t kMaxFiberJobs = 4096;

}  // namespace moka::detail
