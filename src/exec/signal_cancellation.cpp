// SignalCancellation: a self-pipe from the signal handler to a watcher thread that cancels the token
// (include/moka/exec/signal_cancellation.h).
#include "moka/exec/signal_cancellation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {
namespace {

// The write end of the active instance's pipe; -1 when none is active.
std::atomic<int> g_signal_pipe{-1};

extern "C" void moka_on_cancel_signal(int sig) {
  const int saved = errno;
  const int fd = g_signal_pipe.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: a byte is already waiting
  }
  errno = saved;
}

}  // namespace

SignalCancellation::SignalCancellation(std::shared_ptr<CancelToken> token, std::initializer_list<int> signals)
    : token_(std::move(token)) {
  if (!token_) throw InvalidInput("SignalCancellation: no CancelToken given");
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw RuntimeError(fmt::format("SignalCancellation: pipe failed: {}", std::strerror(errno)));
  // The read end blocks; only the handler's write end must never block.
  ::fcntl(pipe_[0], F_SETFL, 0);
  int expected = -1;
  if (!g_signal_pipe.compare_exchange_strong(expected, pipe_[1])) {
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    throw InvalidInput("SignalCancellation: another instance is already active in this process");
  }
  watcher_ = std::thread([this] {
    unsigned char byte = 0;
    for (;;) {
      const ssize_t n = ::read(pipe_[0], &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 0) return;  // 0: the destructor's wake-up
      int none = 0;
      signal_.compare_exchange_strong(none, static_cast<int>(byte));
      token_->cancel();
    }
  });
  for (int sig : signals) {
    struct sigaction action {};
    action.sa_handler = moka_on_cancel_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    struct sigaction old {};
    ::sigaction(sig, &action, &old);
    previous_.emplace_back(sig, old);
  }
}

SignalCancellation::~SignalCancellation() {
  for (const auto& [sig, old] : previous_) ::sigaction(sig, &old, nullptr);
  g_signal_pipe.store(-1);
  const unsigned char stop = 0;
  while (::write(pipe_[1], &stop, 1) < 0 && errno == EINTR) {
  }
  watcher_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

}  // namespace moka
