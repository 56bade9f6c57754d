// Unit tests: a pipe counts the records it reads under "<pipe timer key>/records" (docs/pipelines.md §5.1,
// decision 70): with and without a processor, on runtime and static threads, through a queue, with a reader
// whose limit stops it (a stopped read is not counted), with a read that ends in a step, and with a processor that
// returns no record.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

#include "moka/moka.h"
#include "support/pipe_datasets.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using moka::testing::make_datasets;
using moka::testing::sorted_vals;
using schema::Field;

// Each pipe's records by label ("local/<name>"); the registry is process-wide, so tests read differences.
std::map<std::string, int64_t> records_by_pipe() {
  std::map<std::string, int64_t> out;
  for (const PipeCounts& p : pipe_counts(StatRegistry::global().export_all(/*reset=*/false)))
    if (p.counts_records) out[p.label] += p.records;
  return out;
}

int64_t records_since(const std::map<std::string, int64_t>& before, const std::string& label) {
  const std::map<std::string, int64_t> now = records_by_pipe();
  const auto was = before.find(label);
  const auto is = now.find(label);
  return (is == now.end() ? 0 : is->second) - (was == before.end() ? 0 : was->second);
}

Processor doubling() {
  return Processor(
      [](const Field& rec) {
        Field out = schema::NewRecord(rec);
        ops::Add({rec["val"](), rec["val"]()}, {out["val"]()});
        return out;
      },
      "double");
}

TEST(PipeRecords, BothPipesOfAQueueCountEveryRecordOnRuntimeThreads) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 50, "prr");
  const auto before = records_by_pipe();
  TaskGroup tg([&, src = src, dst = dst] {
    ReaderSource q =
        pipe(src.reader({.batch_size = 4}), {.processor = doubling(), .name = "prr_double", .num_runtime_threads = 2});
    pipe(q, {.output = dst.writer(), .name = "prr_write", .num_runtime_threads = 2});
  });
  const TaskGroupDef& def = session.compile(tg);
  int count_ops = 0;
  for (const auto& net : def.nodes[0].plan.network) {
    EXPECT_EQ(net.name.find("count_records"), std::string::npos) << "the count joins the read's net: " << net.name;
    for (const auto& op : net.op) count_ops += op.type == "CountRecords" ? 1 : 0;
  }
  EXPECT_EQ(count_ops, 2);  // one per pipe; each task instance runs its own copy
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst).size(), 50u);
  EXPECT_EQ(records_since(before, "local/prr_double"), 50);  // 13 batches, the last of 2
  EXPECT_EQ(records_since(before, "local/prr_write"), 50);
  session.run(tg);  // a second run counts again
  EXPECT_EQ(records_since(before, "local/prr_double"), 100);
}

TEST(PipeRecords, StaticThreadsCountTheirRecordsOnce) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 30, "prs");
  const auto before = records_by_pipe();
  TaskGroup tg([&, src = src, dst = dst] {
    ReaderSource q = pipe(src.reader({.batch_size = 3}), {.num_threads = 3, .processor = doubling(), .name = "prs_d"});
    pipe(q, {.output = dst.writer(), .num_threads = 2, .name = "prs_w"});
  });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst).size(), 30u);
  EXPECT_EQ(records_since(before, "local/prs_d"), 30);
  EXPECT_EQ(records_since(before, "local/prs_w"), 30);
}

// The limit stops the reader after 3 batches: the read that found the limit left its outputs as they were,
// and is not counted.
TEST(PipeRecords, AReadThatStoppedCountsNothing) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 40, "prl");
  const auto before = records_by_pipe();
  TaskGroup tg([&, src = src, dst = dst] {
    auto limited = std::make_shared<ReaderWithLimit>(src.reader({.batch_size = 4}), 3);
    pipe(limited, {.output = dst.writer(), .name = "prl_limited"});
  });
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst).size(), 12u);
  EXPECT_EQ(records_since(before, "local/prl_limited"), 12);
}

// A reader whose read ends with a step, not a net: the count runs in a net of its own after it.
class ReadInAStep final : public Reader {
 public:
  explicit ReadInAStep(std::shared_ptr<Reader> inner) : Reader(inner->schema()), inner_(std::move(inner)) {}
  void setup_ex(Net init_net, std::optional<Net> exit_net) override { inner_->setup_ex(init_net, exit_net); }
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override {
    ReadNets read = inner_->read_ex(local_init_net, local_finish_net);
    read.nets = {moka::execution_step("read_in_a_step", read.nets)};  // not Reader::execution_step
    return read;
  }

 private:
  std::shared_ptr<Reader> inner_;
};

TEST(PipeRecords, AReadEndingInAStepIsCountedInANetOfItsOwn) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 22, "prt");
  const auto before = records_by_pipe();
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(std::make_shared<ReadInAStep>(src.reader({.batch_size = 5})), {.output = dst.writer(), .name = "prt_step"});
  });
  const TaskGroupDef& def = session.compile(tg);
  int count_nets = 0;
  for (const auto& net : def.nodes[0].plan.network)
    if (net.name.find("count_records") != std::string::npos) {
      ++count_nets;
      ASSERT_EQ(net.op.size(), 1u);
      EXPECT_EQ(net.op[0].type, "CountRecords");
    }
  EXPECT_EQ(count_nets, 1);
  session.run(tg);
  EXPECT_EQ(sorted_vals(session, dst).size(), 22u);
  EXPECT_EQ(records_since(before, "local/prt_step"), 22);  // 5 batches, the last of 2; the stopped read not counted
}

// A processor that returns no record (a sink): the pipe still counts what it read.
TEST(PipeRecords, ASinkCountsWhatItReads) {
  LocalSession session;
  auto [src, dst] = make_datasets(session, 25, "prk");
  Net init("prk_init");
  init.op("ConstantFill", {}, {BlobRef("prk_total")}, {{"shape", std::vector<int64_t>{5}}, {"dtype", DType::Int64}});
  session.run(init);
  const auto before = records_by_pipe();
  TaskGroup tg([&, src = src] {
    pipe(src.reader({.batch_size = 5}),
         {.processor = Processor(
              [](const Field& rec) {
                ops::Add({BlobRef("prk_total"), rec["val"]()}, {BlobRef("prk_total")});  // batches of 5
              },
              "prk_sink")});
  });
  session.run(tg);
  const auto total = session.workspace().blob("prk_total").get<Tensor>().values<int64_t>();
  EXPECT_EQ(std::accumulate(total.begin(), total.end(), int64_t{0}), 24 * 25 / 2);
  EXPECT_EQ(records_since(before, "local/prk_sink"), 25);
}

}  // namespace
}  // namespace moka
