// BlockingScope: marks code that waits (a queue wait, a sleep, a join) so the worker pool running
// the thread can start queued work on another thread meanwhile; FiberYield: how a wait inside a fiber
// lets the fiber's siblings run instead.
#pragma once

namespace moka {

/// @brief Receives a thread's "about to wait" / "done waiting" notices (the worker pool).
/// Thread-safety: both methods are called from the waiting thread itself, possibly from many
/// threads at once.
class BlockingObserver {
 public:
  virtual void blocking_begin() noexcept = 0;
  virtual void blocking_end() noexcept = 0;

 protected:
  ~BlockingObserver() = default;
};

/// @brief The fiber running on the calling thread, as a wait sees it (exec's fibers implement it).
///
/// A concurrent step run with Concurrency::fibers runs its substeps as fibers on one thread; a wait
/// inside one of them must hand the thread to its siblings instead of sleeping, or the sibling it
/// waits for never runs. yield(idle) switches to the fiber's scheduler, which resumes the fiber later;
/// idle says the fiber did nothing since it was last resumed (its condition still does not hold), so a
/// scheduler whose fibers are all idle knows to back off.
/// Thread-safety: called only by the fiber itself, on the thread running it.
class FiberYield {
 public:
  virtual void yield(bool idle) noexcept = 0;

 protected:
  ~FiberYield() = default;
};

namespace detail {
/// The observer of the calling thread (set by pool workers) and its scope nesting depth.
inline thread_local BlockingObserver* t_blocking_observer = nullptr;
inline thread_local int t_blocking_depth = 0;
/// The fiber running on the calling thread, or nullptr (set by exec's Fiber while it runs).
inline thread_local FiberYield* t_fiber = nullptr;
}  // namespace detail

/// @brief In a fiber: yields to the fiber's siblings until `ready()` holds, then returns true.
/// Outside a fiber: returns false at once, and the caller waits its own way (spin, sleep).
/// Every wait that operators of a fiber-safe type (OpSchema::fiber_safe) make goes through it.
/// @code
///   if (!moka::yield_until_ready([&] { return slot_free(); })) { /* sleep on a condition variable */ }
/// @endcode
/// Thread-safety: for the calling thread only.
template <class Ready>
bool yield_until_ready(Ready ready) {
  FiberYield* f = detail::t_fiber;
  if (f == nullptr) return false;
  for (bool idle = false; !ready(); idle = true) f->yield(idle);
  return true;
}

/// @brief Declares that the current thread may wait for a while inside this scope.
///
/// moka's worker pool runs only about as many jobs at once as there are cores, so a job that
/// waits without saying so holds a slot until the pool's watchdog notices (about a millisecond).
/// Operators that block — queue reads and writes, sleeps, waits on other threads — wrap the
/// wait in a BlockingScope; users' operators should too. Outside a pool worker it does nothing.
/// @code
///   {
///     moka::BlockingScope blocking;
///     cv.wait(lock, [&] { return ready; });
///   }
/// @endcode
/// Thread-safety: a scope belongs to the thread that created it; nesting is allowed.
class BlockingScope {
 public:
  BlockingScope() noexcept : observer_(detail::t_blocking_observer) {
    if (observer_ && detail::t_blocking_depth++ == 0) observer_->blocking_begin();
  }
  ~BlockingScope() {
    if (observer_ && --detail::t_blocking_depth == 0) observer_->blocking_end();
  }
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;

 private:
  BlockingObserver* observer_;
};

}  // namespace moka
