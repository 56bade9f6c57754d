// Runnables run again: the same Task in fresh sessions and in groups, setup and report blocks every time, outputs of
// the latest run.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;

// Sets blob "seed" of node "local" in session to v (a GLOBAL task reads it).
void seed(LocalSession& session, int64_t v) {
  session.workspace().create_blob("seed")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(v);
}

TEST(Rerun, SameTaskRunsInEveryFreshSession) {
  TaskOutput doubled;
  Task task([&] { doubled = final_output(ops::Mul({BlobRef("seed"), ops::Const(2)})); });
  for (int64_t v : {1, 2, 3}) {
    LocalSession session;
    seed(session, v);
    session.run(task);
    EXPECT_EQ(doubled.fetch<int64_t>(), 2 * v) << "session " << v;
  }
}

// Caffe2's checkpoint tests: one fetcher Task, its outputs given and its step the user's own net,
// run in every fresh session after a resume.
TEST(Rerun, SameFetcherTaskRunsInEveryFreshSession) {
  Net empty("empty");
  Task fetcher({.outputs = {TaskOutput(BlobRef("seed"))}}, empty);
  for (int64_t v : {5, 6}) {
    LocalSession session;
    seed(session, v);
    session.run(fetcher);
    EXPECT_EQ(fetcher.outputs()[0].fetch<int64_t>(), v);
  }
  // The compiled plans are the same: compiling marked nothing that changes a second compilation.
  LocalSession a, b;
  TaskGroup in_a(WorkspaceType::Global), in_b(WorkspaceType::Global);
  in_a.add(fetcher);
  in_b.add(fetcher);
  EXPECT_EQ(to_json(a.compile(in_a)), to_json(b.compile(in_b)));
}

TEST(Rerun, TaskRunTwiceInOneSessionRunsTwice) {
  TaskOutput count;
  Task bump([&] {
    ops::CountUp({BlobRef("runs")});
    count = final_output(ops::RetrieveCount({BlobRef("runs")}));
  });
  LocalSession session;
  session.run(Task([&] { ops::CreateCounter({}, {"runs"}); }));
  session.run(bump);
  session.run(bump);
  EXPECT_EQ(count.fetch<int64_t>(), 2);
  EXPECT_EQ(session.num_compiled(), 1u) << "compiled once, the counter creator dropped";
}

TEST(Rerun, TaskOutputsFollowTheLatestRun) {
  TaskOutput doubled;
  TaskGroup group(WorkspaceType::Global, [&] {
    Task([&] { doubled = final_output(ops::Mul({BlobRef("seed"), ops::Const(2)})); });
  });
  LocalSession s1, s2;
  seed(s1, 10);
  seed(s2, 20);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 20);
  s2.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 40);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 20) << "the output still read the other session's workspace";
}

// Setup blocks are used once per compilation; a second session's compilation must still have them.
TEST(Rerun, SetupAndReportBlocksRunInEverySession) {
  TaskOutput sum;
  Task task([&] {
    ops::local_init([&] { ops::Const(100, {.blob_out = "from_local_init"}); });
    ops::task_init([&] { ops::Const(10, {.blob_out = "from_task_init"}); });
    ops::task_instance_init([&] { ops::Const(1, {.blob_out = "from_instance_init"}); });
    BlobRef s = ops::Add({BlobRef("from_local_init"), BlobRef("from_task_init")});
    sum = final_output(ops::Add({s, BlobRef("from_instance_init")}));
    ops::task_exit([&] { ops::Const(1, {.blob_out = "from_task_exit"}); });
    ops::local_exit([&] { ops::Const(2, {.blob_out = "from_local_exit"}); });
    ops::task_reporter(100000, [&] { ops::Const(3, {.blob_out = "from_reporter"}); });
  });
  for (int i = 0; i < 2; ++i) {
    LocalSession session;
    session.run(task);
    EXPECT_EQ(sum.fetch<int64_t>(), 111) << "session " << i;
    EXPECT_EQ(session.fetch("local", "from_task_exit").item<int64_t>(), 1) << "session " << i;
    EXPECT_EQ(session.fetch("local", "from_local_exit").item<int64_t>(), 2) << "session " << i;
    EXPECT_EQ(session.fetch("local", "from_reporter").item<int64_t>(), 3) << "session " << i;
  }
}

// What a Task keeps for later sessions does not keep the Task alive: the session still drops
// what it compiled for a task nobody holds.
TEST(Rerun, ATaskNobodyHoldsIsStillReleased) {
  LocalSession session;
  std::weak_ptr<const void> identity;
  {
    Task task([&] {
      ops::local_init([&] { ops::Const(1, {.blob_out = "from_local_init"}); });
      final_output(ops::Add({BlobRef("from_local_init"), ops::Const(1)}));
    });
    session.run(task);
    identity = task.identity();
  }
  EXPECT_TRUE(identity.expired());
  session.run(Task([&] { ops::Const(1); }));
  EXPECT_EQ(session.num_compiled(), 1u);
}

TEST(Rerun, TaskRunAloneJoinsAGroupLater) {
  TaskOutput doubled;
  Task task([&] { doubled = final_output(ops::Mul({BlobRef("seed"), ops::Const(2)})); });
  LocalSession s1;
  seed(s1, 1);
  s1.run(task);
  EXPECT_EQ(doubled.fetch<int64_t>(), 2);

  TaskGroup group;  // adopts the task's GLOBAL type
  group.add(task);
  LocalSession s2;
  seed(s2, 4);
  s2.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 8);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 2);
  s1.run(task);
  EXPECT_EQ(doubled.fetch<int64_t>(), 2);
}

TEST(Rerun, TaskOfAGroupRunsAloneInAnotherSession) {
  TaskOutput doubled;
  Task task;
  TaskGroup group(WorkspaceType::Global, [&] {
    task = Task([&] { doubled = final_output(ops::Mul({BlobRef("seed"), ops::Const(2)})); });
  });
  LocalSession s1, s2;
  seed(s1, 3);
  seed(s2, 7);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 6);
  s2.run(task);
  EXPECT_EQ(doubled.fetch<int64_t>(), 14);
  s2.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 14);
}

// A task's workspace type decides how its step runs in every group; once the task is compiled it
// cannot change.
TEST(Rerun, WorkspaceTypeIsFixedOnceTheTaskIsUsed) {
  Task task([&] { ops::Const(1, {.blob_out = "x"}); });
  LocalSession().run(task);
  EXPECT_EQ(task.workspace_type(), WorkspaceType::Global);
  EXPECT_THROW(task.set_workspace_type(WorkspaceType::Private), InvalidInput);
  task.set_workspace_type(WorkspaceType::Global);  // unchanged: fine
  TaskGroup private_group(WorkspaceType::Private);
  EXPECT_THROW(private_group.add(task), InvalidInput);
}

// A new Task per session wraps them (setup blocks in their nets go to the first session's Task;
// docs/sessions.md §2.1).
TEST(Rerun, StepsPlansAndNetsRunInEveryFreshSession) {
  NetBuilder nb({.name = "stepped"}, [&] { ops::Add({ops::Const(10), BlobRef("seed")}, {"sum"}); });
  ExecutionStep step = to_execution_step(nb);
  Net net("plain_net");
  net.op("Mul", {BlobRef("seed"), net.Const(3)}, {"tripled"});
  Plan plan("plan");
  plan.add_step(execution_step("plan_step", net));
  for (int64_t v : {1, 2}) {
    LocalSession session;
    seed(session, v);
    session.run(step);
    EXPECT_EQ(session.fetch("local", "sum").item<int64_t>(), 10 + v);
    session.workspace().create_blob("tripled")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(0);
    session.run(net);
    EXPECT_EQ(session.fetch("local", "tripled").item<int64_t>(), 3 * v);
    session.workspace().create_blob("tripled")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(0);
    session.run(plan);
    EXPECT_EQ(session.fetch("local", "tripled").item<int64_t>(), 3 * v);
  }
}

TEST(Rerun, JobRunsInEveryFreshSession) {
  TaskOutput total;
  Job job([&](Job& j) {
    j.init_group([&] {
      Task([&] {
        ops::local_init([&] { ops::Const(1, {.blob_out = "step"}); });
        ops::Const(0, {.blob_out = "count"});
      });
    });
    Task([&] {
      ops::local_init([&] { ops::Const(2, {.blob_out = "step"}); });
      ops::Add({"count", BlobRef("step")}, {"count"});
    });
    epoch_limiter(j, 3);
    j.exit_group([&] { Task([&] { total = final_output(BlobRef("count")); }); });
  });
  for (int i = 0; i < 2; ++i) {
    LocalSession session;
    EXPECT_EQ(JobRunner(job).train(session), 3);
    EXPECT_EQ(total.fetch<int64_t>(), 6) << "session " << i;
  }
}

}  // namespace
}  // namespace moka
