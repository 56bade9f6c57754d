// WithBlock: a Python `with` block around one of moka's builders that take their body as a C++ callable
// (NetBuilder, Task, ops.loop, ops.If, ...), without a second, enter/exit version of each (docs/python.md §2).
#pragma once

#include <functional>
#include <memory>

namespace moka::detail {
class Fiber;
}

namespace moka::python {

/// @brief The builder call runs on a fiber of its own, on the Python thread: when it calls its body, the
/// fiber suspends and __enter__ returns, so the Python block runs with every context the builder pushed
/// (the context stacks are per thread); __exit__ resumes the fiber, the body returns (or throws, when the
/// block raised), and the builder finishes — freezing, merging, checking — as after a C++ body.
///
/// Blocks nest as Python's do (the inner one is entered and exited while the outer one waits in its body).
/// Only C++ runs on the fiber; the Python block runs on the thread's own stack.
/// Thread-safety: entered and exited by one thread.
class WithBlock {
 public:
  /// `call(body)` makes the builder call with `body` as its body.
  using Call = std::function<void(const std::function<void()>& body)>;
  explicit WithBlock(Call call);
  ~WithBlock();
  WithBlock(const WithBlock&) = delete;
  WithBlock& operator=(const WithBlock&) = delete;

  /// Runs the builder until its body starts (or it ends: its error is rethrown here).
  void enter();
  /// Ends the body — normally when `body_ok`, else by an exception the builder sees (and whatever it then
  /// throws is dropped: the block's own exception goes on) — and lets the builder finish; rethrows its error.
  void exit(bool body_ok);

 private:
  void finish(bool body_ok);
  Call call_;
  std::unique_ptr<detail::Fiber> fiber_;
  bool in_body_ = false;
  bool abandon_ = false;
  bool entered_ = false;
};

}  // namespace moka::python
