// CLI tests of timeline traces (docs/tracing.md): moka job run --trace and moka run --trace write a trace of the
// right structure, MOKA_TRACE does the same without the flag, a bad level is refused with exit 2, and a trace that
// cannot be written fails the command naming the file.
#include <cstdlib>

#include "../../../examples/demo/sgd_job.h"
#include "support/trace_check.h"
#include "unit/cli/cli_fixture.h"

namespace moka_cli_test {
namespace {

// The flagship job on 4000 rows: 3 epochs of a reader node and two trainer nodes, quick under the sanitizers too.
std::string small_sgd_job(const fs::path& dir) {
  moka::demo::SgdConfig c;
  c.dir = dir.string();
  c.rows = 4000;
  c.batch = 100;
  c.batches_per_epoch = 7;  // 20 batches a shard: epochs of 7, 7 and 6
  fs::create_directories(c.dir);
  moka::demo::generate_shards(c);
  return moka::demo::write_job(c);
}

TEST_F(Cli, JobRunTraceHasEpochsCheckpointsAndNodes) {
  const std::string job = small_sgd_job(dir_ / "data");
  const std::string trace = (dir_ / "job.json").string();
  const CliResult r =
      run({"job", "run", job, "--checkpoint-dir", (dir_ / "ck").string(), "--trace", trace, "--threads"});
  ASSERT_EQ(r.code, 0) << r.err;
  const moka::testing::TraceContents t = moka::testing::check_trace(trace);
  EXPECT_GT(t.spans_by_category.count("epoch"), 0u);
  EXPECT_GT(t.spans_by_category.count("checkpoint"), 0u);
  EXPECT_GT(t.spans_by_category.count("step"), 0u);
  EXPECT_TRUE(t.span_names.contains("epoch 1"));
  EXPECT_TRUE(t.span_names.contains("save epoch 1"));
  EXPECT_TRUE(t.span_names.contains("commit epoch 1"));
  EXPECT_TRUE(t.thread_names.contains("main"));
  const bool node = std::any_of(t.process_names.begin(), t.process_names.end(),
                                [](const std::string& n) { return n.rfind("node trainer_0 (", 0) == 0; });
  EXPECT_TRUE(node) << ::testing::PrintToString(t.process_names);
  // Resuming records the load.
  const CliResult again =
      run({"job", "run", job, "--checkpoint-dir", (dir_ / "ck").string(), "--resume", "latest", "--trace", trace});
  ASSERT_EQ(again.code, 0) << again.err;
  const moka::testing::TraceContents resumed = moka::testing::check_trace(trace);
  EXPECT_TRUE(std::any_of(resumed.span_names.begin(), resumed.span_names.end(),
                          [](const std::string& n) { return n.rfind("load epoch ", 0) == 0; }));
}

TEST_F(Cli, RunTraceAtTheOperatorLevelAndFromTheEnvironment) {
  const std::string plan = plan_file(R"({"network": [{"name": "n", "op": [
      {"type": "ConstantFill", "output": ["x"], "arg": [{"name": "value", "f": 2.0}, {"name": "shape", "ints": [3]}]}]}],
    "execution_step": [{"name": "s", "network": ["n"], "num_iter": 4}]})");
  const std::string trace = (dir_ / "ops.json").string();
  CliResult r = run({"run", plan, "--trace", trace, "--trace-level", "ops"});
  ASSERT_EQ(r.code, 0) << r.err;
  moka::testing::TraceContents t = moka::testing::check_trace(trace);
  EXPECT_EQ(t.spans_by_category["net"], 4);
  EXPECT_EQ(t.spans_by_category["op"], 4);
  EXPECT_TRUE(t.span_names.contains("ConstantFill x"));

  const std::string env_trace = (dir_ / "env.json").string();
  ::setenv("MOKA_TRACE", env_trace.c_str(), 1);
  ::setenv("MOKA_TRACE_LEVEL", "nets", 1);
  r = run({"run", plan});
  ::unsetenv("MOKA_TRACE");
  ::unsetenv("MOKA_TRACE_LEVEL");
  ASSERT_EQ(r.code, 0) << r.err;
  t = moka::testing::check_trace(env_trace);
  EXPECT_EQ(t.spans_by_category["net"], 4);
  EXPECT_EQ(t.spans_by_category.count("op"), 0u);
}

TEST_F(Cli, BadTraceLevelsAndPaths) {
  const std::string plan = plan_file(R"({"network": [], "execution_step": []})");
  CliResult r = run({"run", plan, "--trace", (dir_ / "t.json").string(), "--trace-level", "everything"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--trace-level"), std::string::npos) << r.err;
  r = run({"run", plan, "--trace", (dir_ / "no/such/dir/t.json").string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("no/such/dir/t.json"), std::string::npos) << r.err;
  ::setenv("MOKA_TRACE_LEVEL", "loud", 1);
  ::setenv("MOKA_TRACE", (dir_ / "e.json").string().c_str(), 1);
  r = run({"run", plan});
  ::unsetenv("MOKA_TRACE");
  ::unsetenv("MOKA_TRACE_LEVEL");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown trace level \"loud\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moka_cli_test
