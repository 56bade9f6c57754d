// Unit tests: readers and writers — the nets they generate (setup, read, limits, composite, queue,
// dataset), their build-time errors, small runs (CountUntil, Reader::execution_step, PipedReaderBuilder),
// and CompositeReaderBuilder (the limiter reaches its last builder only; overlapping values; no reader).
#include <gtest/gtest.h>

#include <any>
#include <numeric>

#include "moka/moka.h"
#include "moka/operators/blobs_queue.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using moka::testing::invalid_input;
using schema::Field;

std::vector<std::string> op_types(const Net& net) {
  std::vector<std::string> out;
  for (const auto& op : net.proto().op) out.push_back(op.type);
  return out;
}

std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// A dataset of column "val" = 0..n-1, created by init (ConstRecord).
Dataset const_dataset(Net& init, int64_t n, const std::string& name = "ds") {
  Field data = name_scope(name, [&] {
    return schema::ConstRecord(init, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(iota(n)))}}));
  });
  return Dataset(data, name);
}

TEST(Reader, BaseErrors) {
  struct Bare final : Reader {};
  Bare r;
  EXPECT_NE(invalid_input([&] { r.schema(); }).find("Schema not provided for this reader."), std::string::npos);
  Net net("bare");
  EXPECT_NE(invalid_input([&] { r.reset(net); }).find("This reader cannot be resetted."), std::string::npos);
  EXPECT_NE(invalid_input([&] { r.read(net); }).find("use read_ex()"), std::string::npos);
  EXPECT_EQ(invalid_input([] { ReaderSource().reader(); }), "in must be a reader, queue or stream.");
}

TEST(DatasetReader, GeneratedNets) {
  Net init("dsr_init");
  Dataset ds = const_dataset(init, 3, "dsr");
  EXPECT_EQ(ds.field_names(), std::vector<std::string>{"val"});
  EXPECT_EQ(ds.get_blobs(), std::vector<BlobRef>{"dsr/val"});
  auto reader = ds.reader({.batch_size = 2});
  Net task_init("dsr_task_init"), task_exit("dsr_task_exit");
  reader->setup_ex(task_init, task_exit);
  reader->setup_ex(task_init, task_exit);  // idempotent
  EXPECT_EQ(op_types(task_init), std::vector<std::string>{"CreateTreeCursor"});
  EXPECT_EQ(task_init.proto().op[0].output[0], "dsr_cursor");
  Net li("dsr_li"), lf("dsr_lf");
  ReadRecordNets r = reader->read_record_ex(li, lf);
  ASSERT_EQ(r.nets.size(), 1u);
  const Net& body = *r.nets[0].net();
  EXPECT_EQ(op_types(body), (std::vector<std::string>{"ReadNextBatch", "IsEmpty"}));
  EXPECT_EQ(body.proto().op[0].output[0], body.name() + "/dsr_cursor/val");
  EXPECT_EQ(r.should_stop.name(), body.proto().op[1].output[0]);
  ASSERT_TRUE(r.record.has_value());
  EXPECT_EQ((*r.record)["val"]().name(), body.name() + "/dsr_cursor/val");

  // A reader given an init net creates its cursor there, once.
  Net own_init("dsr_own");
  auto r2 = ds.reader({.init_net = own_init, .cursor_name = "c2"});
  EXPECT_EQ(op_types(own_init), std::vector<std::string>{"CreateTreeCursor"});
  Net later("dsr_later");
  r2->setup_ex(later, std::nullopt);
  EXPECT_TRUE(later.proto().op.empty());
  Net reset("dsr_reset");
  r2->reset(reset);
  EXPECT_EQ(op_types(reset), std::vector<std::string>{"ResetCursor"});
}

TEST(DatasetReader, Errors) {
  Dataset uninit(schema::Struct({{"x", schema::Scalar(DType::Int64)}}), "uninit");
  EXPECT_NE(invalid_input([&] { uninit.reader(); }).find("Dataset not initialized."), std::string::npos);
  EXPECT_NE(invalid_input([&] { uninit.writer(); }).find("Dataset not initialized."), std::string::npos);
  EXPECT_NE(invalid_input([&] { uninit.content(); }).find("Dataset not initialized."), std::string::npos);
  Net init("dse_init");
  Dataset ds = const_dataset(init, 2, "dse");
  EXPECT_NE(invalid_input([&] { ds.reader({.batch_size = 0}); }).find("batch_size must be > 0"), std::string::npos);
  EXPECT_NE(invalid_input([&] { Dataset(schema::Scalar(), "s"); }).find("must be a Struct"), std::string::npos);
}

TEST(DatasetWriter, GeneratedNetsAndSchemaMismatch) {
  Net init("dsw_init");
  Dataset dst(schema::Struct({{"val", schema::Scalar(DType::Int64)}}), "dsw");
  dst.init_empty(init);
  auto writer = dst.writer();
  Net wi("dsw_wi"), we("dsw_we");
  writer->setup_ex(wi, we);
  EXPECT_EQ(op_types(wi), std::vector<std::string>{"CreateMutex"});
  Net li("dsw_li"), lf("dsw_lf");
  auto [nets, status] =
      writer->write_record_ex(schema::from_blob_list(dst.content().clone_schema(), {"in_val"}), li, lf);
  ASSERT_EQ(nets.size(), 1u);
  EXPECT_EQ(op_types(*nets[0].net()), (std::vector<std::string>{"CheckDatasetConsistency", "AtomicAppend"}));
  EXPECT_EQ(status.name(), li.name() + "/dequeue_status");
  // A record with other fields is refused when the write nets are built.
  Field other = schema::from_blob_list(schema::Struct({{"uid", schema::Scalar()}}), {"u"});
  EXPECT_NE(invalid_input([&] { writer->write_record_ex(other, li, lf); }).find("differ from the dataset's"),
            std::string::npos);
  Net w("dsw_w");
  EXPECT_NE(invalid_input([&] { writer->write(w, {"a", "b"}); }).find("Expected 1 fields, got 2."), std::string::npos);
}

TEST(ReaderWithLimit, GeneratedNets) {
  Net init("rwl_init");
  Dataset ds = const_dataset(init, 5, "rwl");
  auto limited = std::make_shared<ReaderWithLimit>(ds.reader(), 3);
  EXPECT_EQ(limited->num_iter(), 3);
  EXPECT_TRUE(limited->data_finished().name().ends_with("/data_finished"));
  Net ti("rwl_ti"), te("rwl_te");
  limited->setup_ex(ti, te);
  EXPECT_EQ(op_types(ti),
            (std::vector<std::string>{"ConstantFill", "CreateCounter", "CreateTreeCursor", "CreateCounter"}));
  EXPECT_EQ(ti.proto().op[0].output[0], limited->data_finished().name());
  EXPECT_EQ(op_types(te), std::vector<std::string>{"CheckCounterDone"});
  EXPECT_EQ(te.proto().op[0].output[0], limited->data_finished().name());
  Net li("rwl_li"), lf("rwl_lf");
  ReadNets r = limited->read_ex(li, lf);
  ASSERT_EQ(r.nets.size(), 3u);
  EXPECT_EQ(op_types(*r.nets[0].net()), std::vector<std::string>{"CountDown"});
  // Copy into the stop blob, then If(exhausted) { ResetCounter(finished_counter) }: no thread
  // writes data_finished itself (the task's exit does).
  EXPECT_EQ(op_types(*r.nets[2].net()), (std::vector<std::string>{"Copy", "CreateScope", "If"}));
  EXPECT_EQ(r.should_stop.name(), r.nets[0].net()->proto().op[0].output[0]);
  EXPECT_TRUE(limited->schema().same_schema(ds.content()));

  auto unlimited = std::make_shared<ReaderWithLimit>(ds.reader(), std::nullopt);
  Net ui("rwl_ui"), ue("rwl_ue");
  unlimited->setup_ex(ui, ue);
  EXPECT_EQ(op_types(ui), (std::vector<std::string>{"ConstantFill", "CreateCounter", "CreateTreeCursor"}));
  Net no_exit("rwl_no_exit");
  EXPECT_NE(invalid_input([&] { unlimited->setup_ex(no_exit, std::nullopt); }).find("needs an exit net"),
            std::string::npos);
  ReadNets u = unlimited->read_ex(li, lf);
  EXPECT_EQ(op_types(*u.nets[0].net()), std::vector<std::string>{"ConstantFill"});

  EXPECT_NE(invalid_input([&] { ReaderWithLimit(ds.reader(), -1); }).find("num_iter must be >= 0"), std::string::npos);
  EXPECT_NE(invalid_input([&] { ReaderWithLimit(nullptr, 1); }).find("null"), std::string::npos);
}

TEST(ReaderWithTimeLimit, GeneratedNetsAndErrors) {
  Net init("rwt_init");
  Dataset ds = const_dataset(init, 5, "rwt");
  auto limited = std::make_shared<ReaderWithTimeLimit>(ds.reader(), 2.5);
  Net ti("rwt_ti"), te("rwt_te");
  limited->setup_ex(ti, te);
  EXPECT_EQ(op_types(ti), (std::vector<std::string>{"ConstantFill", "CreateCounter", "CreateTreeCursor", "TimerBegin",
                                                    "TimerGet", "ConstantFill"}));
  EXPECT_EQ(op_types(te), (std::vector<std::string>{"CheckCounterDone", "TimerEnd"}));
  Net li("rwt_li"), lf("rwt_lf");
  ReadNets r = limited->read_ex(li, lf);
  EXPECT_EQ(op_types(*r.nets[0].net()), (std::vector<std::string>{"TimerGet", "GE"}));
  EXPECT_NE(r.should_stop.name(), "None");  // decision 4
  EXPECT_NE(invalid_input([&] { ReaderWithTimeLimit(ds.reader(), -1.0); }).find("duration must be >= 0"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { ReaderWithDelay(ds.reader(), -0.5); }).find("delay must be >= 0"), std::string::npos);
}

TEST(CompositeReader, GeneratedNetsAndErrors) {
  Net init("cr_init");
  Dataset a = const_dataset(init, 3, "cra"), b = const_dataset(init, 3, "crb");
  CompositeReader reader({"a", "b"}, {a.reader(), b.reader()});
  EXPECT_EQ(reader.schema().field_names(), (std::vector<std::string>{"a:val", "b:val"}));
  Net ti("cr_ti"), te("cr_te");
  reader.setup_ex(ti, te);
  EXPECT_EQ(op_types(ti), (std::vector<std::string>{"CreateTreeCursor", "CreateTreeCursor"}));
  Net li("cr_li"), lf("cr_lf");
  ReadRecordNets r = reader.read_record_ex(li, lf);
  ASSERT_EQ(r.nets.size(), 3u);  // a's read, a_stop, b's read
  EXPECT_TRUE(r.nets[1].net()->name().ends_with("a_stop"));
  EXPECT_EQ(r.should_stop.name(), r.nets[2].net()->proto().op[1].output[0]);
  EXPECT_EQ(r.record->field_names(), (std::vector<std::string>{"a:val", "b:val"}));
  EXPECT_NE(invalid_input([&] {
              CompositeReader({"a"}, {a.reader(), b.reader()});
            }).find("1 names but 2 readers"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { CompositeReader({}, {}); }).find("no readers"), std::string::npos);
}

TEST(Queue, NamesSetupAndErrors) {
  auto q = Queue::make(7, {.name = "unitq"});
  EXPECT_EQ(q->queue().name(), "unitq/handler");
  EXPECT_EQ(Queue::make(7, {.name = "unitq"})->queue().name(), "unitq_1/handler");
  Net init("q_init");
  EXPECT_NE(invalid_input([&] { q->setup(init); }).find("This queue does not have a schema."), std::string::npos);
  EXPECT_NE(invalid_input([&] { q->reader(); }).find("Queue needs a schema in order to be read from."),
            std::string::npos);
  EXPECT_NE(invalid_input([] { Queue::make(0); }).find("capacity must be > 0"), std::string::npos);
  EXPECT_NE(invalid_input([] { Queue::make(-3); }).find("capacity must be > 0"), std::string::npos);
  EXPECT_NE(invalid_input([] { Queue::make(3, {.num_dequeue_records = 0}); }).find("num_dequeue_records"),
            std::string::npos);

  // A writer gives the queue its schema and attaches it (LOCAL_SETUP) to the writer's init net.
  auto writer = q->writer();
  Net wi("q_wi"), we("q_we"), li("q_li"), lf("q_lf");
  writer->setup_ex(wi, we);
  // The exit closes the queue only in the last writer task to exit (counted down).
  EXPECT_EQ(op_types(we), std::vector<std::string>{"CountDownCloseBlobsQueue"});
  EXPECT_EQ(q->num_writer_tasks(), 1);
  Field rec = schema::from_blob_list(schema::Struct({{"x", schema::Scalar(DType::Int64)}, {"y", schema::Scalar()}}),
                                     {"bx", "bx"});
  auto [nets, status] = writer->write_record_ex(rec, li, lf);
  EXPECT_EQ(q->num_writers(), 1);
  ASSERT_EQ(li.get_attributes(kLocalSetup).size(), 1u);
  EXPECT_EQ(li.get_attributes(kLocalSetup)[0].get(), q.get());
  // The duplicated blob is copied before the enqueue, which moves its inputs.
  EXPECT_EQ(op_types(*nets[0].net()), (std::vector<std::string>{"Copy", "SafeEnqueueBlobs"}));
  q->setup(init);
  EXPECT_EQ(op_types(init), (std::vector<std::string>{"CreateBlobsQueue", "CreateCounter"}));
  EXPECT_EQ(init.proto().op[1].output, std::vector<std::string>{"unitq/writers_left"});
  // A writer task built after the setup cannot join the counted ones: it closes on its own exit.
  Net late_exit("q_late_exit");
  q->writer()->setup_ex(wi, late_exit);
  EXPECT_EQ(op_types(late_exit), std::vector<std::string>{"CloseBlobsQueue"});
  EXPECT_EQ(q->num_writer_tasks(), 1);

  auto reader = q->reader();
  Net ri("q_ri"), rf("q_rf");
  ReadRecordNets r = reader->read_record_ex(ri, rf);
  EXPECT_EQ(op_types(*r.nets[0].net()), std::vector<std::string>{"SafeDequeueBlobs"});
  EXPECT_EQ(r.record->field_names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(q->num_readers(), 1);
}

// CountUntil(5) through a processor that sums the counter: 0 + 1 + 2 + 3 + 4.
TEST(CounterReader, CountUntilRuns) {
  const BlobRef total = "count_total";
  TaskGroup tg([&] {
    pipe(CountUntil(5), {.processor = Processor(
                             [&](const Field& rec) {
                               ops::Add({total, rec["iter"]()}, {total});
                             },
                             "sum")});
  });
  LocalSession session;
  Net init("count_init");
  init.Const(0, {.blob_out = total});
  session.run(init);
  session.run(tg);
  EXPECT_EQ(session.fetch("local", total.name()).item<int64_t>(), 10);
  CounterReader unset;
  Net li("cnt_li"), lf("cnt_lf");
  EXPECT_NE(invalid_input([&] { unset.read_ex(li, lf); }).find("setup_ex() was not called"), std::string::npos);
}

// Reader::execution_step: a step that reads the whole dataset, one row per iteration.
TEST(Reader, ExecutionStepReadsUntilEmpty) {
  Net init("es_init");
  Dataset ds = const_dataset(init, 4, "es");
  auto reader = ds.reader({.init_net = init});
  ReaderStep rs = reader->execution_step("es_read");
  EXPECT_EQ(rs.step.name(), "es_read_step");
  ASSERT_TRUE(rs.record.has_value());
  LocalSession session;
  session.run(init);
  session.run(rs.step);
  // After the step the cursor is at the end: the last read was empty.
  EXPECT_EQ(session.fetch("local", rs.fields[0].name()).numel(), 0);
}

// PipedReaderBuilder: the piper limits every reader the builder makes.
TEST(PipedReaderBuilder, PipesNewReaders) {
  struct Builder final : ReaderBuilder {
    Dataset ds;
    explicit Builder(Dataset d) : ds(std::move(d)) {}
    Field schema() const override { return ds.content().clone_schema(); }
    DataFinishedMap setup(const ReaderBuilderArgs&) override { return {{"ds", "finished_blob"}}; }
    ReaderSource new_reader(const ReaderBuilderArgs&) override { return ds; }
  };
  Net init("prb_init");
  Dataset ds = const_dataset(init, 6, "prb");
  auto piped = std::make_shared<PipedReaderBuilder>(
      std::make_shared<Builder>(ds), [](const ReaderSource& r, const ReaderBuilderArgs&) -> ReaderSource {
        return std::make_shared<ReaderWithLimit>(r.reader(), 2);
      });
  EXPECT_EQ(piped->setup({}).at("ds").name(), "finished_blob");
  ReaderSource src = piped->new_reader({});
  EXPECT_EQ(src.name(), "ReaderWithLimit");
  EXPECT_EQ(piped->schema().field_names(), std::vector<std::string>{"val"});

  // Composite builder: overlapping data_finished values are refused.
  CompositeReaderBuilder composite({"a", "b"}, {std::make_shared<Builder>(ds), std::make_shared<Builder>(ds)});
  EXPECT_NE(invalid_input([&] { composite.setup({}); }).find("Overlapping keys: ds"), std::string::npos);
}

// A builder of one dataset's readers that records what its setup() was given; its data_finished map is
// {key: finished}. With no_reader its new_reader() returns nothing.
struct RecordingBuilder final : ReaderBuilder {
  Dataset ds;
  std::string key;
  BlobRef finished;
  bool no_reader = false;
  std::any limiter;
  std::size_t extra = 0;
  RecordingBuilder(Dataset d, std::string k, BlobRef f, bool none = false)
      : ds(std::move(d)), key(std::move(k)), finished(std::move(f)), no_reader(none) {}
  Field schema() const override { return ds.content().clone_schema(); }
  DataFinishedMap setup(const ReaderBuilderArgs& args) override {
    limiter = args.limiter;
    extra = args.extra.size();
    return {{key, finished}};
  }
  ReaderSource new_reader(const ReaderBuilderArgs&) override { return no_reader ? ReaderSource() : ReaderSource(ds); }
};

// CompositeReaderBuilder::setup passes the limiter to its last builder only (Caffe2 popped it from the
// kwargs and gave it to the last); every other argument reaches every builder.
TEST(CompositeReaderBuilder, LimiterGoesToTheLastBuilderOnly) {
  Net init("crbl_init");
  Dataset a = const_dataset(init, 3, "crbla"), b = const_dataset(init, 3, "crblb"), c = const_dataset(init, 3, "crblc");
  auto ba = std::make_shared<RecordingBuilder>(a, "a", "crbl_a_finished");
  auto bb = std::make_shared<RecordingBuilder>(b, "b", "crbl_b_finished");
  auto bc = std::make_shared<RecordingBuilder>(c, "c", "crbl_c_finished");
  CompositeReaderBuilder composite({"a", "b", "c"}, {ba, bb, bc});
  ReaderBuilderArgs args;
  args.limiter = 7;
  args.extra["k"] = 1;
  const DataFinishedMap merged = composite.setup(args);
  EXPECT_FALSE(ba->limiter.has_value());
  EXPECT_FALSE(bb->limiter.has_value());
  ASSERT_TRUE(bc->limiter.has_value());
  EXPECT_EQ(std::any_cast<int>(bc->limiter), 7);
  EXPECT_EQ(ba->extra, 1u);
  EXPECT_EQ(bb->extra, 1u);
  EXPECT_EQ(bc->extra, 1u);
  EXPECT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged.at("c").name(), "crbl_c_finished");
  ReaderSource reader = composite.new_reader(args);
  EXPECT_EQ(reader.name(), "CompositeReader");
  EXPECT_EQ(reader.reader()->schema().field_names(), (std::vector<std::string>{"a:val", "b:val", "c:val"}));
}

// Caffe2's other two corner errors: two builders whose data_finished maps name the same blob, and a
// builder whose new_reader gives no reader.
TEST(CompositeReaderBuilder, OverlappingValuesAndNoReader) {
  Net init("crbe_init");
  Dataset a = const_dataset(init, 3, "crbea"), b = const_dataset(init, 3, "crbeb");
  CompositeReaderBuilder same_blob({"a", "b"}, {std::make_shared<RecordingBuilder>(a, "a", "crbe_finished"),
                                                std::make_shared<RecordingBuilder>(b, "b", "crbe_finished")});
  EXPECT_EQ(invalid_input([&] { same_blob.setup({}); }), "Overlapping values: crbe_finished");
  CompositeReaderBuilder no_reader({"a", "b"}, {std::make_shared<RecordingBuilder>(a, "a", "crbe_a_finished"),
                                                std::make_shared<RecordingBuilder>(b, "b", "crbe_b_finished", true)});
  EXPECT_EQ(invalid_input([&] { no_reader.new_reader({}); }), "reader must be an instance of Reader or Pipe");
}

}  // namespace
}  // namespace moka
