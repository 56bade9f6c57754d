// Unit tests: Dataset::random_reader run in a LocalSession, through pipe() into a dataset writer —
// every row once, seeded order (same seed → same order, another seed → another), batches, loop_over, and
// sharded readers (ShardIndices).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using moka::testing::invalid_input;
using schema::Field;

std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<int64_t> values_of(const Tensor& t) { return {t.values<int64_t>().begin(), t.values<int64_t>().end()}; }

struct RandomReadOptions {
  int64_t rows = 100;
  int64_t seed = 0;
  int64_t batch_size = 1;  // of the reader and of SortAndShuffle
  int32_t num_runtime_threads = 1;
  bool loop_over = false;
  std::optional<int64_t> num_iter{};  // given: the reader is wrapped in ReaderWithLimit
  bool shuffle = true;                // false: no SortAndShuffle (the records in order)
  int64_t num_shards = 0;             // > 0: the reader reads shard shard_id of num_shards
  int64_t shard_id = 0;
};

// What the destination dataset holds after one run: column "val" (the source row number) and
// "sq" (10 × val, to check that the columns of a row stay together), in append order.
struct ReadResult {
  std::vector<int64_t> val, sq;
};

// A fresh session: source rows 0..rows-1, a random reader shuffled with seed, piped into an
// empty dataset of the same schema; runs the pipe once and fetches the destination.
ReadResult read_randomly(const RandomReadOptions& o) {
  LocalSession session;
  Net init("rr_init");
  std::vector<int64_t> sq = iota(o.rows);
  for (auto& v : sq) v *= 10;
  schema::Struct values({{"val", schema::Scalar(Tensor::vector<int64_t>(iota(o.rows)))},
                         {"sq", schema::Scalar(Tensor::vector<int64_t>(sq))}});
  Field src_blobs = name_scope("rr_src", [&] { return schema::NewRecord(init, values); });
  schema::FeedRecord(src_blobs, values, session.workspace());
  Dataset src(src_blobs, "rr_src");
  Dataset dst(values.clone_schema(), "rr_dst");
  name_scope("rr_dst", [&] { dst.init_empty(init); });

  // As Caffe2's dataset test: the cursor, the index and the offsets are made by an init net that
  // runs before the pipe (the reader's setup in the pipe's task then adds nothing).
  auto reader = src.random_reader({.init_net = init, .batch_size = o.batch_size, .loop_over = o.loop_over});
  if (o.shuffle) reader->sort_and_shuffle(init, "", /*shuffle_size=*/1, o.batch_size, {{"seed", o.seed}});
  reader->compute_offset(init);
  if (o.num_shards > 0) reader->shard(init, o.shard_id, o.num_shards);
  session.run(init);

  std::shared_ptr<Reader> input = reader;
  if (o.num_iter) input = std::make_shared<ReaderWithLimit>(reader, *o.num_iter);
  TaskGroup tg([&] { pipe(input, {.output = dst.writer(), .num_runtime_threads = o.num_runtime_threads}); });
  session.run(tg);

  const Field got = schema::FetchRecord(dst.content(), session.workspace());
  return {values_of(*got["val"].value()), values_of(*got["sq"].value())};
}

void expect_rows_consistent(const ReadResult& r) {
  ASSERT_EQ(r.val.size(), r.sq.size());
  for (std::size_t i = 0; i < r.val.size(); ++i) EXPECT_EQ(r.sq[i], 10 * r.val[i]) << "row " << i;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(RandomReader, EveryRowOnceInASeededOrder) {
  const ReadResult r = read_randomly({.rows = 200, .seed = 7});
  expect_rows_consistent(r);
  EXPECT_EQ(sorted(r.val), iota(200));
  EXPECT_NE(r.val, iota(200)) << "not shuffled";
}

TEST(RandomReader, SameSeedSameOrderAcrossRuns) {
  const ReadResult a = read_randomly({.rows = 500, .seed = 1234});
  const ReadResult b = read_randomly({.rows = 500, .seed = 1234});
  EXPECT_EQ(a.val, b.val);
  EXPECT_EQ(sorted(a.val), iota(500));
}

TEST(RandomReader, DifferentSeedDifferentOrder) {
  // 500! orders: two seeds giving the same one would be a bug, not chance.
  const ReadResult a = read_randomly({.rows = 500, .seed = 1});
  const ReadResult b = read_randomly({.rows = 500, .seed = 2});
  EXPECT_NE(a.val, b.val);
  EXPECT_EQ(sorted(a.val), sorted(b.val));
}

// batch_size 8 over 100 rows: 12 complete batches shuffled as whole batches, then the
// incomplete last one (rows 96..99) last, as SortAndShuffle documents.
TEST(RandomReader, BatchesOfEight) {
  const ReadResult r = read_randomly({.rows = 100, .seed = 3, .batch_size = 8});
  expect_rows_consistent(r);
  ASSERT_EQ(r.val.size(), 100u);
  EXPECT_EQ(sorted(r.val), iota(100));
  EXPECT_EQ(sorted(std::vector<int64_t>(r.val.end() - 4, r.val.end())), iota(4, 96));
  // Batches are written whole (AtomicAppend), and each holds rows of one source chunk of 8.
  for (std::size_t b = 0; b + 8 <= 96; b += 8) {
    const int64_t chunk = r.val[b] / 8;
    for (std::size_t i = b; i < b + 8; ++i) EXPECT_EQ(r.val[i] / 8, chunk) << "row " << i;
  }
  EXPECT_EQ(read_randomly({.rows = 100, .seed = 3, .batch_size = 8}).val, r.val);
}

// Shards of one dataset (ShardIndices): disjoint, together every record once, each a set of whole batches
// of the reader's batch_size — in order, and of one seeded permutation.
TEST(ShardedReader, ShardsAreDisjointWholeBatchesThatCoverEveryRecord) {
  for (bool shuffle : {false, true}) {
    for (int64_t shards = 1; shards <= 4; ++shards) {
      for (int64_t batch : {1, 3}) {
        const std::string what = fmt::format("shuffle {}, {} shards, batch {}", shuffle, shards, batch);
        std::vector<int64_t> all;
        for (int64_t id = 0; id < shards; ++id) {
          const ReadResult r = read_randomly(
              {.rows = 25, .seed = 9, .batch_size = batch, .shuffle = shuffle, .num_shards = shards, .shard_id = id});
          expect_rows_consistent(r);
          if (!shuffle) {  // blocks id, id + shards, ... of 0..24, in order
            std::vector<int64_t> want;
            for (int64_t start = id * batch; start < 25; start += shards * batch)
              for (int64_t k = start; k < std::min<int64_t>(25, start + batch); ++k) want.push_back(k);
            EXPECT_EQ(r.val, want) << what << ", shard " << id;
          }
          all.insert(all.end(), r.val.begin(), r.val.end());
        }
        EXPECT_EQ(sorted(all), iota(25)) << what;
      }
    }
  }
  // A shuffled shard is a share of the one permutation: the same seed gives the same share.
  EXPECT_EQ(read_randomly({.rows = 40, .seed = 4, .batch_size = 2, .num_shards = 3, .shard_id = 1}).val,
            read_randomly({.rows = 40, .seed = 4, .batch_size = 2, .num_shards = 3, .shard_id = 1}).val);
}

TEST(ShardedReader, AShardThatDoesNotExistIsRefused) {
  for (auto [id, n] : {std::pair<int64_t, int64_t>{2, 2}, {-1, 2}, {1, 1}}) {
    const std::string msg = invalid_input([&] { read_randomly({.rows = 5, .num_shards = n, .shard_id = id}); });
    EXPECT_NE(msg.find(fmt::format("shard {} of {} does not exist", id, n)), std::string::npos) << msg;
  }
  // Before compute_offset there is nothing to shard.
  Net init("no_offsets");
  Dataset ds(schema::ConstRecord(init, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>({1, 2}))}})));
  auto reader = ds.random_reader({.init_net = init});
  EXPECT_NE(invalid_input([&] { reader->shard(init, 0, 2); }).find("needs compute_offset() first"), std::string::npos);
  reader->compute_offset(init);
  EXPECT_NE(invalid_input([&] { reader->shard(init, 0, 0); }).find("shard 0 of 0 does not exist"), std::string::npos);
}

// The operator itself: arguments checked when it is made, an order holding a record the dataset lacks refused.
TEST(ShardedReader, ShardIndicesChecksItsArgumentsAndInputs) {
  LocalSession session;
  Net bad_arg("bad_arg");
  bad_arg.op("ShardIndices", {bad_arg.Const(std::vector<int64_t>{0})}, 1,
             {{"num_shards", int64_t{2}}, {"shard_id", int64_t{5}}});
  EXPECT_NE(invalid_input([&] { session.run(bad_arg); }).find("\"shard_id\" = 5 must be in [0, num_shards = 2)"),
            std::string::npos);
  Net bad_order("bad_order");
  const BlobRef offsets = bad_order
                              .op("GivenTensorInt64Fill", {}, 1,
                                  {{"shape", std::vector<int64_t>{4, 1}}, {"values", std::vector<int64_t>{0, 1, 2, 3}}})
                              .single();
  bad_order.op("ShardIndices", {offsets, bad_order.Const(std::vector<int64_t>{0, 7})}, 1, {{"num_shards", int64_t{2}}});
  EXPECT_NE(invalid_input([&] { session.run(bad_order); }).find("= 7 is not a record of a dataset of 3 rows"),
            std::string::npos);
}

// Several task instances share the cursor: each row still goes out exactly once.
TEST(RandomReader, RuntimeThreadsReadEachRowOnce) {
  for (int64_t batch : {1, 5}) {
    const ReadResult r = read_randomly({.rows = 300, .seed = 11, .batch_size = batch, .num_runtime_threads = 3});
    expect_rows_consistent(r);
    EXPECT_EQ(sorted(r.val), iota(300)) << "batch_size " << batch;
  }
}

// loop_over: the reader starts over at the end (in the same order) instead of stopping; a limit
// ends the stream.
TEST(RandomReader, LoopOverRepeatsTheOrder) {
  const ReadResult r = read_randomly({.rows = 10, .seed = 5, .batch_size = 5, .loop_over = true, .num_iter = 6});
  expect_rows_consistent(r);
  ASSERT_EQ(r.val.size(), 30u);
  const std::vector<int64_t> epoch(r.val.begin(), r.val.begin() + 10);
  EXPECT_EQ(sorted(epoch), iota(10));
  EXPECT_EQ(std::vector<int64_t>(r.val.begin() + 10, r.val.begin() + 20), epoch);
  EXPECT_EQ(std::vector<int64_t>(r.val.begin() + 20, r.val.end()), epoch);
}

// Without loop_over the same limit is not reached: the reader runs out after 2 batches.
TEST(RandomReader, WithoutLoopOverStopsAtTheEnd) {
  const ReadResult r = read_randomly({.rows = 10, .seed = 5, .batch_size = 5, .num_iter = 6});
  EXPECT_EQ(sorted(r.val), iota(10));
}

TEST(RandomReader, BuildErrors) {
  Net init("rre_init");
  Field blobs = name_scope("rre", [&] {
    return schema::ConstRecord(init, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>({1, 2}))}}));
  });
  Dataset ds(blobs, "rre");
  EXPECT_NE(invalid_input([&] { ds.random_reader({.batch_size = 0}); }).find("batch_size must be > 0"),
            std::string::npos);
  Dataset uninit(schema::Struct({{"val", schema::Scalar(DType::Int64)}}), "rre_uninit");
  EXPECT_NE(invalid_input([&] { uninit.random_reader(); }).find("Dataset not initialized."), std::string::npos);
  auto r = ds.random_reader({.init_net = init});
  EXPECT_NE(invalid_input([&] { r->sort_and_shuffle(init, "nope"); }).find("Must be valid field."), std::string::npos);
  Net read("rre_read");
  EXPECT_NE(invalid_input([&] { r->read(read); }).find("sort_and_shuffle not called"), std::string::npos);
  // Without an init net the cursor only exists once setup ran; shuffling before that is refused.
  auto late = ds.random_reader();
  EXPECT_NE(invalid_input([&] { late->compute_offset(init); }).find("setup_ex not called"), std::string::npos);
}

}  // namespace
}  // namespace moka
