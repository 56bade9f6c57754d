// BlockingScope: marks code that waits (a queue wait, a sleep, a join) so the worker pool running
// the thread can start queued work on another thread meanwhile.
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

namespace detail {
/// The observer of the calling thread (set by pool workers) and its scope nesting depth.
inline thread_local BlockingObserver* t_blocking_observer = nullptr;
inline thread_local int t_blocking_depth = 0;
}  // namespace detail

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
