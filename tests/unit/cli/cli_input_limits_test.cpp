// CLI tests: plan and job files are read up to 64 MiB (a larger file, /dev/zero or a FIFO that never
// ends is refused with its name, size and the limit, exit 2, without reading on), and a directory,
// a job document given to `moka run` or a plan given to `moka job run` is named as such.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "support/paths.h"
#include "support/temp_dir.h"
#include "unit/cli/cli_process.h"

namespace {

using moka::testing::expect_moka_error;
using moka::testing::run_moka;

class CliInputLimits : public ::testing::Test {
 protected:
  moka::testing::TempDir dir_{"moka-cli-limits"};
  moka::testing::MokaResult moka(const std::vector<std::string>& args) { return run_moka(args, dir_.fs_path()); }
};

TEST_F(CliInputLimits, DevZeroIsRefusedAtTheLimit) {
  const std::string limit = "larger than the limit of 64 MiB (67108864 bytes); reading stopped there";
  expect_moka_error(moka({"run", "/dev/zero"}), 2, {"moka: invalid input: /dev/zero: plan file is " + limit});
  expect_moka_error(moka({"check", "/dev/zero"}), 2, {"/dev/zero: plan or job file is " + limit});
  expect_moka_error(moka({"job", "run", "/dev/zero", "--checkpoint-dir", dir_ / "ckpt"}), 2,
                    {"/dev/zero: job file is " + limit});
}

TEST_F(CliInputLimits, AFileOverTheLimitIsRefusedByItsSize) {
  const std::string path = dir_ / "big.json";
  std::ofstream(path).close();
  ASSERT_EQ(::truncate(path.c_str(), (off_t{64} << 20) + 1), 0);  // sparse: no disk used
  expect_moka_error(moka({"run", path}), 2,
                    {path + ": plan file is 67108865 bytes, larger than the limit of 64 MiB (67108864 bytes)"});
  expect_moka_error(moka({"job", "run", path, "--checkpoint-dir", dir_ / "ckpt"}), 2,
                    {path + ": job file is 67108865 bytes"});
}

TEST_F(CliInputLimits, ADirectoryIsNamedAsSuch) {
  expect_moka_error(moka({"run", dir_.path()}), 2, {dir_.path() + ": is a directory, not a plan file"});
  expect_moka_error(moka({"check", dir_.path()}), 2, {dir_.path() + ": is a directory, not a plan or job file"});
}

TEST_F(CliInputLimits, AJobDocumentGivenToRunSaysWhatItIs) {
  const std::string path = std::string(moka::testing::source_dir()) + "/examples/jobs/counting.json";
  expect_moka_error(moka({"run", path}), 2,
                    {"counting.json: top level: field \"epoch_group\" makes this a job document", "moka job run"});
}

TEST_F(CliInputLimits, APlanGivenToJobRunSaysWhatItIs) {
  const std::string plan = std::string(moka::testing::source_dir()) + "/examples/plans/demo.json";
  expect_moka_error(moka({"job", "run", plan, "--checkpoint-dir", dir_ / "ckpt"}), 2,
                    {"demo.json: top level: this is a plan, not a job: a job has an \"epoch_group\""});
  const std::string group = std::string(moka::testing::source_dir()) + "/examples/task_groups/two_nodes.json";
  expect_moka_error(moka({"job", "run", group, "--checkpoint-dir", dir_ / "ckpt"}), 2,
                    {"two_nodes.json: top level: this is a TaskGroup document (it has \"nodes\"), not a job"});
}

}  // namespace
