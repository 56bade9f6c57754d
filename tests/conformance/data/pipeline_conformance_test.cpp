// Conformance: ports of session_test.py test_local_session, pipeline_test.py test_dequeue_many
// (docs/testing.md §1) and the seed's build_pipeline/build_job pipeline run as epochs.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using schema::Field;

template <class T>
std::vector<T> values_of(const Field& f) {
  auto v = f.value()->values<T>();
  return {v.begin(), v.end()};
}

// Ports session_test.py TestLocalSession.test_local_session: two processors between a dataset
// and another, through two default queues (capacity 100). moka's LocalSession gives node "local"
// its own workspace; the session's node workspace stands for Caffe2's `ws`.
TEST(Caffe2LocalSession, test_local_session) {
  Net init_net("init");
  schema::Struct src_values({{"uid", schema::Scalar(Tensor::vector<int64_t>({1, 2, 6}))},
                             {"value", schema::Scalar(Tensor::vector<double>({1.4, 1.6, 1.7}))}});
  Field src_blobs, dst_blobs;
  {
    NameScope scope("init");
    src_blobs = schema::NewRecord(init_net, src_values);
    dst_blobs = schema::InitEmptyRecord(init_net, src_values.clone_schema());
  }
  EXPECT_EQ(src_blobs["uid"]().name(), "init/uid");
  EXPECT_EQ(dst_blobs["value"]().name(), "init/value_auto_0");

  auto proc1 = [](const Field& rec) -> ProcessorOutput {
    Net net("proc1");
    Field out = name_scope("proc1", [&] { return schema::NewRecord(net, rec); });
    net.op("Add", {rec["uid"](), rec["uid"]()}, {out["uid"]()});
    out["value"].set(rec["value"](), /*unsafe=*/true);
    return {std::vector<Net>{net}, out};
  };
  auto proc2 = [](const Field& rec) -> ProcessorOutput {
    Net net("proc2");
    Field out = name_scope("proc2", [&] { return schema::NewRecord(net, rec); });
    out["uid"].set(rec["uid"](), /*unsafe=*/true);
    net.op("Sub", {rec["value"](), rec["value"]()}, {out["value"]()});
    return {std::vector<Net>{net}, out};
  };

  Dataset src_ds(src_blobs);
  Dataset dst_ds(dst_blobs);
  TaskGroup tg([&] {
    ReaderSource out1 = pipe(src_ds.reader(), {.processor = Processor(proc1, "proc1")});
    ReaderSource out2 = pipe(out1, {.processor = Processor(proc2, "proc2")});
    pipe(out2, {.output = dst_ds.writer()});
  });

  LocalSession session;
  schema::FeedRecord(src_blobs, src_values, session.workspace());
  session.run(init_net);
  session.run(tg);
  Field output = schema::FetchRecord(dst_blobs, session.workspace());
  EXPECT_EQ(values_of<int64_t>(output["uid"]), (std::vector<int64_t>{2, 4, 12}));
  EXPECT_EQ(values_of<double>(output["value"]), (std::vector<double>{0.0, 0.0, 0.0}));
}

// Ports pipeline_test.py TestPipeline.test_dequeue_many: a queue read 3 records at a time; the
// processor after it runs once per dequeue (ceil(17 / 3) = 6 times).
TEST(Caffe2Pipeline, test_dequeue_many) {
  Net init_net("init");
  constexpr int64_t N = 17;
  constexpr int64_t NUM_DEQUEUE_RECORDS = 3;
  std::vector<int64_t> uids(N);
  std::iota(uids.begin(), uids.end(), 0);
  std::vector<double> values(N);
  for (int64_t i = 0; i < N; ++i) values[i] = 0.1 * static_cast<double>(i);
  schema::Struct src_values({{"uid", schema::Scalar(Tensor::vector<int64_t>(uids))},
                             {"value", schema::Scalar(Tensor::vector<double>(values))}});
  Field src_blobs, dst_blobs;
  BlobRef counter, one;
  {
    NameScope scope("init");
    src_blobs = schema::NewRecord(init_net, src_values);
    dst_blobs = schema::InitEmptyRecord(init_net, src_values.clone_schema());
    counter = init_net.Const(0);
    one = init_net.Const(1);
  }
  auto proc1 = [](const Field& rec) {
    Field out = name_scope("proc1", [&] { return schema::NewRecord(rec); });
    ops::Add({rec["uid"](), rec["uid"]()}, {out["uid"]()});
    out["value"].set(rec["value"](), true);
    return out;
  };
  auto proc2 = [&](const Field& rec) {
    Field out = name_scope("proc2", [&] { return schema::NewRecord(rec); });
    out["uid"].set(rec["uid"](), true);
    ops::Sub({rec["value"](), rec["value"]()}, {out["value"]()});
    ops::Add({counter, one}, {counter});
    return out;
  };
  Dataset src_ds(src_blobs);
  Dataset dst_ds(dst_blobs);
  TaskGroup tg([&] {
    ReaderSource out1 = pipe(src_ds.reader(), {.output = Queue::make(11, {.num_dequeue_records = NUM_DEQUEUE_RECORDS}),
                                               .processor = Processor(proc1, "proc1")});
    ReaderSource out2 = pipe(out1, {.processor = Processor(proc2, "proc2")});
    pipe(out2, {.output = dst_ds.writer()});
  });
  LocalSession session;
  schema::FeedRecord(src_blobs, src_values, session.workspace());
  session.run(init_net);
  session.run(tg);
  EXPECT_EQ(session.fetch("local", counter.name()).item<int64_t>(), 6);
  Field output = schema::FetchRecord(dst_blobs, session.workspace());
  std::vector<int64_t> expected_uid(N);
  for (int64_t i = 0; i < N; ++i) expected_uid[i] = 2 * i;
  EXPECT_EQ(values_of<int64_t>(output["uid"]), expected_uid);
  EXPECT_EQ(values_of<double>(output["value"]), std::vector<double>(N, 0.0));
}

// The seed's build_pipeline (002_…txt): a dataset of 0..9 and a total of [100] built in an init
// task on node trainer_0 (the reader's cursor is created there, so it survives epochs); each epoch
// pipes ReaderWithLimit(num_iter=3) into inc_total, a processor that returns no record (no writer).
// After one epoch total = 100 + 0 + 1 + 2 = 103; the fourth epoch reads the last row and finds the
// data finished.
TEST(SeedPipeline, build_pipeline_epochs) {
  BlobRef total;
  std::shared_ptr<ReaderWithLimit> epoch_reader;
  TaskGroup init_group(WorkspaceType::Global);
  TaskGroup epoch_group;
  TaskOutput finished;
  Node("trainer_0", [&] {
    with_context(init_group, [&] {
      Task([&] {
        std::vector<int64_t> vals(10);
        std::iota(vals.begin(), vals.end(), 0);
        Field data = schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
        Dataset ds(data, "dataset:0");
        std::shared_ptr<Reader> full_reader = ds.reader({.init_net = ops::net()});
        total = ops::Const({100});
        epoch_reader = std::make_shared<ReaderWithLimit>(full_reader, 3);
      });
    });
    with_context(epoch_group, [&] {
      pipe(epoch_reader, {.processor = Processor(
                              [&](const Field& rec) {
                                ops::Add({total, rec["val"]()}, {total});
                              },
                              "inc_total")});
      // Job.add_stop_signal: a task whose output is the data_finished blob.
      finished = Task({.outputs = {TaskOutput(epoch_reader->data_finished())}}).outputs().front();
    });
  });
  LocalSession session;
  session.run(init_group);
  session.run(epoch_group);
  EXPECT_EQ(session.fetch("trainer_0", total.name()).values<int64_t>()[0], 103);
  EXPECT_FALSE(finished.fetch<bool>());
  const int64_t expected[] = {115, 136, 145};
  for (int epoch = 0; epoch < 3; ++epoch) {
    session.run(epoch_group);
    EXPECT_EQ(session.fetch("trainer_0", total.name()).values<int64_t>()[0], expected[epoch]) << "epoch " << epoch + 2;
    EXPECT_EQ(finished.fetch<bool>(), epoch == 2) << "epoch " << epoch + 2;
  }
}

}  // namespace
}  // namespace moka
