// SignalCancellation: turns SIGINT/SIGTERM into CancelToken::cancel(), for the CLI and for C++ programs
// that want Ctrl-C to stop a running session.run / run_plan / run_job.
#pragma once

#include <atomic>
#include <csignal>
#include <initializer_list>
#include <memory>
#include <thread>
#include <vector>

#include "moka/exec/cancel_token.h"

namespace moka {

/// @brief While alive, SIGINT and SIGTERM (or the signals given) cancel `token`.
///
/// CancelToken::cancel() takes a lock and runs callbacks, so it must not be called from a signal
/// handler. This installs handlers that only write one byte to a pipe (async-signal-safe); a
/// watcher thread blocked on the pipe calls cancel() at once, which stops the runs holding the token
/// at their next net boundary and wakes operators blocked in queues (docs/sessions.md §6). From
/// another thread, call token->cancel() directly instead.
/// @code
///   auto token = std::make_shared<moka::CancelToken>();
///   moka::LocalSessionOptions options;
///   options.run.cancel = token;
///   moka::LocalSession session(options);
///   moka::SignalCancellation on_ctrl_c(token);   // Ctrl-C now cancels session.run
///   session.run(group);
///   if (on_ctrl_c.interrupted()) return 130;
/// @endcode
/// The destructor restores the previous handlers and joins the watcher. One instance per process
/// at a time (a second throws InvalidInput). Thread-safety: construct and destroy on one thread.
class SignalCancellation {
 public:
  explicit SignalCancellation(std::shared_ptr<CancelToken> token,
                              std::initializer_list<int> signals = {SIGINT, SIGTERM});
  ~SignalCancellation();
  SignalCancellation(const SignalCancellation&) = delete;
  SignalCancellation& operator=(const SignalCancellation&) = delete;

  /// Whether a signal arrived (and cancelled the token).
  bool interrupted() const noexcept { return signal_ != 0; }
  /// The signal that arrived first, 0 if none.
  int signal() const noexcept { return signal_.load(); }

 private:
  std::shared_ptr<CancelToken> token_;
  std::vector<std::pair<int, struct sigaction>> previous_;
  int pipe_[2] = {-1, -1};
  std::atomic<int> signal_{0};
  std::thread watcher_;
};

}  // namespace moka
