// Queues across ranks (docs/queues.md §5): a reader node on rank 0 feeds trainer nodes on the other ranks
// through a queue on rank 0, with LocalSession's totals; errors on either side stop every rank.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "support/cross_node_queue.h"
#include "support/test_ops_impl.h"

namespace moka {
namespace {

using testing::CrossNodeFeed;
using testing::CrossNodeShape;

// The reader on rank 0, trainer i on rank 1 + i % (size - 1) (rank 0 too with one rank).
MpiSessionOptions spread(int trainers) {
  MpiSession probe;
  MpiSessionOptions o;
  o.node_ranks["reader"] = 0;
  for (int i = 0; i < trainers; ++i)
    o.node_ranks[testing::trainer_node(i)] = probe.size() == 1 ? 0 : 1 + i % (probe.size() - 1);
  return o;
}

TEST(MpiQueue, AReaderRankFeedsTrainerRanksEveryRecordOnce) {
  // Batches of 4096 int64 (32 KiB) cross in data messages of their own, the others inside the record's.
  for (int64_t batch : {1, 16, 4096}) {
    const CrossNodeShape shape{
        .trainers = 3, .records = batch == 4096 ? 16 * 4096 : 960, .batch = batch, .capacity = 4};
    MpiSession session(spread(shape.trainers));
    CrossNodeFeed feed(shape);
    feed.set_up(session);
    feed.feed(session);
    EXPECT_EQ(feed.summed(session), feed.expected(1)) << "batch " << batch;
    feed.feed(session);  // a second run: links of the first are gone, new ones made
    EXPECT_EQ(feed.summed(session), feed.expected(2)) << "batch " << batch;
  }
}

TEST(MpiQueue, TheSameProgramGivesLocalSessionsTotals) {
  const CrossNodeShape shape{.trainers = 2, .records = 400, .batch = 8, .capacity = 2};
  LocalSession local;
  CrossNodeFeed here(shape);
  here.set_up(local);
  here.feed(local);
  MpiSession session(spread(shape.trainers));
  CrossNodeFeed there(shape);
  there.set_up(session);
  there.feed(session);
  EXPECT_EQ(there.summed(session), here.summed(local));
}

// Trainers write, the reader node's queue collects: writer links count each trainer node down once, so the
// queue closes after the last writer of every rank and the draining pipe ends.
TEST(MpiQueue, WriterRanksCloseTheQueueOnlyAfterTheLastOfThem) {
  MpiSession session(spread(3));
  const int64_t want = testing::gather_into_reader(session, 3, 50, 2);
  EXPECT_EQ(session.fetch("reader", "sum").values<int64_t>()[0], want);
}

// A sink node that starts reading late (it sleeps in its task's init), a writer node on another rank (with
// several ranks) that counts the records it produced, and a snapshot of that count while the sink sleeps.
struct LateSink {
  TaskGroup group{WorkspaceType::Global};
  std::shared_ptr<Queue> queue;
};
LateSink late_sink(const schema::Field& data, int64_t sink_sleep_ms, int64_t sink_limit, double timeout_secs) {
  LateSink out;
  out.group = TaskGroup(WorkspaceType::Global, [&] {
    const schema::Struct record({{"val", schema::Scalar(Tensor::vector<int64_t>({0}))}});
    out.queue = Queue::make(2, {.schema = record.clone_schema(), .name = "late", .timeout_secs = timeout_secs});
    Node("reader", [&] {
      std::shared_ptr<Reader> from = out.queue->reader();
      if (sink_limit > 0) from = std::make_shared<ReaderWithLimit>(from, sink_limit);
      pipe(from, {.processor = Processor(
                      [sink_sleep_ms](const schema::Field& rec) {
                        ops::task_init([&] { ops::op("SleepMs", {}, 0, {{"ms", sink_sleep_ms}}); });
                        ops::Add({BlobRef("sum"), rec["val"]()}, {BlobRef("sum")});
                      },
                      "late_sum")});
    });
    Node(testing::trainer_node(0), [&] {
      pipe(Dataset(data, "src").reader(), {.output = out.queue,
                                           .processor = Processor(
                                               [](const schema::Field& rec) {
                                                 ops::op("CountUp", {BlobRef("produced")},
                                                         {BlobRef("produced_before")});
                                                 return rec;
                                               },
                                               "count")});
      Task([] {
        ops::op("SleepMs", {}, 0, {{"ms", 250}});
        ops::op("RetrieveCount", {BlobRef("produced")}, {BlobRef("snapshot")});
      });
    });
  });
  return out;
}

// The sink's sum, the writer's counter and its `records` records (all 1), made before the run that streams them.
schema::Field set_up_late_sink(Session& session, int64_t records) {
  testing::register_test_ops();
  schema::Field data;
  TaskGroup init(WorkspaceType::Global, [&] {
    Node("reader", [] { Task([] { ops::Const(std::vector<int64_t>{0}, {.blob_out = "sum"}); }); });
    Node(testing::trainer_node(0), [&] {
      Task([&] {
        ops::op("CreateCounter", {}, {BlobRef("produced")});
        data = schema::ConstRecord(
            schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(std::vector<int64_t>(records, 1)))}}));
      });
    });
  });
  session.run(init);
  return data;
}

// Backpressure: while the sink sleeps, the writer is held back by the full queue and the link's bounded
// window (capacity 2 + a window of 2 pending at the owner + 2 in the link's queue + the record being written
// + the one in the processor): never more, whatever the number of records waiting.
TEST(MpiQueue, AFullRemoteQueueHoldsItsWriterBack) {
  MpiSession session(spread(1));
  LateSink sink = late_sink(set_up_late_sink(session, 200), 600, 0, 0);
  session.run(sink.group);
  const int64_t produced = session.fetch(testing::trainer_node(0), "snapshot").values<int64_t>()[0];
  EXPECT_GE(produced, 2);
  EXPECT_LE(produced, 2 + 2 + 2 + 1 + 1);
  EXPECT_EQ(session.fetch("reader", "sum").values<int64_t>()[0], 200);
}

// A reader that stops early closes the queue: the writer on the other rank, blocked on the full link,
// stops too (its writes fail at once), and the run ends normally.
TEST(MpiQueue, AReaderThatStopsClosesTheQueueAndFreesItsRemoteWriter) {
  MpiSession session(spread(1));
  LateSink sink = late_sink(set_up_late_sink(session, 100000), 0, 5, 0);
  const auto start = std::chrono::steady_clock::now();
  session.run(sink.group);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(session.fetch("reader", "sum").values<int64_t>()[0], 5);
  EXPECT_LT(session.fetch(testing::trainer_node(0), "snapshot").values<int64_t>()[0], 100000);
}

// The queue's timeout holds across ranks: a writer whose link stays full fails with the operators' message.
TEST(MpiQueue, AWriteThatWaitsPastItsTimeoutFailsTheRunOnEveryRank) {
  MpiSession session(spread(1));
  LateSink sink = late_sink(set_up_late_sink(session, 200), 1500, 0, 0.3);
  const auto start = std::chrono::steady_clock::now();
  try {
    session.run(sink.group);
    ADD_FAILURE() << "expected the write to time out";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(MpiQueue, AFailingTrainerStopsTheReaderRankBlockedOnAFullQueue) {
  MpiSession session(spread(1));
  schema::Field data;
  TaskGroup init(WorkspaceType::Global, [&] {
    Node("reader", [&] {
      Task([&] {
        data = schema::ConstRecord(
            schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(std::vector<int64_t>(100000, 1)))}}));
      });
    });
  });
  session.run(init);
  TaskGroup group(WorkspaceType::Global, [&] {
    auto queue = Queue::make(1, {.name = "stuck"});
    Node("reader", [&] { pipe(Dataset(data, "src").reader(), {.output = queue, .name = "send"}); });
    Node(testing::trainer_node(0), [&] {
      pipe(queue, {.processor = Processor(
                       [](const schema::Field& rec) {
                         // Strings cannot be added: the first batch fails.
                         ops::Add({rec["val"](), ops::Const(std::vector<std::string>{"x"})}, {rec["val"]()});
                       },
                       "fails")});
    });
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    session.run(group);
    ADD_FAILURE() << "expected the trainer's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Add): Add: inputs"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Run only by the ctests Mpi.AQueue{Reader,Writer}RankKilledEndsEveryRank (MOKA_MPI_TEST_KILL_QUEUE_RANK=r,
// two ranks): rank r dies with SIGKILL in the middle of a stream through a queue shared by the two ranks —
// rank 0, the queue's owner and reader, asleep while rank 1's writer is blocked on the full link; or rank 1,
// the writer, while rank 0 drains what it sends. mpirun must end the other rank, non-zero, within 10 seconds.
TEST(MpiFailure, AQueueRankKilledMidStreamEndsEveryRank) {
  const char* victim_env = std::getenv("MOKA_MPI_TEST_KILL_QUEUE_RANK");
  if (victim_env == nullptr) GTEST_SKIP() << "only under the ctests that expect the job to die";
  const int victim = std::atoi(victim_env);
  MpiSession session(spread(1));
  if (session.size() != 2) GTEST_SKIP() << "needs two ranks";
  // Killing the reader: it sleeps for a minute, the writer fills the link and blocks. Killing the writer: the
  // reader drains a million records as they come.
  LateSink sink = late_sink(set_up_late_sink(session, victim == 0 ? 1000 : 1000000), victim == 0 ? 60000 : 0, 0, 0);
  std::thread killer;
  if (session.rank() == victim)
    killer = std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      std::raise(SIGKILL);
    });
  session.run(sink.group);
  ADD_FAILURE() << "the run returned although rank " << victim << " died";
  if (killer.joinable()) killer.join();
}

}  // namespace
}  // namespace moka
