// The flagship demo's job (examples/demo/sgd_job.h, docs/demo.md) on a smaller data set through `moka job run`: its
// final numbers are close to the truth and the same on threads and fibers, a run SIGKILLed after epoch 2 and
// resumed ends with exactly the numbers of a run that never stopped, and its output: a live status line on a
// terminal, plain lines on a pipe, --quiet and --log-level.
#include "../../../examples/demo/sgd_job.h"

#include <pty.h>

#include "unit/cli/cli_fixture.h"

namespace moka_cli_test {
namespace {

class SgdDemo : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    config_.dir = (dir_ / "demo").string();
    fs::create_directories(config_.dir);
    config_.rows = 400'000;
    config_.batch = 200;
    config_.batches_per_epoch = 300;  // 1000 batches per shard: epochs of 300, 300, 300 and 100
    moka::demo::generate_shards(config_);
    job_ = moka::demo::write_job(config_);
  }
  // The job's outputs: the last line of a successful run.
  static Json outputs(const CliResult& r) {
    const std::string out = r.out;
    const auto start = out.rfind('\n', out.size() - 2);
    return Json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
  }
  moka::demo::SgdConfig config_;
  std::string job_;
};

TEST_F(SgdDemo, FitsTheTrueModelTheSameWayOnThreadsAndFibers) {
  const CliResult threads = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "a").string(), "--threads"});
  ASSERT_EQ(threads.code, 0) << threads.err;
  EXPECT_NE(threads.out.find("epoch 4: "), std::string::npos) << threads.out;
  EXPECT_NE(threads.out.find("finished after epoch 4"), std::string::npos) << threads.out;
  const Json o = outputs(threads);
  const auto truth = moka::demo::true_weights();
  for (int k = 0; k < moka::demo::kFeatures; ++k)
    EXPECT_NEAR(o[fmt::format("weight_{}", k)]["data"][0].get<double>(), truth[k], 0.01) << k;
  EXPECT_NEAR(o["bias"]["data"][0].get<double>(), moka::demo::kTrueBias, 0.01);
  EXPECT_LT(o["squared_error"]["data"][0].get<double>(), 1e-4);
  const CliResult fibers = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "b").string(), "--fibers"});
  ASSERT_EQ(fibers.code, 0) << fibers.err;
  EXPECT_EQ(outputs(fibers), o) << "the numbers depend on how the pipes ran";
}

TEST_F(SgdDemo, KilledAfterEpochTwoAndResumedEndsAsIfNeverStopped) {
  const CliResult whole = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "whole").string()});
  ASSERT_EQ(whole.code, 0) << whole.err;
  const std::string dir = (dir_ / "killed").string();
  const CliResult killed =
      moka::testing::spawn_moka({"job", "run", job_, "--checkpoint-dir", dir}, dir_ / "killed.out", dir_ / "killed.err",
                                kProcessTimeout, {.signal = SIGKILL, .on_stdout = "epoch 2: "});
  ASSERT_EQ(killed.code, 128 + SIGKILL) << "the run ended before the kill: " << killed.out;
  EXPECT_EQ(killed.out.find("finished"), std::string::npos);
  const CliResult resumed = run({"job", "run", job_, "--checkpoint-dir", dir, "--resume", "latest"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.out.find("epoch 1: "), std::string::npos) << "epoch 1 ran again: " << resumed.out;
  EXPECT_NE(resumed.out.find("finished after epoch 4"), std::string::npos) << resumed.out;
  EXPECT_EQ(outputs(resumed), outputs(whole));
  // Every committed checkpoint of the resumed directory verifies.
  EXPECT_EQ(run({"checkpoint", "verify", dir}).code, 0);
}

TEST_F(SgdDemo, ABadLineInAShardIsNamedAndTheJobFails) {
  {
    std::ofstream out(moka::demo::shard_path(config_, 1), std::ios::app);
    out << "1\t2\tthree\n";  // the first value that does not parse is named
  }
  const CliResult r = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "bad").string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("shard_1.tsv:200001: field 2 (\"x2\"): \"three\" is not a float32 value"), std::string::npos)
      << r.err;
}

// Runs moka with stderr on a pseudo-terminal (stdout into a file); returns what the terminal showed.
std::string stderr_on_a_terminal(const std::vector<std::string>& args, const fs::path& out_path, int& code) {
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) {
    ADD_FAILURE() << "openpty failed";
    return {};
  }
  const pid_t pid = moka::testing::start_moka(args, out_path, {}, slave, master);
  ::close(slave);
  std::string shown;
  if (pid != 0) {
    char buf[4096];
    for (;;) {  // until the child closes its end (EIO on Linux)
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;
      shown.append(buf, static_cast<std::size_t>(n));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::close(master);
  return shown;
}

TEST_F(SgdDemo, ALiveStatusLineOnATerminalAndPlainLinesOnAPipe) {
  // A redraw every 10 ms: the small job can end before the default's first one (250 ms).
  ::setenv("MOKA_PROGRESS_INTERVAL_MS", "10", 1);
  int code = -1;
  const std::string shown =
      stderr_on_a_terminal({"job", "run", job_, "--checkpoint-dir", (dir_ / "tty").string()}, dir_ / "tty.out", code);
  ASSERT_EQ(code, 0) << shown;
  EXPECT_NE(shown.find("\r\033[Kepoch "), std::string::npos) << shown;
  EXPECT_NE(shown.find("reader/read_shard_0 "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" records/s"), std::string::npos) << shown;  // every pipe of the demo reads records
  EXPECT_NE(shown.find("| batches_0"), std::string::npos)
      << "queue depths: " << shown;  // "batches_0_<k>" in a process that built several
  EXPECT_TRUE(shown.empty() || shown.substr(shown.size() - 4) == "\r\033[K") << "the line is erased at the end";
  const std::string out = read_file(dir_ / "tty.out");
  EXPECT_NE(out.find("finished after epoch 4"), std::string::npos) << out;
  EXPECT_EQ(out.find("\033["), std::string::npos) << "stdout is a file: no escapes there";
  ::setenv("MOKA_PROGRESS_INTERVAL_MS", "often", 1);  // named and ignored
  (void)stderr_on_a_terminal({"job", "run", job_, "--no-checkpoints"}, dir_ / "often.out", code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(read_file(dir_ / "often.out").find("MOKA_PROGRESS_INTERVAL_MS=\"often\" is not a number"),
            std::string::npos);
  ::unsetenv("MOKA_PROGRESS_INTERVAL_MS");

  const CliResult piped = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "pipe").string()});
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err, "") << "no status line off a terminal";
  EXPECT_NE(piped.out.find("epoch 2: "), std::string::npos);

  const CliResult quiet = run({"job", "run", job_, "--checkpoint-dir", (dir_ / "quiet").string(), "--quiet"});
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(std::count(quiet.out.begin(), quiet.out.end(), '\n'), 1) << quiet.out;
  EXPECT_EQ(quiet.out.rfind("{\"weight_0\"", 0), 0u) << quiet.out;
  const CliResult warn = run(
      {"job", "run", job_, "--checkpoint-dir", (dir_ / "quiet").string(), "--resume", "latest", "--log-level", "warn"});
  ASSERT_EQ(warn.code, 0) << warn.err;
  EXPECT_EQ(warn.out.find("resuming"), std::string::npos) << warn.out;
  EXPECT_EQ(run({"job", "run", job_, "--no-checkpoints", "--log-level", "loud"}).code, 2);
}

}  // namespace
}  // namespace moka_cli_test
