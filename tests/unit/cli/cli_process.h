// run_moka: runs the built moka binary with arguments (stdin /dev/null, stdout and stderr captured,
// killed after a timeout), for the CLI test files beside cli_test.cpp.
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
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace moka::testing {

/// What one moka run gave.
struct MokaResult {
  int code = -1;  ///< exit status, or 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs MOKA_CLI_PATH with `args`; `dir` holds the captured output files. A run that takes longer
/// than `timeout` is killed (and recorded as a failure).
inline MokaResult run_moka(const std::vector<std::string>& args, const std::filesystem::path& dir,
                           std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const std::filesystem::path out_path = dir / "moka.stdout";
  const std::filesystem::path err_path = dir / "moka.stderr";
  std::vector<std::string> argv_s{MOKA_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, MOKA_CLI_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  MokaResult r;
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn(" << MOKA_CLI_PATH << ") failed: " << std::strerror(rc);
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "moka did not finish within " << timeout.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

/// Expects exit code `code`, nothing on stdout and exactly one stderr line holding every needle.
inline void expect_moka_error(const MokaResult& r, int code, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, code) << "stderr: " << r.err << "\nstdout: " << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected exactly one line: " << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "\"" << n << "\" not in: " << r.err;
}

}  // namespace moka::testing
