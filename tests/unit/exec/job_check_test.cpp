// Unit tests for check_task_group and check_job: node plans, stop conditions and checkpointed nodes
// checked before anything runs, each error naming the group, field and node involved.
#include <gtest/gtest.h>

#include <string>

#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/exec/job_check.h"

namespace moka {
namespace {

const char* kPlan = R"({"network": [{"name": "n", "op": [{"type": "ConstantFill", "output": ["done"]}]}],
                       "execution_step": [{"name": "s", "network": ["n"]}]})";

// A valid job: nodes "trainer" and "reader" in init_group, "trainer" in epoch_group.
JobDef valid_job() {
  const std::string plan = kPlan;
  return job_from_json(R"({"name": "j",
    "init_group": {"nodes": [{"node": "trainer", "plan": )" +
                       plan + R"(}, {"node": "reader", "plan": )" + plan + R"(}]},
    "epoch_group": {"nodes": [{"node": "trainer", "plan": )" +
                       plan + R"(}]},
    "stop_conditions": [{"node": "trainer", "blob": "done"}],
    "nodes_to_checkpoint": ["trainer", "reader"]})");
}

std::string job_error(const JobDef& job) {
  try {
    check_job(job);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "check_job accepted the job";
  return {};
}

TEST(JobCheck, AValidJobPasses) { EXPECT_NO_THROW(check_job(valid_job())); }

TEST(JobCheck, ABadNodePlanNamesTheGroupAndTheNode) {
  JobDef job = valid_job();
  job.epoch_group.nodes[0].plan.network[0].op[0].type = "Nope";
  EXPECT_EQ(job_error(job),
            "epoch_group > node \"trainer\" > network[0] \"n\" > operator #0 (Nope): unknown operator type \"Nope\" "
            "(`moka ops` lists the registered ones)");
  job = valid_job();
  job.exit_group.nodes.push_back(job.init_group.nodes[1]);
  job.exit_group.nodes[0].plan.execution_step[0].network = {"ghost"};
  const std::string msg = job_error(job);
  EXPECT_EQ(msg, "exit_group > node \"reader\": execution_step[0] \"s\": ExecutionStep s uses undefined net ghost");
}

TEST(JobCheck, AJobWithoutStopConditionsIsRefused) {
  JobDef job = valid_job();
  job.stop_conditions.clear();
  EXPECT_EQ(job_error(job), "stop_conditions: the job has none, so its epoch loop would never end");
}

TEST(JobCheck, AStopConditionMustNameANodeOfTheJob) {
  JobDef job = valid_job();
  job.stop_conditions.push_back({.node = "ghost", .blob = "done"});
  EXPECT_EQ(job_error(job),
            "stop_conditions[1]: node \"ghost\" is in no group of the job (its nodes: \"trainer\", \"reader\")");
  job.stop_conditions[1] = {.node = "", .blob = "done"};
  EXPECT_EQ(job_error(job), "stop_conditions[1]: the node name is empty");
  job.stop_conditions[1] = {.node = "reader", .blob = ""};
  EXPECT_EQ(job_error(job), "stop_conditions[1]: the blob name is empty");
  // A node of any group will do (its workspace lives for the whole job).
  job.stop_conditions[1] = {.node = "reader", .blob = "done"};
  EXPECT_NO_THROW(check_job(job));
}

TEST(JobCheck, CheckpointedNodesMustExistOnce) {
  JobDef job = valid_job();
  job.nodes_to_checkpoint = {"trainer", "writer"};
  EXPECT_EQ(job_error(job),
            "nodes_to_checkpoint[1]: node \"writer\" is in no group of the job (its nodes: \"trainer\", \"reader\")");
  job.nodes_to_checkpoint = {"trainer", "trainer"};
  EXPECT_EQ(job_error(job), "nodes_to_checkpoint[1]: node \"trainer\" is listed twice");
  job.nodes_to_checkpoint.clear();  // the default: init_group's nodes
  EXPECT_NO_THROW(check_job(job));
}

TEST(JobCheck, ManyNodesAreListedShortly) {
  JobDef job = valid_job();
  for (int i = 0; i < 20; ++i)
    job.download_group.nodes.push_back({.node = "n" + std::to_string(i), .plan = {}, .outputs = {}});
  job.stop_conditions[0].node = "ghost";
  const std::string msg = job_error(job);
  EXPECT_NE(msg.find("\"n5\" and 14 more)"), std::string::npos) << msg;
}

TEST(TaskGroupCheck, NodesNeedUniqueNamesAndValidPlans) {
  TaskGroupDef group = valid_job().init_group;
  EXPECT_NO_THROW(check_task_group(group));
  group.nodes[1].node = "trainer";
  try {
    check_task_group(group);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_STREQ(e.what(), "nodes[1]: duplicate node \"trainer\"");
  }
  group.nodes[1].node = "";
  EXPECT_THROW(check_task_group(group), InvalidInput);
  group.nodes[1].node = "reader";
  group.nodes[1].plan.network[0].op[0].type = "Nope";
  try {
    check_task_group(group);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node \"reader\" > network[0]", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace moka
