// LocalSession: per-node workspaces (decision 1), GLOBAL vs PRIVATE, LOCAL_SETUP, report steps, errors, serialisation.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;

TEST(LocalSession, NodesHaveTheirOwnWorkspacesAndOutputsComeFromTheirNode) {
  TaskOutput on_local, on_n2;
  TaskGroup tg([&] {
    Task({.name = "a"}, [&] { on_local = final_output(ops::Const(1, {.blob_out = "x"})); });
    Node("n2", [&] { Task({.name = "b"}, [&] { on_n2 = final_output(ops::Const(2, {.blob_out = "x"})); }); });
  });
  LocalSession session;
  session.run(tg);
  EXPECT_EQ(on_local.fetch<int64_t>(), 1);
  EXPECT_EQ(on_n2.fetch<int64_t>(), 2);
  // Outputs are pre-created in the node workspace, so the PRIVATE tasks wrote them in place.
  EXPECT_EQ(session.fetch("local", "x").item<int64_t>(), 1);
  EXPECT_EQ(session.fetch("n2", "x").item<int64_t>(), 2);
}

TEST(LocalSession, SharedWorkspaceOptionMergesNodes) {
  TaskGroup tg([&] {
    Task({.name = "a", .workspace_type = WorkspaceType::Global}, [&] { ops::Const(1, {.blob_out = "from_local"}); });
    Node("n2", [&] {
      Task({.name = "b", .workspace_type = WorkspaceType::Global}, [&] { ops::Const(2, {.blob_out = "from_n2"}); });
    });
  });
  LocalSession session({.shared_workspace = true});
  session.run(tg);
  EXPECT_TRUE(session.workspace("local").has_blob("from_n2"));
  EXPECT_EQ(&session.workspace("local"), &session.workspace("n2"));
}

TEST(LocalSession, GlobalTaskBlobsPersistPrivateOnesVanish) {
  LocalSession session;
  // A bare Task runs GLOBAL: its blobs stay in the node workspace across runs.
  Task counter_task([&] { ops::Const(5, {.blob_out = "kept"}); });
  session.run(counter_task);
  EXPECT_TRUE(session.workspace().has_blob("kept"));
  // A TaskGroup() task is PRIVATE: new blobs vanish, existing ones are written in place.
  TaskGroup tg([&] {
    Task([&] {
      BlobRef tmp = ops::Const(7, {.blob_out = "temporary"});
      ops::Add({tmp, BlobRef("kept")}, {"kept"});
    });
  });
  session.run(tg);
  EXPECT_FALSE(session.workspace().has_blob("temporary"));
  EXPECT_EQ(session.fetch("local", "kept").item<int64_t>(), 12);
}

TEST(LocalSession, CompilesOncePerSessionAndRerunsAccumulate) {
  LocalSession session;
  session.run(Task([&] { ops::CreateCounter({}, {"runs"}); }));
  TaskOutput count;
  Task bump({.workspace_type = WorkspaceType::Global}, [&] {
    ops::CountUp({BlobRef("runs")});
    count = final_output(ops::RetrieveCount({BlobRef("runs")}));
  });
  TaskGroup tg(WorkspaceType::Global);
  tg.add(bump);
  const TaskGroupDef& first = session.compile(tg);
  EXPECT_EQ(&first, &session.compile(tg));
  session.run(tg);
  session.run(tg);
  session.run(tg);
  EXPECT_EQ(count.fetch<int64_t>(), 3);
}

TEST(LocalSession, DropsWhatItCompiledForRunnablesNobodyHolds) {
  // A job makes a new checkpoint TaskGroup every epoch. The session must not keep each one's plan
  // and nets for ever; what is still held stays compiled, and outputs of dropped ones stay readable.
  LocalSession session;
  TaskGroup held(WorkspaceType::Global, [&] { Task([&] { ops::Const(1, {.blob_out = "held"}); }); });
  session.run(held);
  const TaskGroupDef* held_def = &session.compile(held);
  const std::size_t nets_before = session.workspace().nets().size();
  TaskOutput last;
  for (int i = 0; i < 50; ++i) {
    TaskGroup per_epoch(WorkspaceType::Global,
                        [&] { Task([&] { last = final_output(ops::Const(int64_t{i}, {.blob_out = "per_epoch"})); }); });
    session.run(per_epoch);
  }
  EXPECT_EQ(session.num_compiled(), 2u) << "the held group and the last one run";
  EXPECT_LE(session.workspace().nets().size(), nets_before + 2) << "dropped groups' nets are unregistered";
  EXPECT_EQ(last.fetch<int64_t>(), 49);
  EXPECT_EQ(session.fetch("local", "per_epoch").item<int64_t>(), 49);

  session.run(held);
  EXPECT_EQ(session.num_compiled(), 1u);
  EXPECT_EQ(&session.compile(held), held_def) << "a group still held is neither dropped nor recompiled";
  EXPECT_EQ(session.fetch("local", "held").item<int64_t>(), 1);

  // A dropped Net's registered net goes; one registered under its name by someone else stays.
  for (const bool replaced : {false, true}) {
    std::optional<Net> mine(Net(replaced ? "replaced" : "mine"));
    mine->op("ConstantFill", {}, {"from_mine"}, {{"shape", std::vector<int64_t>{}}, {"value", 3.0}});
    session.run(*mine);
    NetDef registered;
    for (const auto& name : session.workspace().nets())
      if (name.find(mine->name()) != std::string::npos) registered.name = name;
    ASSERT_FALSE(registered.name.empty()) << "the net's plan registered no net named after it";
    if (replaced) create_net(session.workspace(), registered, /*overwrite=*/true);
    mine.reset();
    session.run(held);  // the lookup drops the net's entry
    EXPECT_EQ(session.num_compiled(), 1u);
    EXPECT_EQ(session.workspace().get_net(registered.name) != nullptr, replaced) << registered.name;
  }
}

TEST(LocalSession, LocalSetupRunsOncePerNodePerRun) {
  TaskOutput inits;
  TaskGroup tg([&] {
    for (int i = 0; i < 3; ++i) {
      Task({.name = "worker"}, [&] {
        ops::local_init([&] { ops::CreateCounter({}, {"local_inits"}); });
        ops::Const(0);
      });
    }
    Task({.name = "reader", .workspace_type = WorkspaceType::Private}, [&] {});
  });
  LocalSession session;
  session.run(tg);
  // One CreateCounter for the node (attributes are collected once per group), in the node workspace.
  ASSERT_TRUE(session.workspace().has_blob("local_inits"));
  EXPECT_EQ(session.compile(tg).nodes.size(), 1u);
  EXPECT_NE(to_json(session.compile(tg)).find("local:init"), std::string::npos);
}

TEST(LocalSession, ReportStepRunsAfterAllTasksOfItsNode) {
  static std::atomic<int> tasks_done{0};
  static std::atomic<bool> saw_all_done{false};
  tasks_done = 0;
  saw_all_done = false;
  TaskGroup tg([&] {
    for (int i = 0; i < 3; ++i) {
      Task({.name = "t"}, [&] {
        ops::call(CallableFn([](std::span<Blob* const>, std::span<Blob* const>) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          tasks_done++;
        }));
      });
    }
    NetBuilder report_nb([&] {
      ops::call(CallableFn([](std::span<Blob* const>, std::span<Blob* const>) {
        if (tasks_done == 3) saw_all_done = true;
      }));
    });
    TaskGroup::current()->report_step(to_execution_step(report_nb), std::nullopt, 100000);
  });
  LocalSession().run(tg);
  EXPECT_TRUE(saw_all_done.load());
}

TEST(LocalSession, LocalReporterRunsOnItsNodeAfterTheTasks) {
  static std::atomic<int> done{0};
  static std::atomic<bool> reported_after{false};
  done = 0;
  reported_after = false;
  TaskGroup tg([&] {
    Node("n2", [&] {
      Task([&] {
        ops::call(CallableFn([](std::span<Blob* const>, std::span<Blob* const>) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          done = 1;
        }));
        ops::local_reporter(100000, [&] {
          ops::call(CallableFn([](std::span<Blob* const>, std::span<Blob* const>) {
            if (done == 1) reported_after = true;
          }));
        });
      });
    });
  });
  LocalSession().run(tg);
  EXPECT_TRUE(reported_after.load());
  EXPECT_THROW(ops::local_reporter(10, [] {}), InvalidInput);  // no active TaskGroup
}

TEST(LocalSession, TaskErrorsNameTheirPathAndCancelSiblings) {
  TaskGroup tg([&] {
    Task({.name = "looping"}, [&] { ops::loop(int64_t{1} << 40, [&] { ops::Const(0); }); });  // would run "forever"
    Task({.name = "failing"}, [&] { ops::Div({ops::Const(1), ops::Const(0)}); });
  });
  LocalSession session;
  try {
    session.run(tg);
    FAIL();
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("node \"local\" > ", 0), 0u) << what;
    EXPECT_NE(what.find("local/failing"), std::string::npos) << what;
    EXPECT_NE(what.find("division by zero"), std::string::npos) << what;
  }
}

TEST(LocalSession, CompiledTaskGroupRoundTripsThroughJson) {
  TaskOutput total;
  TaskGroup tg([&] {
    Task({.workspace_type = WorkspaceType::Global}, [&] {
      BlobRef t = ops::Const(0, {.blob_out = "total"});
      ops::loop(4, [&] { ops::Add({t, ops::Const(10)}, {t}); });
      total = final_output(t);
    });
    Node("n2", [&] { Task({.workspace_type = WorkspaceType::Global}, [&] { ops::Const(1, {.blob_out = "total"}); }); });
  });
  LocalSession session;
  const TaskGroupDef def = session.compile(tg);
  const TaskGroupDef reloaded = task_group_from_json(to_json(def));
  EXPECT_EQ(reloaded, def);
  NodeWorkspaces nodes;
  run_task_group(reloaded, nodes);
  EXPECT_EQ(nodes.node("local").blob("total").get<Tensor>().item<int64_t>(), 40);
  EXPECT_EQ(nodes.node("n2").blob("total").get<Tensor>().item<int64_t>(), 1);
  session.run(tg);
  EXPECT_EQ(total.fetch<int64_t>(), 40);
}

TEST(LocalSession, CallablesRefuseToSerialise) {
  TaskGroup tg([&] { Task([&] { ops::call(CallableFn([](std::span<Blob* const>, std::span<Blob* const>) {})); }); });
  LocalSession session;
  EXPECT_THROW((void)to_json(session.compile(tg)), InvalidInput);
}

TEST(LocalSession, MisuseIsAnError) {
  std::optional<Task> inner;
  TaskGroup tg([&] { inner = Task([&] { ops::Const(1); }); });
  LocalSession session;
  session.run(tg);
  EXPECT_THROW(tg.add(Task()), InvalidInput);  // "Cannot add Task to an already used TaskGroup."
  try {
    inner->add_output(TaskOutput(BlobRef("late")));
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_STREQ(e.what(), "Cannot modify task since it is already been used.");
  }
  Session& as_session = session;  // usable through the Session interface
  as_session.close();
  EXPECT_TRUE(as_session.is_closed());
  EXPECT_THROW(as_session.run(tg), InvalidInput);
  EXPECT_THROW(ops::Const(1), InvalidInput);  // no active NetBuilder
  TaskGroup typed(WorkspaceType::Global);
  EXPECT_THROW(typed.add(Task({.workspace_type = WorkspaceType::Private})), InvalidInput);
}

TEST(LocalSession, TaskNamesAreUniqueWithinTheirGroup) {
  TaskGroup tg([&] {
    Task t1;
    Task t2;
    Task t3({.name = "x"});
    EXPECT_EQ(t1.name(), "local/task");
    EXPECT_EQ(t2.name(), "local/task:1");
    EXPECT_EQ(t3.name(), "local/x");
  });
  EXPECT_EQ(tg.num_registered_tasks(), 3u);
  EXPECT_EQ(tg.used_nodes(), (std::vector<std::string>{"local"}));
}

}  // namespace
}  // namespace moka
