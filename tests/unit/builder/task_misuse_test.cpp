// Misuse of Task, TaskGroup, TaskOutput and the DSL's context-bound calls: each is an InvalidInput
// with Caffe2's message (or a clearer one), and the objects stay usable where Caffe2's do.
#include <gtest/gtest.h>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;
namespace mops = moka::ops;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TaskMisuse, AddingToAUsedTaskGroup) {
  TaskGroup tg;
  tg.add(Task({.name = "TaskMisuse.first"}, [] { mops::Const(1); }));
  (void)tg.tasks();  // compiling marks the group used
  EXPECT_EQ(invalid_input([&] { tg.add(Task({.name = "TaskMisuse.late"}, [] { mops::Const(2); })); }),
            "Cannot add Task to an already used TaskGroup.");
  EXPECT_EQ(tg.tasks().size(), 1u);  // the group is unchanged
}

TEST(TaskMisuse, ModifyingAUsedTask) {
  Task task({.name = "TaskMisuse.used"}, [] { mops::Const(1); });
  TaskGroup tg;
  tg.add(task);
  EXPECT_EQ(invalid_input([&] { task.add_output(TaskOutput(BlobRef("x"))); }),
            "Cannot modify task since it is already been used.");
}

TEST(TaskMisuse, WorkspaceTypeConflictsWithTheGroup) {
  TaskGroup tg(WorkspaceType::Global);
  Task priv({.name = "TaskMisuse.private", .workspace_type = WorkspaceType::Private}, [] { mops::Const(1); });
  const std::string msg = invalid_input([&] { tg.add(priv); });
  EXPECT_TRUE(contains(msg, "workspace type")) << msg;
  EXPECT_TRUE(contains(msg, "PRIVATE") || contains(msg, "private")) << msg;
}

TEST(TaskMisuse, OneReportNetPerNode) {
  TaskGroup tg;
  tg.report_net();
  const std::string msg = invalid_input([&] { tg.report_net(); });
  EXPECT_TRUE(contains(msg, "Only one report net allowed per node")) << msg;
}

TEST(TaskMisuse, TasksByNodeWithTwoDifferentMaps) {
  TaskGroup tg([] { Node n("TaskMisuse.node", [] { Task({.name = "t"}, [] { mops::Const(1); }); }); });
  (void)tg.tasks_by_node();
  (void)tg.tasks_by_node();  // the same map: memoized, fine
  EXPECT_EQ(invalid_input([&] { (void)tg.tasks_by_node([](const std::string&) { return std::string("elsewhere"); }); }),
            "Cannot call tasks_by_node multiple times.");
}

TEST(TaskMisuse, DslOutsideAnyBuilder) {
  const std::string msg = invalid_input([] { mops::Const(1); });
  EXPECT_TRUE(contains(msg, "NetBuilder")) << msg;
  EXPECT_TRUE(contains(invalid_input([] { (void)Task::current(); }), "Task")) << "Task::current() needs an active Task";
  EXPECT_TRUE(contains(invalid_input([] { mops::stop(); }), "NetBuilder"));
  EXPECT_TRUE(contains(invalid_input([] { mops::loop(3, [] {}); }), "NetBuilder"));
}

TEST(TaskMisuse, LocalReporterNeedsATaskGroup) {
  const std::string msg =
      invalid_input([] { NetBuilder nb([] { mops::local_reporter(10, [] { mops::Const(1); }); }); });
  EXPECT_TRUE(contains(msg, "TaskGroup")) << msg;
}

TEST(TaskMisuse, NumIterWithShouldStopBlobAndMixedChildren) {
  Net net("TaskMisuse.mixed");
  net.Const(1);
  EXPECT_EQ(invalid_input([&] { execution_step("x", net, {.num_iter = 2, .should_stop_blob = "b"}); }),
            "Cannot set both should_stop_blob and num_iter.");
  ExecutionStep with_nets("TaskMisuse.with_nets", {net});
  ExecutionStep sub("TaskMisuse.sub", {net});
  EXPECT_EQ(invalid_input([&] { with_nets.add_substep(sub); }), "Cannot have both network and substeps.");
}

TEST(TaskMisuse, TaskOutputBeforeTheRun) {
  TaskOutput out(BlobRef("TaskMisuse.out"));
  EXPECT_EQ(invalid_input([&] { (void)out.fetch(); }), "Cannot fetch value for this output.");  // Caffe2's texts
  EXPECT_EQ(invalid_input([&] { (void)out.get(); }), "Output value not set yet.");
}

TEST(TaskMisuse, ClosedSessionRefusesRuns) {
  LocalSession session;
  session.close();
  Task task({.name = "TaskMisuse.closed"}, [] { mops::Const(1); });
  EXPECT_EQ(invalid_input([&] { session.run(task); }), "Session is closed.");
}

}  // namespace
}  // namespace moka
