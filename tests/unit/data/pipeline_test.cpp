// Unit tests: pipe() and processors — the Task it builds, build-time errors, static threads,
// NetProcessor, ops-syntax processors (stop_if, no record, should_stop), a processor that throws
// mid-stream in two and in three stages (the run fails, every queue is closed, nothing stays blocked),
// and a reader over a dataset whose blobs were never created (a run-time error, no hang).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>

#include "moka/moka.h"
#include "moka/operators/blobs_queue.h"
#include "support/invalid_input.h"
#include "support/pipe_datasets.h"
#include "support/run_expect_error.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using moka::testing::invalid_input;
using moka::testing::make_datasets;
using moka::testing::run_expect_error;
using moka::testing::sorted_vals;
using schema::Field;

std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::multiset<std::string> all_op_types(const TaskGroupDef& def) {
  std::multiset<std::string> out;
  for (const auto& node : def.nodes)
    for (const auto& net : node.plan.network)
      for (const auto& op : net.op) out.insert(op.type);
  return out;
}

TEST(Pipe, BuildTimeErrors) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 3, "pe");
  TaskGroup tg;
  with_context(tg, [&, src = src, dst = dst] {
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.num_threads = 2, .num_runtime_threads = 2}); }),
              "Only one of num_threads or num_runtime_threads must be set.");
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.output = dst.writer(), .capacity = 5}); }),
              "capacity would not be used.");
    EXPECT_NE(invalid_input([&] { pipe(src.reader(), {.capacity = 0}); }).find("capacity must be > 0"),
              std::string::npos);
    EXPECT_NE(invalid_input([&] { pipe(src.reader(), {.num_threads = -1}); }).find("must be >= 0"), std::string::npos);
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.num_runtime_threads = -1}); }),
              "pipe: num_threads (1) and num_runtime_threads (-1) must be >= 0");
    EXPECT_NE(
        invalid_input([&] { pipe_and_output(src.reader(), {.num_runtime_threads = -2}, {}); }).find("must be > 0"),
        std::string::npos);
    EXPECT_EQ(invalid_input([&] { pipe(ReaderSource(), {}); }), "in must be a reader, queue or stream.");
    EXPECT_NE(invalid_input([&] {
                pipe(src.reader(), {.output = dst.writer(), .num_threads = 0});
              }).find("output must not be given"),
              std::string::npos);
    EXPECT_NE(invalid_input([&] {
                pipe(src.reader(), {.capacity = 5, .num_runtime_threads = 0});
              }).find("so capacity would not be used."),
              std::string::npos);
    EXPECT_NE(invalid_input([&] { pipe_and_output(src.reader(), {.num_threads = 0}, {}); }).find("must be > 0"),
              std::string::npos);
    // A writer whose fields differ from the record's.
    Dataset other(schema::Struct({{"other", schema::Scalar(DType::Int64)}}), "pe_other");
    Net oinit("pe_other_init");
    other.init_empty(oinit);
    EXPECT_NE(invalid_input([&] { pipe(src.reader(), {.output = other.writer()}); }).find("differ from the dataset's"),
              std::string::npos);
    // A reader over an uninitialised dataset.
    Dataset uninit(schema::Struct({{"val", schema::Scalar(DType::Int64)}}), "pe_uninit");
    EXPECT_NE(invalid_input([&] { pipe(uninit, {}); }).find("Dataset not initialized."), std::string::npos);
    // ops syntax and explicit nets at once.
    EXPECT_NE(invalid_input([&] {
                pipe(src.reader(), {.processor = Processor([](const Field& rec) -> ProcessorOutput {
                                      ops::Copy(rec["val"]());
                                      return std::vector<Net>{Net("pe_explicit")};
                                    })});
              }).find("Cannot both use `ops` syntax and return a list of nets."),
              std::string::npos);
  });
}

// A processor that returns no record makes a pipe without a writer: an output or a capacity given
// with it would be dropped (Caffe2 dropped them silently), so it is refused at build time, on both
// paths and in pipe_and_output, before the output queue counts the pipe as a writer.
TEST(Pipe, ProcessorWithoutRecordRefusesOutputAndCapacity) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 3, "pnr");
  const Processor no_record([](const Field& rec) { ops::Copy(rec["val"]()); }, "no_record");
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "pnr_q"});
  TaskGroup tg;
  with_context(tg, [&, src = src, dst = dst] {
    const std::string to_dataset =
        "pipe: the processor \"no_record\" returns no record, so output \"DatasetWriter\" would not be used.";
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.output = dst.writer(), .processor = no_record}); }), to_dataset);
    EXPECT_EQ(
        invalid_input([&] { pipe(src.reader(), {.output = dst.writer(), .num_threads = 2, .processor = no_record}); }),
        to_dataset);
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.output = q, .processor = no_record}); }),
              "pipe: the processor \"no_record\" returns no record, so output \"Queue\" would not be used.");
    const std::string capacity = "pipe: the processor \"no_record\" returns no record, so capacity would not be used.";
    EXPECT_EQ(invalid_input([&] { pipe(src.reader(), {.processor = no_record, .capacity = 5}); }), capacity);
    EXPECT_EQ(invalid_input([&] {
                pipe_and_output(src.reader(), {.processor = no_record, .capacity = 5}, {TaskOutput(BlobRef("x"))});
              }),
              capacity);
    // A processor that returns nets only is the same case.
    const Processor nets_only([](const Field&) { return std::vector<Net>{Net("pnr_nets")}; }, "nets_only");
    EXPECT_NE(invalid_input([&] {
                pipe(src.reader(), {.processor = nets_only, .capacity = 5});
              }).find("\"nets_only\" returns no record, so capacity would not be used."),
              std::string::npos);
  });
  EXPECT_TRUE(tg.tasks().empty());
  EXPECT_EQ(q->num_writer_tasks(), 0);
  // Without output and capacity the pipe is built, with no writer and no queue.
  TaskGroup fine;
  ReaderSource none;
  with_context(fine, [&, src = src] { none = pipe(src.reader(), {.processor = no_record}); });
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(fine.tasks().size(), 1u);
}

TEST(Pipe, NumThreadsZeroReturnsTheProcessingReader) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 3, "pz");
  ReaderSource r = pipe(src.reader(), {.num_threads = 0, .processor = Processor([](const Field& rec) { return rec; })});
  EXPECT_EQ(r.name(), "ProcessingReader");
  EXPECT_EQ(pipe(src.reader(), {.num_runtime_threads = 0}).name(), "DatasetReader");
}

// The Task of the default path: names, task/instance setup, the body loop and the output queue's
// LOCAL_SETUP creation.
TEST(Pipe, GeneratedTaskAndQueue) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 3, "pg");
  ReaderSource q;
  TaskGroup tg([&, src = src] {
    q = pipe(src.reader(), {.processor = Processor([](const Field& rec) { return rec; }, "ident"),
                            .capacity = 7,
                            .num_runtime_threads = 2});
  });
  ASSERT_TRUE(q.pipe());
  auto queue = std::dynamic_pointer_cast<Queue>(q.pipe());
  ASSERT_TRUE(queue);
  EXPECT_EQ(queue->capacity(), 7);
  EXPECT_EQ(queue->queue().name(), "local/ident/queue/handler");
  ASSERT_EQ(tg.tasks().size(), 1u);
  EXPECT_EQ(tg.tasks()[0].name(), "local/ident");
  EXPECT_EQ(tg.tasks()[0].num_instances(), 2);
  const TaskGroupDef& def = session.compile(tg);
  auto types = all_op_types(def);
  EXPECT_EQ(types.count("CreateBlobsQueue"), 1u);
  EXPECT_EQ(types.count("CreateTreeCursor"), 1u);
  EXPECT_EQ(types.count("SafeEnqueueBlobs"), 1u);
  // The task's exit closes the queue when it is the last writer task.
  EXPECT_EQ(types.count("CreateCounter"), 1u);
  EXPECT_EQ(types.count("CountDownCloseBlobsQueue"), 1u);
  EXPECT_EQ(types.count("TimerBegin"), 1u);
  EXPECT_EQ(types.count("TimerEnd"), 1u);  // one net, run in the body and once more after the loop
  std::set<std::string> net_names;
  for (const auto& net : def.nodes[0].plan.network) net_names.insert(net.name);
  EXPECT_TRUE(net_names.contains("local/ident/pipe:init"));
  EXPECT_TRUE(net_names.contains("local/ident/pipe:instance:init"));
  EXPECT_TRUE(net_names.contains("local/ident/timer_start"));
  session.run(tg);
  auto bq = session.workspace().blob(queue->queue().name()).get<BlobsQueuePtr>();
  EXPECT_EQ(bq->size(), 3u);
  EXPECT_TRUE(bq->is_closed());  // the writer's exit closed it
}

// num_threads > 1: static threads in one workspace; the output queue is shared by the threads.
TEST(Pipe, StaticThreads) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 50, "ps");
  TaskGroup tg([&, src = src, dst = dst] {
    ReaderSource q = pipe(src.reader(), {.num_threads = 3,
                                         .processor = Processor(
                                             [](const Field& rec) {
                                               Field out = schema::NewRecord(rec);
                                               ops::Add({rec["val"](), rec["val"]()}, {out["val"]()});
                                               return out;
                                             },
                                             "double")});
    pipe(q, {.output = dst.writer(), .num_threads = 2});
  });
  session.run(tg);
  std::vector<int64_t> expected = iota(50);
  for (auto& v : expected) v *= 2;
  EXPECT_EQ(sorted_vals(session, dst), expected);
}

// A Net processor: cloned per thread with a prefix; input record bound by field name.
TEST(Pipe, NetProcessorClonesPerThread) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 20, "pn");
  Net proc_net("pn_proc");
  Field in = schema::from_blob_list(src.content().clone_schema(), {"pn_in_val"});
  Field out = schema::from_blob_list(src.content().clone_schema(), {"pn_out_val"});
  BlobRef ten = proc_net.Const(10);
  proc_net.op("Add", {in["val"](), ten}, {out["val"]()}, {{"broadcast", true}});
  auto np = std::make_shared<NetProcessor>(proc_net, in, out);
  TaskGroup tg(
      [&, src = src, dst = dst] { pipe(src.reader(), {.output = dst.writer(), .num_threads = 2, .processor = np}); });
  session.run(tg);
  std::vector<int64_t> expected = iota(20, 10);
  EXPECT_EQ(sorted_vals(session, dst), expected);
  const auto& maps = np->blob_maps();
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_NE(maps[0].at("pn_out_val"), maps[1].at("pn_out_val"));
  EXPECT_EQ(maps[0].at("pn_out_val"), "local/pn_proc/t:0/pn_out_val");
  Net li("pn_li");
  EXPECT_NE(invalid_input([&] { (*np)(in); }).find("cannot clone"), std::string::npos);
  EXPECT_NE(invalid_input([&] {
              NetProcessor bad(proc_net,
                               schema::from_blob_list(schema::Struct({{"zzz", schema::Scalar()}}), {"pn_in_val"}), out);
              bad(src.content());
            }).find("Schemas don't match"),
            std::string::npos);
}

// ops::stop_if in a processor ends the stream before the record is written.
TEST(Pipe, ProcessorStopIf) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 10, "pst");
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = dst.writer(), .processor = Processor([](const Field& rec) {
                                                  ops::stop_if(ops::GE(
                                                      {rec["val"](), ops::Const(int64_t{5}, {.dtype = DType::Int64})},
                                                      {}, {{"broadcast", true}}));
                                                  return rec;
                                                })});
  });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(5));
}

// should_stop returned explicitly, and a processor that returns no record (no writer, no queue).
TEST(Pipe, ProcessorShouldStopAndNoRecord) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 10, "pns");
  const BlobRef total = "pns_total";
  Net init("pns_init");
  init.Const(0, {.blob_out = total});
  session.run(init);
  ReaderSource none;
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = dst.writer(),
                        .processor = Processor([](const Field& rec) -> ProcessorOutput {
                          BlobRef stop = ops::GE({rec["val"](), ops::Const(int64_t{3})}, {}, {{"broadcast", true}});
                          return {rec, stop};
                        })});
    none = pipe(Dataset(src).reader({.cursor_name = "pns_c2"}), {.processor = Processor([&](const Field& rec) {
                                                                   ops::Add({total, rec["val"]()}, {total});
                                                                 })});
  });
  EXPECT_TRUE(none.empty());
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(3));
  EXPECT_EQ(session.fetch("local", total.name()).item<int64_t>(), 45);
}

// pipe_and_output hands the task's outputs back.
TEST(Pipe, PipeAndOutput) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 8, "pao");
  const BlobRef total = "pao_total";
  Net init("pao_init");
  init.Const(0, {.blob_out = total});
  session.run(init);
  PipeAndOutput po;
  TaskGroup tg([&, src = src] {
    po = pipe_and_output(src.reader(), {.processor = Processor([&](const Field& rec) {
                                          ops::Add({total, rec["val"]()}, {total});
                                        })},
                         {TaskOutput(total)});
  });
  ASSERT_EQ(po.outputs.size(), 1u);
  session.run(tg);
  EXPECT_EQ(po.outputs[0].fetch<int64_t>(), 28);
}

// A processor that throws on the 30th record: the run fails with that error, the downstream
// pipe blocked on the queue is woken, every queue ends closed, and nothing hangs.
TEST(Pipe, ExceptionMidStreamClosesQueuesAndFails) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 100, "pex");
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "pex_q"});
  std::atomic<int> seen{0};
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = q,
                        .processor = Processor(
                            [&](const Field& rec) {
                              ops::call([&](std::span<Blob* const>, std::span<Blob* const>) {
                                if (++seen == 30) throw RuntimeError("processor failed on purpose");
                              });
                              return rec;
                            },
                            "thrower"),
                        .num_runtime_threads = 2});
    pipe(q, {.output = dst.writer(), .num_runtime_threads = 2});
  });
  EXPECT_TRUE(run_expect_error(session, tg, "processor failed on purpose"));
  auto bq = session.workspace().blob(q->queue().name()).get<BlobsQueuePtr>();
  EXPECT_TRUE(bq->is_closed());
  // The rows that got through before the cancellation reached the other instance: each once.
  // (How many depends on that latency; the second instance may process a few more.)
  EXPECT_GE(seen.load(), 30);
  auto got = sorted_vals(session, dst);
  EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()).size(), got.size());
}

// Three stages (src → q1 → q2 → dst) and the middle one throws: the run fails with that error within
// the test's bound, and both queues end closed — the upstream one, whose writer may be blocked on a
// full queue, and the downstream one, whose reader waits for records that will not come.
TEST(Pipe, ExceptionInTheMiddleStageClosesBothQueues) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 200, "pmid");
  std::shared_ptr<Queue> q1 = Queue::make(2, {.name = "pmid_q1"});
  std::shared_ptr<Queue> q2 = Queue::make(2, {.name = "pmid_q2"});
  std::atomic<int> seen{0};
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = q1});
    pipe(q1, {.output = q2,
              .processor = Processor(
                  [&](const Field& rec) {
                    ops::call([&](std::span<Blob* const>, std::span<Blob* const>) {
                      if (++seen == 30) throw RuntimeError("middle stage failed on purpose");
                    });
                    return rec;
                  },
                  "middle")});
    pipe(q2, {.output = dst.writer()});
  });
  EXPECT_TRUE(run_expect_error(session, tg, "middle stage failed on purpose"));
  EXPECT_TRUE(session.workspace().blob(q1->queue().name()).get<BlobsQueuePtr>()->is_closed());
  EXPECT_TRUE(session.workspace().blob(q2->queue().name()).get<BlobsQueuePtr>()->is_closed());
  // Each row at most once downstream, and none of those the middle stage never passed on.
  auto got = sorted_vals(session, dst);
  EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()).size(), got.size());
  EXPECT_LT(got.size(), 30u);
}

// A dataset whose field blobs are named but were never created (its init net did not run): the
// build cannot know, so the run fails naming the missing blob, within the test's bound, and the
// downstream pipe waiting on the queue does not hang.
TEST(Pipe, ReaderOverADatasetWhoseBlobsWereNeverCreatedFailsAtRunTime) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 3, "pnc");
  Net never_run("pnc_never_run");
  const Field blobs = name_scope("pnc_missing", [&] {
    return schema::NewRecord(never_run, schema::Struct({{"val", schema::Scalar(DType::Int64)}}));
  });
  Dataset missing(blobs, "pnc_missing");
  std::shared_ptr<Queue> q = Queue::make(2, {.name = "pnc_q"});
  TaskGroup tg([&, dst = dst] {
    pipe(missing.reader(), {.output = q});
    pipe(q, {.output = dst.writer()});
  });
  EXPECT_TRUE(run_expect_error(session, tg, blobs["val"]().name()));
  EXPECT_TRUE(sorted_vals(session, dst).empty());
}

}  // namespace
}  // namespace moka

namespace moka {
namespace {

// The example of docs/pipelines.md, as written there.
TEST(Pipe, DocsExample) {
  moka::Net init("init");
  Field src = moka::name_scope("src", [&] {
    return moka::schema::ConstRecord(
        init, moka::schema::Struct({{"val", moka::schema::Scalar(moka::Tensor::vector<int64_t>({1, 2, 3}))}}));
  });
  moka::Dataset source(src, "source");
  moka::Dataset doubled(src.clone_schema(), "doubled");
  moka::name_scope("dst", [&] { doubled.init_empty(init); });

  moka::TaskGroup tg([&] {
    moka::ReaderSource q = moka::pipe(source.reader(), {.processor = moka::Processor(
                                                            [](const Field& rec) {
                                                              Field out = moka::schema::NewRecord(rec);
                                                              ops::Add({rec["val"](), rec["val"]()}, {out["val"]()});
                                                              return out;
                                                            },
                                                            "double"),
                                                        .num_runtime_threads = 4});
    moka::pipe(q, {.output = doubled.writer()});
  });
  moka::LocalSession session;
  session.run(init);
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, doubled), (std::vector<int64_t>{2, 4, 6}));
}

}  // namespace
}  // namespace moka
