// Queues shared by nodes under LocalSession (docs/queues.md §5): a reader node feeds trainer nodes through
// a queue on the reader node; every record reaches exactly one trainer, every run.
#include <gtest/gtest.h>

#include "moka/moka.h"
#include "support/cross_node_queue.h"

namespace moka {
namespace {

using testing::CrossNodeFeed;
using testing::CrossNodeShape;

TEST(CrossNodeQueue, EveryRecordReachesOneTrainerOnce) {
  for (int trainers : {1, 2, 3}) {
    LocalSession session;
    CrossNodeFeed feed({.trainers = trainers, .records = 600, .batch = 6, .capacity = 3});
    feed.set_up(session);
    feed.feed(session);
    EXPECT_EQ(feed.summed(session), feed.expected(1)) << trainers << " trainers";
    feed.feed(session);  // a second run: a fresh queue, connected again
    EXPECT_EQ(feed.summed(session), feed.expected(2)) << trainers << " trainers";
  }
}

// Writer nodes count down once each on the owner's counter: the queue closes after the last writer of all.
TEST(CrossNodeQueue, WriterNodesCloseTheQueueAfterTheLastOfThem) {
  for (int32_t pipes : {1, 2}) {
    LocalSession session;
    const int64_t want = testing::gather_into_reader(session, 3, 40, pipes);
    EXPECT_EQ(session.fetch("reader", "sum").values<int64_t>()[0], want) << pipes << " pipes per node";
  }
}

// Where every node shares one workspace (Caffe2's LocalSession), the nodes share the queue blob itself.
TEST(CrossNodeQueue, NodesSharingOneWorkspaceShareTheQueue) {
  LocalSession session({.shared_workspace = true});
  CrossNodeFeed feed({.trainers = 2, .records = 120, .batch = 4, .capacity = 2});
  feed.set_up(session);
  feed.feed(session);
  // One workspace, one queue: every record reached one of the trainers once.
  EXPECT_EQ(feed.summed(session), feed.expected(1));
  LocalSession writers({.shared_workspace = true});
  const int64_t want = testing::gather_into_reader(writers, 3, 30, 2);
  EXPECT_EQ(writers.fetch("reader", "sum").values<int64_t>()[0], want);
}

TEST(CrossNodeQueue, TheOwnerMakesAndExportsTheQueueAndTheOthersConnect) {
  LocalSession session;
  TaskGroup group([] {
    auto queue = Queue::make(2, {.name = "q"});
    Node("a", [&] {
      Net init("init");
      Dataset ds(schema::ConstRecord(init, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>({1, 2}))}})),
                 "ds");
      pipe(ds.reader(), {.output = queue});
    });
    Node("b", [&] { pipe(queue, {.processor = Processor([](const schema::Field&) {}, "drain")}); });
  });
  const TaskGroupDef& def = session.compile(group);
  ASSERT_EQ(def.nodes.size(), 2u);
  auto count = [](const NodePlanDef& n, const std::string& type) {
    int k = 0;
    for (const auto& net : n.plan.network)
      for (const auto& op : net.op) k += op.type == type;
    return k;
  };
  EXPECT_EQ(count(def.nodes[0], "CreateBlobsQueue"), 1);
  EXPECT_EQ(count(def.nodes[0], "ExportBlobsQueue"), 1);
  EXPECT_EQ(count(def.nodes[1], "CreateBlobsQueue"), 0);
  EXPECT_EQ(count(def.nodes[1], "ConnectBlobsQueue"), 1);
}

TEST(CrossNodeQueue, ANodeThatBothReadsAndWritesAnotherNodesQueueIsRefused) {
  LocalSession session;
  TaskGroup group([] {
    auto queue = Queue::make(2, {.name = "q"});
    Net init("init");
    const schema::Field data =
        schema::ConstRecord(init, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>({1}))}}));
    Node("a", [&] { pipe(Dataset(data, "ds_a").reader(), {.output = queue}); });
    Node("b", [&] {
      pipe(Dataset(data, "ds_b").reader(), {.output = queue});
      pipe(queue, {.processor = Processor([](const schema::Field&) {}, "drain")});
    });
  });
  try {
    session.compile(group);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("both read and write"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moka
