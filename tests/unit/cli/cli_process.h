// spawn_moka / run_moka: runs the built moka binary with arguments (stdin /dev/null, stdout and stderr
// captured, optionally signalled, killed after a timeout); every CLI test runs moka through it.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "support/paths.h"

extern char** environ;

namespace moka::testing {

/// What one moka run gave.
struct MokaResult {
  int code = -1;  ///< exit status, or 128 + signal number when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
  /// With MokaSignal::on_stderr: from the signal to the exit (-1 when no signal was sent).
  std::chrono::milliseconds after_signal{-1};
};

/// A signal to send while moka runs: once it has written something to stderr (so the handler is
/// installed and the plan runs), after `delay`.
struct MokaSignal {
  bool on_stderr = false;
  int signal = SIGINT;
  std::chrono::milliseconds delay{0};
  /// When not empty: send the signal once stdout contains this text instead (after `delay`).
  std::string on_stdout{};
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs the moka CLI (moka::testing::cli_path()) with `args` (stdin /dev/null, stdout and stderr
/// into the two files). A run that takes longer than `timeout` is killed (timed_out, and a test
/// failure).
/// Starts the moka CLI with `args`, stdin /dev/null and stdout into out_path; stderr into err_path, or, when
/// err_fd >= 0, onto that descriptor (a pseudo-terminal); `close_fd` (>= 0) is closed in the child. Returns the pid,
/// 0 (and a test failure) when it cannot start.
inline pid_t start_moka(const std::vector<std::string>& args, const std::filesystem::path& out_path,
                        const std::filesystem::path& err_path, int err_fd = -1, int close_fd = -1) {
  std::vector<std::string> argv_s{moka::testing::cli_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (err_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (close_fd >= 0) posix_spawn_file_actions_addclose(&actions, close_fd);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, moka::testing::cli_path(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn(" << moka::testing::cli_path() << ") failed: " << std::strerror(rc);
    return 0;
  }
  return pid;
}

inline MokaResult spawn_moka(const std::vector<std::string>& args, const std::filesystem::path& out_path,
                             const std::filesystem::path& err_path, std::chrono::seconds timeout,
                             const MokaSignal& sig = {}) {
  MokaResult r;
  const pid_t pid = start_moka(args, out_path, err_path);
  if (pid == 0) return r;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> signalled;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    std::error_code ec;
    const bool stdout_ready =
        !sig.on_stdout.empty() && !signalled && slurp(out_path).find(sig.on_stdout) != std::string::npos;
    if ((stdout_ready || (sig.on_stderr && !signalled && std::filesystem::file_size(err_path, ec) > 0 && !ec))) {
      std::this_thread::sleep_for(sig.delay);
      signalled = Clock::now();
      ::kill(pid, sig.signal);
    }
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      ADD_FAILURE() << "moka did not finish within " << timeout.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (signalled && !r.timed_out)
    r.after_signal = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *signalled);
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

/// spawn_moka with the output files `dir/moka.stdout` and `dir/moka.stderr`.
inline MokaResult run_moka(const std::vector<std::string>& args, const std::filesystem::path& dir,
                           std::chrono::seconds timeout = std::chrono::seconds(20)) {
  return spawn_moka(args, dir / "moka.stdout", dir / "moka.stderr", timeout);
}

/// Expects exit code `code`, nothing on stdout and exactly one stderr line holding every needle.
inline void expect_moka_error(const MokaResult& r, int code, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, code) << "stderr: " << r.err << "\nstdout: " << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected exactly one line: " << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "\"" << n << "\" not in: " << r.err;
}

}  // namespace moka::testing
