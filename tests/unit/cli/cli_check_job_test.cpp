// CLI tests: `moka check` recognises a job document and checks it (node plans, stop conditions,
// nodes_to_checkpoint), printing "FILE: ok (job, ...)" or one error line with exit 2; nested nets
// of control operators are checked too.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/paths.h"
#include "support/temp_dir.h"
#include "unit/cli/cli_process.h"

namespace {

using moka::testing::expect_moka_error;
using moka::testing::run_moka;

class CliCheckJob : public ::testing::Test {
 protected:
  moka::testing::TempDir dir_{"moka-cli-check-job"};
  moka::testing::MokaResult moka(const std::vector<std::string>& args) { return run_moka(args, dir_.fs_path()); }
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
};

const std::string kPlan = R"({"network": [{"name": "n", "op": [{"type": "ConstantFill", "output": ["done"]}]}],
                              "execution_step": [{"name": "s", "network": ["n"]}]})";

// A job whose epoch_group node "t" runs `epoch_plan`, stopping on `stop_node`'s blob "done".
std::string job(const std::string& epoch_plan, const std::string& stop_node = "t", const std::string& extra = "") {
  return R"({"init_group": {"nodes": [{"node": "t", "plan": )" + kPlan + R"(}]},
             "epoch_group": {"nodes": [{"node": "t", "plan": )" +
         epoch_plan + R"(}]},
             "stop_conditions": [{"node": ")" +
         stop_node + R"(", "blob": "done"}])" + extra + "}";
}

TEST_F(CliCheckJob, TheExampleJobIsOk) {
  const std::string path = std::string(moka::testing::source_dir()) + "/examples/jobs/counting.json";
  const auto r = moka({"check", path});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, path + ": ok (job, 3 groups with nodes, 2 nodes, 1 stop condition, 2 nodes checkpointed)\n");
}

TEST_F(CliCheckJob, ABadNodePlanIsReportedWithItsGroupAndNode) {
  const std::string bad =
      R"({"network": [{"name": "n", "op": [{"type": "Nope"}]}], "execution_step": [{"network": ["n"]}]})";
  expect_moka_error(
      moka({"check", file("job.json", job(bad))}), 2,
      {"moka: invalid input: epoch_group > node \"t\" > network[0] \"n\" > operator #0 (Nope): unknown operator type"});
}

TEST_F(CliCheckJob, AStopConditionOnAnUnknownNodeIsReported) {
  expect_moka_error(moka({"check", file("job.json", job(kPlan, "ghost"))}), 2,
                    {"stop_conditions[0]: node \"ghost\" is in no group of the job (its nodes: \"t\")"});
}

TEST_F(CliCheckJob, AnUnknownCheckpointedNodeIsReported) {
  expect_moka_error(moka({"check", file("job.json", job(kPlan, "t", R"(, "nodes_to_checkpoint": ["t", "w"])"))}), 2,
                    {"nodes_to_checkpoint[1]: node \"w\" is in no group of the job"});
}

TEST_F(CliCheckJob, AJobWithoutStopConditionsIsReported) {
  expect_moka_error(moka({"check", file("job.json", R"({"epoch_group": {"nodes": []}})")}), 2,
                    {"stop_conditions: the job has none"});
}

TEST_F(CliCheckJob, AJobFieldErrorNamesTheFileAndThePath) {
  // A job missing its epoch_group is still read as a job (by its other fields), not as a plan.
  expect_moka_error(moka({"check", file("job.json", R"({"init_group": {"nodes": []}, "stop_conditions": []})")}), 2,
                    {"job.json: epoch_group: missing field \"epoch_group\""});
  expect_moka_error(moka({"check", file("typo.json", job(kPlan, "t", R"(, "stop_condition": [])"))}), 2,
                    {"typo.json: top level: unknown field \"stop_condition\""});
}

TEST_F(CliCheckJob, PlansAndTaskGroupsStillCheck) {
  const auto plan = moka({"check", file("plan.json", kPlan)});
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_EQ(plan.out, dir_ / "plan.json" + ": ok (1 nets, 1 top-level steps)\n");
  const auto group = moka({"check", file("group.json", R"({"nodes": [{"node": "a", "plan": )" + kPlan + "}]}")});
  EXPECT_EQ(group.code, 0) << group.err;
  EXPECT_EQ(group.out, dir_ / "group.json" + ": ok (task group, 1 nodes)\n");
}

TEST_F(CliCheckJob, NetsNestedInControlOperatorsAreChecked) {
  const std::string plan = R"({"network": [{"name": "n", "op": [
      {"type": "ConstantFill", "output": ["c"], "arg": [{"name": "shape", "ints": []}, {"name": "dtype", "s": "BOOL"}]},
      {"type": "If", "input": ["c"], "arg": [{"name": "then_net", "n": {"name": "then", "op": [{"type": "Nope"}]}}]}]}],
    "execution_step": [{"name": "s", "network": ["n"]}]})";
  expect_moka_error(moka({"check", file("plan.json", plan)}), 2,
                    {"network[0] \"n\" > operator #1 (If) > net \"then\" > operator #0 (Nope): unknown operator type"});
}

}  // namespace
