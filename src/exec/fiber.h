// Internal: Fiber (a function on a stack of its own, resumed and suspended on one thread) and
// run_on_fibers, which runs a concurrent step's jobs as fibers taking turns on the calling thread.
#pragma once

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <cstddef>
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

/// @brief Runs job(0) … job(n - 1) as fibers on the calling thread until every one has returned.
///
/// Fibers take turns: each runs until it waits (yield_until_ready) or ends. When a whole round made
/// no progress — every fiber still waits for something no fiber of this round provides (another
/// thread, another node, a closed queue's cancellation) — the thread backs off: inside an outer fiber
/// it yields to that fiber's siblings; otherwise it spins briefly, then sleeps in growing steps
/// (10 µs to 1 ms) between rounds. Rethrows the first exception that escaped a job, after all ended.
/// Thread-safety: for the calling thread; job must not wait except through yield_until_ready.
void run_on_fibers(std::size_t n, const std::function<void(std::size_t)>& job);

}  // namespace moka::detail
