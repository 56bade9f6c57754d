// Conformance: ports of dataio_test.py (docs/testing.md §1): composite readers, runtime
// threads with task/instance setup in a processor, and every limit-reader row.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using schema::Field;

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v(static_cast<std::size_t>(std::max<int64_t>(0, to - from)));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<int64_t> sorted_labels(const Field& record, const std::string& field = "label") {
  auto v = record[field].value()->values<int64_t>();
  std::vector<int64_t> out(v.begin(), v.end());
  std::sort(out.begin(), out.end());
  return out;
}

// dataio_test.make_source_dataset: rows offset .. offset+size-1 in column "label", fed into the
// session's node workspace, blobs under NameScope(name).
Dataset make_source_dataset(LocalSession& session, int64_t size = 100, int64_t offset = 0,
                            const std::string& name = "src") {
  Net src_init(name + "_init");
  NameScope scope(name);
  schema::Struct src_values({{"label", schema::Scalar(Tensor::vector<int64_t>(range(offset, offset + size)))}});
  Field src_blobs = schema::NewRecord(src_init, src_values);
  Dataset src_ds(src_blobs, name);
  schema::FeedRecord(src_blobs, src_values, session.workspace());
  // src_init holds no operators (NewRecord only names blobs): Caffe2 ran it for nothing.
  return src_ds;
}

// dataio_test.make_destination_dataset.
Dataset make_destination_dataset(LocalSession& session, const Field& schema, const std::string& name = "dst") {
  Net dst_init(name + "_init");
  NameScope scope(name);
  Dataset dst_ds(schema, name);
  dst_ds.init_empty(dst_init);
  session.run(dst_init);
  return dst_ds;
}

// dataio_test.TestReaderBuilder: a builder whose reader is a source dataset made in setup().
class TestReaderBuilder final : public ReaderBuilder {
 public:
  TestReaderBuilder(std::string name, int64_t size, int64_t offset)
      : name_(std::move(name)), size_(size), offset_(offset) {}
  Field schema() const override { return schema::Struct({{"label", schema::Scalar()}}); }
  DataFinishedMap setup(const ReaderBuilderArgs& args) override {
    src_ds_.emplace(
        make_source_dataset(*std::any_cast<LocalSession*>(args.extra.at("session")), size_, offset_, name_));
    return {};
  }
  ReaderSource new_reader(const ReaderBuilderArgs&) override { return *src_ds_; }

 private:
  std::string name_;
  int64_t size_, offset_;
  std::optional<Dataset> src_ds_;
};

// Ports TestCompositeReader.test_composite_reader.
TEST(Caffe2Dataio, test_composite_reader) {
  LocalSession session;
  const std::vector<std::string> names{"src_0", "src_1", "src_2"};
  const std::vector<int64_t> offsets{0, 100, 200};
  std::vector<Dataset> srcs;
  for (std::size_t i = 0; i < names.size(); ++i)
    srcs.push_back(make_source_dataset(session, 100, offsets[i], names[i]));
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(sorted_labels(schema::FetchRecord(srcs[i].content(), session.workspace())),
              range(offsets[i], offsets[i] + 100));
  std::vector<std::pair<std::string, Field>> fields;
  for (std::size_t i = 0; i < names.size(); ++i) fields.emplace_back(names[i], srcs[i].content().clone_schema());
  Dataset dst_ds = make_destination_dataset(session, schema::Struct(fields));
  TaskGroup tg([&] {
    std::vector<std::shared_ptr<Reader>> readers;
    for (auto& s : srcs) readers.push_back(s.reader());
    pipe(std::make_shared<CompositeReader>(names, readers), {.output = dst_ds.writer(), .num_runtime_threads = 3});
  });
  session.run(tg);
  Field dst = schema::FetchRecord(dst_ds.content(), session.workspace());
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(sorted_labels(dst[names[i]]), range(offsets[i], offsets[i] + 100)) << names[i];
}

// Ports TestCompositeReader.test_composite_reader_builder.
TEST(Caffe2Dataio, test_composite_reader_builder) {
  LocalSession session;
  const std::vector<std::string> names{"src_0", "src_1", "src_2"};
  const std::vector<int64_t> offsets{0, 100, 200};
  std::vector<std::shared_ptr<ReaderBuilder>> builders;
  for (std::size_t i = 0; i < names.size(); ++i)
    builders.push_back(std::make_shared<TestReaderBuilder>(names[i], 100, offsets[i]));
  CompositeReaderBuilder reader_builder(names, builders);
  reader_builder.setup({.extra = {{"session", &session}}});
  std::vector<std::pair<std::string, Field>> fields;
  for (std::size_t i = 0; i < names.size(); ++i) fields.emplace_back(names[i], builders[i]->schema());
  Dataset dst_ds = make_destination_dataset(session, schema::Struct(fields));
  TaskGroup tg([&] { pipe(reader_builder.new_reader({}), {.output = dst_ds.writer(), .num_runtime_threads = 3}); });
  session.run(tg);
  Field dst = schema::FetchRecord(dst_ds.content(), session.workspace());
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(sorted_labels(dst[names[i]]), range(offsets[i], offsets[i] + 100)) << names[i];
}

// Ports TestReaderWithLimit.test_runtime_threads: a processor with task_init /
// task_instance_init / task_instance_exit / task_exit blocks counts records, per-instance
// records and instances.
TEST(Caffe2Dataio, test_runtime_threads) {
  LocalSession session;
  Dataset src_ds = make_source_dataset(session);
  std::vector<TaskOutput> totals(3);
  auto proc = [&](const Field& rec) {
    BlobRef counter1, counter2, counter3, task_counter;
    ops::task_init([&] {
      counter1 = ops::CreateCounter({}, {"global_counter"});
      counter2 = ops::CreateCounter({}, {"global_counter2"});
      counter3 = ops::CreateCounter({}, {"global_counter3"});
    });
    ops::task_instance_init([&] { task_counter = ops::CreateCounter({}, {"task_counter"}); });
    ops::CountUp(counter1);
    ops::CountUp(task_counter);
    ops::task_instance_exit([&] {
      ops::loop(ops::RetrieveCount(task_counter), [&] { ops::CountUp(counter2); });
      ops::CountUp(counter3);
    });
    ops::task_exit([&] {
      totals[0] = final_output(ops::RetrieveCount(counter1));
      totals[1] = final_output(ops::RetrieveCount(counter2));
      totals[2] = final_output(ops::RetrieveCount(counter3));
    });
    return rec;
  };
  auto fetched = [&] {
    return std::vector<int64_t>{totals[0].fetch<int64_t>(), totals[1].fetch<int64_t>(), totals[2].fetch<int64_t>()};
  };

  TaskGroup tg_a([&] { pipe(src_ds.reader(), {.processor = Processor(proc, "proc"), .num_runtime_threads = 8}); });
  session.run(tg_a);
  EXPECT_EQ(fetched(), (std::vector<int64_t>{100, 100, 8}));

  TaskGroup tg_b([&] {
    ReaderSource q1 = pipe(src_ds.reader(), {.num_runtime_threads = 2});
    ReaderSource q2 = pipe(std::make_shared<ReaderWithLimit>(q1.reader(), 25), {.num_runtime_threads = 3});
    pipe(q2, {.processor = Processor(proc, "proc"), .num_runtime_threads = 6});
  });
  session.run(tg_b);
  EXPECT_EQ(fetched(), (std::vector<int64_t>{25, 25, 6}));
}

// dataio_test._test_limit_reader_shared: pipe a (delayed) dataset reader through a limit reader
// into an empty dataset in a GLOBAL TaskGroup (so data_finished survives the run), then check the
// rows read are a prefix of the source and the data_finished flag.
void limit_reader_shared(const std::function<std::shared_ptr<ReaderWithLimitBase>(std::shared_ptr<Reader>)>& make,
                         int64_t size, int64_t expected_min, int64_t expected_max, bool expected_finish,
                         int32_t num_threads, double read_delay) {
  LocalSession session;
  Dataset src_ds = make_source_dataset(session, size);
  Dataset dst_ds = make_destination_dataset(session, src_ds.content().clone_schema());
  std::shared_ptr<ReaderWithLimitBase> reader;
  TaskGroup tg(WorkspaceType::Global, [&] {
    std::shared_ptr<Reader> base = src_ds.reader();
    if (read_delay > 0) base = std::make_shared<ReaderWithDelay>(base, read_delay);
    reader = make(base);
    pipe(reader, {.output = dst_ds.writer(), .num_runtime_threads = num_threads});
  });
  session.run(tg);
  const std::vector<int64_t> read = sorted_labels(schema::FetchRecord(dst_ds.content(), session.workspace()));
  const auto n = static_cast<int64_t>(read.size());
  EXPECT_GE(n, expected_min);
  EXPECT_LE(n, expected_max);
  EXPECT_EQ(read, range(0, n));
  EXPECT_EQ(session.fetch("local", reader->data_finished().name()).item<bool>(), expected_finish);
}

auto count_limit(std::optional<int64_t> num_iter) {
  return [num_iter](std::shared_ptr<Reader> r) -> std::shared_ptr<ReaderWithLimitBase> {
    return std::make_shared<ReaderWithLimit>(std::move(r), num_iter);
  };
}
auto time_limit(double duration) {
  return [duration](std::shared_ptr<Reader> r) -> std::shared_ptr<ReaderWithLimitBase> {
    return std::make_shared<ReaderWithTimeLimit>(std::move(r), duration);
  };
}

// Ports test_count_limit_reader_without_limit.
TEST(Caffe2Dataio, test_count_limit_reader_without_limit) {
  limit_reader_shared(count_limit(std::nullopt), 100, 100, 100, true, 8, 0);
}
// Ports test_count_limit_reader_with_zero_limit.
TEST(Caffe2Dataio, test_count_limit_reader_with_zero_limit) {
  limit_reader_shared(count_limit(0), 100, 0, 0, false, 8, 0);
}
// Ports test_count_limit_reader_with_low_limit.
TEST(Caffe2Dataio, test_count_limit_reader_with_low_limit) {
  limit_reader_shared(count_limit(10), 100, 10, 10, false, 8, 0);
}
// Ports test_count_limit_reader_with_high_limit.
TEST(Caffe2Dataio, test_count_limit_reader_with_high_limit) {
  limit_reader_shared(count_limit(110), 100, 100, 100, true, 8, 0);
}
// Ports test_time_limit_reader_without_limit (read_delay 0.1 s, as upstream).
TEST(Caffe2Dataio, test_time_limit_reader_without_limit) {
  limit_reader_shared(time_limit(0), 100, 100, 100, true, 8, 0.1);
}
// Ports test_time_limit_reader_with_short_limit with the newer upstream's tolerance (8 ± 8 rows):
// 4 threads, 0.25 s per read, limit 1 - 0.25 * 0.25 s; the check happens before each read.
TEST(Caffe2Dataio, test_time_limit_reader_with_short_limit) {
  limit_reader_shared(time_limit(1 - 0.25 * 0.25), 50, 0, 16, false, 4, 0.25);
}
// Ports test_time_limit_reader_with_long_limit (the newer upstream's delay 0.2 s and duration 10 s).
TEST(Caffe2Dataio, test_time_limit_reader_with_long_limit) {
  limit_reader_shared(time_limit(10), 50, 50, 50, true, 4, 0.2);
}

}  // namespace
}  // namespace moka
