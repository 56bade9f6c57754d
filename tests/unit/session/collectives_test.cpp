// Collective operators under LocalSession (nodes in one process): every dtype and reduction, the errors of
// mismatched calls, an error on one node while the others wait in Allreduce, and where they cannot run.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "moka/moka.h"
#include "support/collective_groups.h"

namespace moka {
namespace {

namespace ops = moka::ops;

template <class E, class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Collectives, EveryDtypeAndReductionAcrossOneToFiveNodes) {
  for (int nodes = 1; nodes <= 5; ++nodes) {
    SCOPED_TRACE(nodes);
    LocalSession session;
    testing::expect_same_tensors(testing::run_every_collective(session, nodes),
                                 testing::expected_every_collective(nodes));
  }
}

TEST(Collectives, RunTwiceInOneSessionGivesTheSameAnswer) {
  LocalSession session;
  const auto first = testing::run_every_collective(session, 3);
  const auto second = testing::run_every_collective(session, 3);
  testing::expect_same_tensors(second, first);
}

// A TaskGroup of `nodes` nodes; node i runs body(i) after making the common world "cw".
template <class Body>
TaskGroup group_of(int nodes, Body body) {
  return TaskGroup([&] {
    for (int i = 0; i < nodes; ++i)
      Node(testing::collective_node(i), [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          body(i, cw);
        });
      });
  });
}

TEST(Collectives, MismatchedShapesAreOneClearError) {
  LocalSession session;
  TaskGroup tg = group_of(3, [](int i, const BlobRef& cw) {
    ops::op("Allreduce", {cw, ops::Const(std::vector<double>(static_cast<std::size_t>(i == 2 ? 2 : 3), 1.0))},
            {BlobRef("y")});
  });
  const std::string what = error_of<InvalidInput>([&] { session.run(tg); });
  EXPECT_TRUE(contains(what, "every node must give the same dtype and shape")) << what;
  EXPECT_TRUE(contains(what, "node \"n2\" gives float64[2]")) << what;
}

TEST(Collectives, MismatchedDtypesAreOneClearError) {
  LocalSession session;
  TaskGroup tg = group_of(2, [](int i, const BlobRef& cw) {
    ops::op("Broadcast", {cw, ops::Const(1, {.dtype = i == 0 ? DType::Int32 : DType::Int64})}, {BlobRef("y")});
  });
  const std::string what = error_of<InvalidInput>([&] { session.run(tg); });
  EXPECT_TRUE(contains(what, "Broadcast on common world \"cw\"")) << what;
  EXPECT_TRUE(contains(what, "int32[]")) << what;
  EXPECT_TRUE(contains(what, "int64[]")) << what;
}

TEST(Collectives, DifferentCollectivesOnOneWorldAreAnError) {
  LocalSession session;
  TaskGroup tg = group_of(2, [](int i, const BlobRef& cw) {
    if (i == 0)
      ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")}, {{"reduction", std::string("max")}});
    else
      ops::op("Broadcast", {cw, ops::Const(1.0)}, {BlobRef("y")});
  });
  const std::string what = error_of<InvalidInput>([&] { session.run(tg); });
  EXPECT_TRUE(contains(what, "calls Allreduce (max)")) << what;
  EXPECT_TRUE(contains(what, "calls Broadcast (root 0)")) << what;
}

// A node that finishes without a collective the others make: whether they are already waiting in it
// (n1 after a loop) or get there after it finished (n2, slower still), the run fails with an error
// naming it, instead of waiting for ever. And a node that makes one call more than the rest fails too.
TEST(Collectives, ANodeThatFinishesWithoutACallIsAnErrorNotAHang) {
  LocalSession session;
  TaskGroup skipped = group_of(3, [](int i, const BlobRef& cw) {
    if (i == 2) {
      BlobRef total = ops::Const(int64_t{0}, {.blob_out = "total"});
      ops::loop(20000, [&] { ops::Add({total, ops::Const(int64_t{1})}, {total}); });
    }
    if (i != 0) ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
  });
  std::string what = error_of<InvalidInput>([&] { session.run(skipped); });
  EXPECT_TRUE(contains(what, "but node \"n0\" finished its share of the run without making it")) << what;
  EXPECT_TRUE(contains(what, "calls Allreduce (sum)")) << what;
  TaskGroup extra = group_of(2, [](int i, const BlobRef& cw) {
    ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
    if (i == 1) ops::op("Barrier", {cw}, std::vector<BlobRef>{});
  });
  what = error_of<InvalidInput>([&] { session.run(extra); });
  EXPECT_TRUE(contains(what, "node \"n1\" calls Barrier, but node \"n0\" finished")) << what;
  // The session goes on.
  TaskOutput out;
  TaskGroup ok = group_of(2, [&](int i, const BlobRef& cw) {
    const BlobRef y = ops::op("Allreduce", {cw, ops::Const(2.0)}, {BlobRef("y")})[0];
    if (i == 0) out = final_output(y);
  });
  session.run(ok);
  EXPECT_EQ(out.fetch<double>(), 4.0);
}

// A node that fails makes another finish early (a reader whose failure ends one trainer's data), and a third then
// meets the finished node in a collective. The run reports the failure, not the PeerFinished it caused, even when
// the PeerFinished came first: n0 finishes after 50 ms, so n1's PeerFinished comes then; n2 fails after 300 ms (in a
// sleep that ignores the cancel that n1's error brings).
TEST(Collectives, AFailureOutranksTheFinishedPeerItCaused) {
  const auto sleeps_then = [](int ms, bool fail) {
    return register_callable([ms, fail] {
      return [ms, fail](std::span<Blob* const>, std::span<Blob* const>) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        if (fail) throw RuntimeError("the reader failed");
      };
    });
  };
  const int64_t finishes = sleeps_then(50, false), fails_later = sleeps_then(300, true);
  LocalSession session;
  TaskGroup tg = group_of(3, [&](int i, const BlobRef& cw) {
    if (i == 0) ops::op("Callable", {}, std::vector<BlobRef>{}, {{"token", finishes}});
    if (i == 1) ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
    if (i == 2) ops::op("Callable", {}, std::vector<BlobRef>{}, {{"token", fails_later}});
  });
  const std::string what = error_of<RuntimeError>([&] { session.run(tg); });
  EXPECT_TRUE(contains(what, "the reader failed")) << what;
  // Alone, the PeerFinished is the run's error (an InvalidInput).
  TaskGroup alone = group_of(2, [](int i, const BlobRef& cw) {
    if (i == 1) ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
  });
  EXPECT_TRUE(contains(error_of<PeerFinished>([&] { session.run(alone); }), "finished its share")) << what;
}

TEST(Collectives, StringsAndBoolsAreTypeErrorsWhereTheyDoNotFit) {
  LocalSession session;
  TaskGroup strings = group_of(2, [](int, const BlobRef& cw) {
    ops::op("Allreduce", {cw, ops::Const(std::string("a"))}, {BlobRef("y")});
  });
  EXPECT_TRUE(contains(error_of<TypeError>([&] { session.run(strings); }), "Allreduce does not take")) << "";
  TaskGroup bools = group_of(2, [](int, const BlobRef& cw) {
    ops::op("Allreduce", {cw, ops::Const(true)}, {BlobRef("y")});
  });
  EXPECT_TRUE(contains(error_of<TypeError>([&] { session.run(bools); }), "gives bool[]"));
  // Bools broadcast.
  TaskOutput out;
  TaskGroup bcast = group_of(2, [&](int i, const BlobRef& cw) {
    const BlobRef y = ops::op("Broadcast", {cw, ops::Const(i == 1)}, {BlobRef("y")}, {{"root", int64_t{1}}})[0];
    if (i == 0) out = final_output(y);
  });
  session.run(bcast);
  EXPECT_TRUE(out.fetch<bool>());
}

TEST(Collectives, AnErrorOnOneNodeWakesTheNodesWaitingInAllreduce) {
  LocalSession session;
  TaskGroup tg = group_of(4, [](int i, const BlobRef& cw) {
    if (i == 0) {  // fails at run time: it is not one of the nodes it names
      ops::op("CreateCommonWorld", {}, {BlobRef("bad")},
              {{"nodes", std::vector<std::string>{"n1", "n2"}}, {"name", std::string("bad")}});
    }
    ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string what = error_of<InvalidInput>([&] { session.run(tg); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(contains(what, "node \"n0\" is not one of its nodes [n1, n2]")) << what;
  EXPECT_TRUE(contains(what, "node \"n0\"")) << what;
  // The session is still usable, with a new world.
  TaskOutput out;
  TaskGroup ok = group_of(2, [&](int i, const BlobRef& cw) {
    const BlobRef y = ops::op("Allreduce", {cw, ops::Const(2.0)}, {BlobRef("y")})[0];
    if (i == 1) out = final_output(y);
  });
  session.run(ok);
  EXPECT_EQ(out.fetch<double>(), 4.0);
}

TEST(Collectives, ACancelledRunWakesTheNodesWaitingInACollective) {
  auto cancel = std::make_shared<CancelToken>();
  LocalSessionOptions options;
  options.run.cancel = cancel;
  LocalSession session(options);
  TaskGroup waits = group_of(3, [](int i, const BlobRef& cw) {
    if (i != 2) ops::op("Barrier", {cw}, std::vector<BlobRef>{});  // n2 never comes
  });
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel->cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(session.run(waits), Error);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Collectives, BadArgumentsAndPlacesAreClearErrors) {
  LocalSession session;
  TaskGroup root = group_of(2, [](int, const BlobRef& cw) {
    ops::op("Broadcast", {cw, ops::Const(1.0)}, {BlobRef("y")}, {{"root", int64_t{2}}});
  });
  EXPECT_TRUE(contains(error_of<InvalidInput>([&] { session.run(root); }), "root 2 is not a node"));
  TaskGroup size = TaskGroup([] {
    Node("a", [] { Task([] { ops::op("CreateCommonWorld", {}, {BlobRef("cw")}, {{"size", int64_t{3}}}); }); });
  });
  EXPECT_TRUE(contains(error_of<InvalidInput>([&] { session.run(size); }), "\"size\" = 3, but the world has 1"));
  TaskGroup reduction = group_of(1, [](int, const BlobRef& cw) {
    ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")}, {{"reduction", std::string("mean")}});
  });
  EXPECT_TRUE(contains(error_of<InvalidInput>([&] { session.run(reduction); }), "must be sum, max, min or product"));
  TaskGroup not_world =
      TaskGroup([] { Node("a", [] { Task([] { ops::op("Barrier", {ops::Const(1.0)}, std::vector<BlobRef>{}); }); }); });
  EXPECT_TRUE(contains(error_of<TypeError>([&] { session.run(not_world); }), "input"));

  LocalSession shared({.shared_workspace = true});
  TaskGroup any = group_of(1, [](int, const BlobRef&) {});
  EXPECT_TRUE(contains(error_of<InvalidInput>([&] { shared.run(any); }), "no node's workspace of a session"));
  Workspace plain;
  EXPECT_TRUE(
      contains(error_of<InvalidInput>([&] { run_operator_once(plain, make_op("CreateCommonWorld", {}, {"cw"})); }),
               "no node's workspace"));
}

}  // namespace
}  // namespace moka
