// CLI tests of error messages: numeric flags name the flag, the range and the value; a tensor too large
// to allocate is an error naming its dtype, shape, bytes and operator (exit 1, no crash); an error
// deep in nested steps is one short line naming each location once.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "support/paths.h"
#include "support/temp_dir.h"
#include "unit/cli/cli_process.h"

namespace {

using moka::testing::expect_moka_error;
using moka::testing::run_moka;

class CliMessages : public ::testing::Test {
 protected:
  moka::testing::TempDir dir_{"moka-cli-messages"};
  moka::testing::MokaResult moka(const std::vector<std::string>& args) { return run_moka(args, dir_.fs_path()); }
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  std::string job() const { return std::string(moka::testing::source_dir()) + "/examples/jobs/counting.json"; }
};

TEST_F(CliMessages, CountFlagsSayWhatTheyExpect) {
  const std::string ckpt = dir_ / "ckpt";
  for (const char* flag : {"--keep-last", "--keep-every"}) {
    SCOPED_TRACE(flag);
    auto with = [&](const std::string& value) {
      std::vector<std::string> args{"job", "run", job(), "--checkpoint-dir", ckpt, flag, value};
      if (std::string(flag) == "--keep-every") args.insert(args.end(), {"--keep-last", "1"});
      return moka(args);
    };
    const std::string f = flag;
    auto r = with("-1");
    expect_moka_error(r, 2, {"moka: " + f + ": expected an integer >= 0, got -1 (see moka --help)"});
    EXPECT_LT(r.err.size(), 100u) << r.err;
    expect_moka_error(with("99999999999999999999"), 2,
                      {f + ": expected an integer from 0 to 9223372036854775807, got 99999999999999999999"});
    expect_moka_error(with("-99999999999999999999"), 2, {f + ": expected an integer >= 0, got -99999999999999999999"});
    expect_moka_error(with("abc"), 2, {f + ": expected an integer >= 0, got \"abc\""});
    expect_moka_error(with("1.5"), 2, {f + ": expected an integer >= 0, got \"1.5\""});
    expect_moka_error(with("2x"), 2, {f + ": expected an integer >= 0, got \"2x\""});
  }
}

TEST_F(CliMessages, TimeoutAndResumeFlagsSayWhatTheyExpect) {
  expect_moka_error(moka({"run", file("p.json", "{}"), "--exception-timeout", "-1"}), 2,
                    {"--exception-timeout: expected a number of seconds from 0 to 1e+09, got \"-1\""});
  expect_moka_error(moka({"job", "run", job(), "--checkpoint-dir", dir_ / "ckpt", "--exception-timeout", "1e999"}), 2,
                    {"--exception-timeout: expected a number of seconds from 0 to 1e+09, got \"1e999\""});
  expect_moka_error(moka({"job", "run", job(), "--checkpoint-dir", dir_ / "ckpt", "--resume", "99999999999999999999"}),
                    2, {"--resume: expected \"latest\" or an epoch number >= 0, got \"99999999999999999999\""});
}

TEST_F(CliMessages, ATensorTooLargeToAllocateIsAnErrorNamingIt) {
  // 2^50 float32 elements: 4 PiB, more than any address space, so the allocation fails at once.
  const std::string plan = R"({"network": [{"name": "n", "op": [{"type": "ConstantFill", "output": ["y"],
      "arg": [{"name": "shape", "ints": [1125899906842624]}]}]}], "execution_step": [{"name": "s", "network": ["n"]}]})";
  expect_moka_error(
      moka({"run", file("big.json", plan)}), 1,
      {"moka: error: step \"s\" > net \"n\" > operator #0 (ConstantFill) writing \"y\": cannot allocate a "
       "float32[1125899906842624] tensor (4503599627370496 bytes, 4.0 PiB): out of memory"});
}

TEST_F(CliMessages, NegativeAndOverflowingShapesAreInvalidInput) {
  auto fill = [&](const std::string& shape) {
    return file("shape.json", R"({"network": [{"name": "n", "op": [{"type": "ConstantFill", "output": ["y"],
        "arg": [{"name": "shape", "ints": )" +
                                  shape + R"(}]}]}], "execution_step": [{"name": "s", "network": ["n"]}]})");
  };
  expect_moka_error(moka({"run", fill("[-5]")}), 2, {"\"shape\" = [-5] has a negative dimension"});
  expect_moka_error(moka({"run", fill("[4611686018427387904, 4]")}), 2, {"[4611686018427387904,4] is too large"});
  expect_moka_error(moka({"run", fill("[0, 4294967296, 4294967296]")}), 2, {"[0,4294967296,4294967296] is too large"});
}

// Steps l1..l<depth> nested, each running its inner step and a side step concurrently in two
// instances; the innermost divides by an integer zero.
std::string nested_step(int depth) {
  // Each instance of the leaf and side steps in a workspace of its own: instances sharing one
  // would write the same blobs at once (a data race of the plan, which TSan reports).
  if (depth == 0) return R"({"name": "leaf", "create_workspace": true, "network": ["bad"]})";
  const std::string d = std::to_string(depth);
  return R"({"name": "l)" + d + R"(", "concurrent_substeps": true, "num_concurrent_instances": 2, "substep": [)" +
         nested_step(depth - 1) + R"(, {"name": "side)" + d + R"(", "create_workspace": true, "network": ["ok"]}]})";
}

// The start of a plan: net "ok" and net "bad" (its Div divides by zero), then its steps.
constexpr const char* kNets = R"({"network": [{"name": "ok", "op": [{"type": "ConstantFill", "output": ["o"]}]},
      {"name": "bad", "op": [
        {"type": "GivenTensorInt64Fill", "output": ["a"], "arg": [{"name": "values", "ints": [7]}]},
        {"type": "GivenTensorInt64Fill", "output": ["z"], "arg": [{"name": "values", "ints": [0]}]},
        {"type": "Div", "input": ["a", "z"], "output": ["q"]}]}],
    "execution_step": [)";

// Steps l1..l<depth> nested one in the other, the innermost "leaf" running net "bad".
std::string sequential_step(int depth) {
  if (depth == 0) return R"({"name": "leaf", "network": ["bad"]})";
  return R"({"name": "l)" + std::to_string(depth) + R"(", "substep": [)" + sequential_step(depth - 1) + "]}";
}

TEST_F(CliMessages, DeeplyNestedErrorsAreOneShortLine) {
  const std::string plan = kNets + sequential_step(30) + "]}";
  const auto r = moka({"run", file("deep.json", plan)});
  expect_moka_error(r, 1,
                    {"moka: error: step \"l30\" > step \"l29\" > step \"l28\" > (25 more levels) > step \"l2\" > "
                     "step \"l1\" > step \"leaf\" > net \"bad\" > operator #2 (Div): Div: integer division by zero"});
  EXPECT_LT(r.err.size(), 300u) << r.err;
}

TEST_F(CliMessages, ConcurrentInstancesDoNotRepeatTheirSteps) {
  // Before: step "l4" > step "l3" > step "l4" > step "l3" > step "l2" > ... (every instance's rethrow
  // added its step to one shared exception).
  const std::string plan = kNets + nested_step(4) + "]}";
  const std::string path = file("inst.json", plan);
  for (const char* mode : {"--threads", "--fibers"}) {
    SCOPED_TRACE(mode);
    expect_moka_error(
        moka({"run", path, mode}), 1,
        {"moka: error: step \"l4\" > step \"l3\" > step \"l2\" > step \"l1\" > step \"leaf\" > net \"bad\" > "
         "operator #2 (Div): Div: integer division by zero (inputs \"a\", \"z\")\n"});
  }
}

}  // namespace
