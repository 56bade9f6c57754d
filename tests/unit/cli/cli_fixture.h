// The fixture of the CLI tests: runs the built moka binary (spawn_moka, cli_process.h) with files in a
// temporary folder, and helpers that check its output, error lines and exit codes.
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

#include "support/paths.h"
#include "unit/cli/cli_process.h"

namespace moka_cli_test {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr auto kProcessTimeout = std::chrono::seconds(20);

using CliResult = moka::testing::MokaResult;

inline std::string read_file(const fs::path& path) { return moka::testing::slurp(path); }

inline void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Options of one subprocess run: interrupt_on_stderr sends `signal` once the process has written
// something to stderr (so the signal arrives while the plan runs, after the handler is installed).
struct RunOpts {
  bool interrupt_on_stderr = false;
  int signal = SIGINT;                        ///< the signal interrupt_on_stderr sends
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
    return moka::testing::spawn_moka(
        args, dir_ / fmt_name("stdout"), dir_ / fmt_name("stderr"), kProcessTimeout,
        {.on_stderr = opts.interrupt_on_stderr, .signal = opts.signal, .delay = opts.signal_delay});
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

inline std::string source_path(const std::string& rel) { return std::string(moka::testing::source_dir()) + "/" + rel; }

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
