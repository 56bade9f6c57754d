// The fixture of the CLI tests: runs the built moka binary as a subprocess (stdout and stderr captured
// separately, killed after a timeout), and helpers that check its output, error lines and exit codes.
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
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace moka_cli_test {


namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr auto kProcessTimeout = std::chrono::seconds(20);

struct CliResult {
  int code = -1;  // exit status, or 128 + signal number when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
  /// With interrupt_on_stderr: from the signal to the exit (-1 when no signal was sent).
  std::chrono::milliseconds after_signal{-1};
};

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Options of one subprocess run: interrupt_on_stderr sends SIGINT once the process has written
// something to stderr (so the signal arrives while the plan runs, after the handler is installed).
struct RunOpts {
  bool interrupt_on_stderr = false;
  int signal = SIGINT;  ///< the signal interrupt_on_stderr sends
  std::chrono::milliseconds signal_delay{0};  ///< how long after the first stderr output
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "moka_cli_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp failed";
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes text to a file in the test's temporary folder and returns its path.
  std::string plan_file(const std::string& text, const std::string& name = "plan.json") {
    const fs::path p = dir_ / name;
    write_file(p, text);
    return p.string();
  }

  CliResult run(const std::vector<std::string>& args, RunOpts opts = {}) {
    const fs::path out_path = dir_ / fmt_name("stdout");
    const fs::path err_path = dir_ / fmt_name("stderr");
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
    CliResult r;
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn(" << MOKA_CLI_PATH << ") failed: " << std::strerror(rc);
      return r;
    }
    const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
    bool interrupted = false;
    std::chrono::steady_clock::time_point signalled;
    int status = 0;
    while (true) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        if (interrupted)
          r.after_signal = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - signalled);
        break;
      }
      if (opts.interrupt_on_stderr && !interrupted && fs::exists(err_path) && fs::file_size(err_path) > 0) {
        std::this_thread::sleep_for(opts.signal_delay);
        signalled = std::chrono::steady_clock::now();
        ::kill(pid, opts.signal);
        interrupted = true;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        r.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    EXPECT_FALSE(r.timed_out) << "moka did not finish within " << kProcessTimeout.count() << " s";
    return r;
  }

  // Runs `moka run PLAN --fetch FETCH` on plan text; expects success and returns stdout parsed.
  Json run_ok(const std::string& plan_text, const std::string& fetch) {
    const CliResult r = run({"run", plan_file(plan_text), "--fetch", fetch});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return parse_stdout(r);
  }

  static Json parse_stdout(const CliResult& r) {
    Json j = Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON: " << r.out;
    EXPECT_TRUE(!r.out.empty() && r.out.back() == '\n') << "stdout should end with a newline";
    return j;
  }

  fs::path dir_;

 private:
  std::string fmt_name(const char* stem) { return std::string(stem) + std::to_string(counter_++) + ".txt"; }
  int counter_ = 0;
};

inline std::string source_path(const std::string& rel) { return std::string(MOKA_SOURCE_DIR) + "/" + rel; }

// stderr holds exactly one line, and stdout nothing.
inline void expect_one_error_line(const CliResult& r) {
  ASSERT_FALSE(r.err.empty()) << "expected an error line on stderr";
  EXPECT_EQ(r.err.back(), '\n') << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected exactly one line: " << r.err;
  EXPECT_EQ(r.out, "") << "nothing should be printed on stdout after an error";
}

// Expects exit code `code` with one stderr line containing every one of `needles`.
inline void expect_error(const CliResult& r, int code, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, code) << "stderr: " << r.err << "\nstdout: " << r.out;
  expect_one_error_line(r);
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "\"" << n << "\" not in: " << r.err;
}

inline Json tensor(const std::string& dtype, Json shape, Json data) {
  return Json{{"dtype", dtype}, {"shape", std::move(shape)}, {"data", std::move(data)}};
}

// A plan with one net "n" of the given operators (a JSON array) run once.
inline std::string one_net_plan(const std::string& ops) {
  return R"({"network": [{"name": "n", "op": )" + ops + R"(}], "execution_step": [{"name": "s", "network": ["n"]}]})";
}

// examples/jobs/counting.json, small: 1000 weights, 4 epochs of 40 steps.
class CliJob : public Cli {
 protected:
  std::string small_job() {
    std::string job = read_file(source_path("examples/jobs/counting.json"));
    for (int i = 0; i < 2; ++i) job.replace(job.find("[1048576]"), 9, "[1000]");
    job.replace(job.find("\"init_count\", \"i\": 11"), 21, "\"init_count\", \"i\": 3");
    return plan_file(job, "job.json");
  }
  std::string ckpt() const { return (dir_ / "ckpt").string(); }
  // The outputs line: 160 steps (0..159 summed), 20 records (7 + 0..19 summed).
  static constexpr const char* kOutputs =
      R"({"total":{"dtype":"int64","shape":[],"data":[12720]},"step_count":{"dtype":"int64","shape":[],"data":[160]},)"
      R"("checksum":{"dtype":"int64","shape":[],"data":[197]}})";
};

}  // namespace moka_cli_test
