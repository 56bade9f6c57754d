// Unit tests: the defaults and options of pipe(), NetProcessor and the limit readers that no other test
// pins — the default queue capacity, PipeOptions.group and .name, the default task names, the timer's
// stat name, NetProcessor's stop_signal and thread_init_nets, ReaderWithLimit's default num_iter and
// ReaderWithTimeLimit's default duration (no limit).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/counter.h"
#include "moka/operators/stats.h"
#include "support/pipe_datasets.h"

namespace moka {
namespace {

using moka::testing::make_datasets;
using moka::testing::sorted_vals;
using schema::Field;

std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = from + static_cast<int64_t>(i);
  return v;
}

std::vector<std::string> task_names(TaskGroup& tg) {
  std::vector<std::string> out;
  for (const auto& t : tg.tasks()) out.push_back(t.name());
  return out;
}

// Without an output, pipe makes a Queue of 100 (Caffe2's DEFAULT_QUEUE_CAPACITY): 100 records fit
// with nobody reading them, and the BlobsQueue the run creates holds 100.
TEST(PipeOptions, DefaultQueueCapacityIs100) {
  EXPECT_EQ(kDefaultQueueCapacity, 100);
  LocalSession session;
  auto [src, dst] = make_datasets(session, 100, "pdc");
  ReaderSource q;
  TaskGroup tg([&, src = src] { q = pipe(src.reader()); });
  auto queue = std::dynamic_pointer_cast<Queue>(q.pipe());
  ASSERT_TRUE(queue);
  EXPECT_EQ(queue->capacity(), 100);
  session.run(tg);
  const BlobsQueuePtr& bq = session.workspace().blob(queue->queue().name()).get<BlobsQueuePtr>();
  EXPECT_EQ(bq->capacity(), 100);
  EXPECT_EQ(bq->size(), 100u);
}

// PipeOptions.group puts the task in that group, not in the active one.
TEST(PipeOptions, GroupTakesTheTaskOutOfTheActiveGroup) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 5, "pgr");
  TaskGroup active, other;
  with_context(active, [&, src = src, dst = dst] {
    pipe(src.reader(), {.output = dst.writer(), .name = "pgr_pipe", .group = &other});
  });
  EXPECT_TRUE(active.tasks().empty());
  EXPECT_EQ(task_names(other), std::vector<std::string>{"local/pgr_pipe"});
  session.run(other);
  EXPECT_EQ(sorted_vals(session, dst), iota(5));
}

// The task's name: .name, else the processor's, else pipe_into:<output>, else pipe_from:<input>.
TEST(PipeOptions, NameAndDefaultNames) {
  LocalSession session;
  auto [a, a_dst] = make_datasets(session, 3, "pon_a");
  auto [b, b_dst] = make_datasets(session, 3, "pon_b");
  auto [c, c_dst] = make_datasets(session, 3, "pon_c");
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "pn_q"});
  const Processor ident([](const Field& rec) { return rec; }, "pn_ident");
  TaskGroup tg([&, a = a, a_dst = a_dst, b = b, c = c] {
    ReaderSource made = pipe(a.reader());                        // no processor, no output
    pipe(made, {.output = a_dst.writer()});                      // no processor, a writer
    pipe(b.reader(), {.output = q});                             // no processor, a queue
    pipe(q);                                                     // from a queue
    pipe(c.reader(), {.processor = ident});                      // the processor's name
    pipe(c.reader(), {.processor = ident, .name = "pn_given"});  // .name wins over the processor's
  });
  EXPECT_EQ(task_names(tg), (std::vector<std::string>{"local/pipe_from:DatasetReader", "local/pipe_into:DatasetWriter",
                                                      "local/pipe_into:Queue", "local/pipe_from:Queue",
                                                      "local/pn_ident", "local/pn_given"}));
}

// The timer publishes `<node>/pipe/<name>/<input>/<output>` (ns) and `.../count` (batches; with no
// output, "NoOutput"): one count per batch, and one for the read that found the data exhausted.
TEST(PipeOptions, TimerStatName) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 5, "pts");
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = dst.writer(), .name = "pts_into"});
    pipe(Dataset(src).reader({.cursor_name = "pts_c2"}), {.name = "pts_none"});
  });
  const std::string into = "local/pipe/pts_into/DatasetReader/DatasetWriter";
  const std::string none = "local/pipe/pts_none/DatasetReader/NoOutput";
  StatRegistry& stats = StatRegistry::global();
  const int64_t into_before = stats.get(into + "/count"), none_before = stats.get(none + "/count");
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(5));
  EXPECT_TRUE(stats.has(into));
  EXPECT_TRUE(stats.has(none));
  EXPECT_EQ(stats.get(into + "/count") - into_before, 6);
  EXPECT_EQ(stats.get(none + "/count") - none_before, 6);
}

// NetProcessorOptions.stop_signal: a bool blob of the net that ends the stream when true, before the
// record that set it is written.
TEST(PipeOptions, NetProcessorStopSignal) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 20, "pss");
  Net proc_net("pss_proc");
  Field in = schema::from_blob_list(src.content().clone_schema(), {"pss_in_val"});
  Field out = schema::from_blob_list(src.content().clone_schema(), {"pss_out_val"});
  proc_net.op("Copy", {in["val"]()}, {out["val"]()});
  BlobRef five = proc_net.Const(int64_t{5});
  proc_net.op("GE", {in["val"](), five}, {"pss_stop"}, {{"broadcast", true}});
  auto np = std::make_shared<NetProcessor>(proc_net, in, out, NetProcessorOptions{.stop_signal = BlobRef("pss_stop")});
  TaskGroup tg([&, src = src, dst = dst] { pipe(src.reader(), {.output = dst.writer(), .processor = np}); });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(5));
  // The signal is the thread's clone of the blob (`local/pss_proc[_<k>]/pss_stop`: builder names are
  // unique in the process, so a repeated test gets a suffix).
  const std::string& stop = np->blob_maps().at(0).at("pss_stop");
  EXPECT_TRUE(stop.starts_with("local/pss_proc") && stop.ends_with("/pss_stop")) << stop;
}

// NetProcessorOptions.thread_init_nets: cloned with each thread's net (the blobs they define get the
// thread's prefix, and the processor net reads the thread's copy) and run once per clone in the node's
// setup, before any record — not per record. Two static threads: two clones, two runs; runtime
// threads: the processor is cloned once, so its init nets run once for all instances.
TEST(PipeOptions, NetProcessorThreadInitNets) {
  for (const bool static_threads : {true, false}) {
    SCOPED_TRACE(static_threads ? "num_threads = 2" : "num_runtime_threads = 3");
    const std::string name = static_threads ? "pti_s" : "pti_r";
    LocalSession session;
    auto [src, dst] = make_datasets(session, 20, name);
    const BlobRef runs(name + "_runs");
    Net setup(name + "_setup");
    setup.op("CreateCounter", {}, {runs}, {{"init_count", int64_t{0}}});
    session.run(setup);

    Net thread_init(name + "_thread_init");
    thread_init.Const(int64_t{100}, {.blob_out = name + "_offset"});
    thread_init.op("CountUp", {runs}, {name + "_run_id"});  // reads the shared counter: not renamed
    Net proc_net(name + "_proc");
    Field in = schema::from_blob_list(src.content().clone_schema(), {name + "_in_val"});
    Field out = schema::from_blob_list(src.content().clone_schema(), {name + "_out_val"});
    proc_net.op("Add", {in["val"](), BlobRef(name + "_offset")}, {out["val"]()}, {{"broadcast", true}});
    auto np = std::make_shared<NetProcessor>(proc_net, in, out, NetProcessorOptions{.thread_init_nets = {thread_init}});
    TaskGroup tg([&, src = src, dst = dst] {
      if (static_threads)
        pipe(src.reader(), {.output = dst.writer(), .num_threads = 2, .processor = np});
      else
        pipe(src.reader(), {.output = dst.writer(), .processor = np, .num_runtime_threads = 3});
    });
    session.run(tg);
    EXPECT_EQ(sorted_vals(session, dst), iota(20, 100));
    const auto& maps = np->blob_maps();
    ASSERT_EQ(maps.size(), static_threads ? 2u : 1u);
    EXPECT_EQ(session.workspace().blob(runs.name()).get<Counter>().retrieve(), static_threads ? 2 : 1);
    EXPECT_EQ(maps[0].at(runs.name()), runs.name());
    if (static_threads) {
      EXPECT_NE(maps[0].at(name + "_offset"), maps[1].at(name + "_offset"));
    }
  }
}

// ReaderWithLimit's num_iter defaults to 1, as in Caffe2: one read — one batch — across all instances.
TEST(ReaderDefaults, ReaderWithLimitReadsOneBatch) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 10, "prl");
  auto limited = std::make_shared<ReaderWithLimit>(src.reader({.batch_size = 3}));
  EXPECT_EQ(limited->num_iter(), 1);
  TaskGroup tg([&, dst = dst] { pipe(limited, {.output = dst.writer(), .num_runtime_threads = 2}); });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(3));
}

// ReaderWithTimeLimit's duration defaults to 0, as in Caffe2: no limit — no timer is set up, every row is
// read, and data_finished() says the reader ran out.
TEST(ReaderDefaults, ReaderWithTimeLimitHasNoLimit) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 50, "prt");
  Net ti("prt_ti"), te("prt_te");
  ReaderWithTimeLimit(src.reader({.cursor_name = "prt_c2"})).setup_ex(ti, te);
  for (const auto& op : ti.proto().op) EXPECT_NE(op.type, "TimerBegin");
  auto unlimited = std::make_shared<ReaderWithTimeLimit>(src.reader({.batch_size = 3}));
  PipeAndOutput po;
  TaskGroup tg([&, dst = dst] {
    po = pipe_and_output(unlimited, {.output = dst.writer(), .num_runtime_threads = 2},
                         {TaskOutput(unlimited->data_finished())});
  });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst), iota(50));
  ASSERT_EQ(po.outputs.size(), 1u);
  EXPECT_TRUE(po.outputs[0].fetch<bool>());
}

}  // namespace
}  // namespace moka
