// Unit tests of the dataset operators (CreateTreeCursor, ReadNextBatch, ReadRandomBatch, Append, AtomicAppend, ...)
// and of moka::DatasetTree / moka::TreeCursor.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "moka/operators/mutex.h"
#include "moka/operators/tree_cursor.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;
using Strings = std::vector<std::string>;

Argument fields_arg(Strings names) { return make_arg("fields", std::move(names)); }

// Three top-level records in the nested layout of CreateTreeCursor's documentation:
//   record 0: a=10, b=[[0], [1, 2]],   c=[x]
//   record 1: a=11, b=[],              c=[y]
//   record 2: a=12, b=[[3, 4, 5]],     c=[]
const Strings kNested = {"a", "b:lengths", "b:values:lengths", "b:values:values", "c:lengths", "c:c1"};

void feed_nested(Workspace& ws) {
  feed(ws, "a", Tensor::vector<int32_t>({10, 11, 12}));
  feed(ws, "b:lengths", Tensor::vector<int32_t>({2, 0, 1}));
  feed(ws, "b:values:lengths", Tensor::vector<int32_t>({1, 2, 3}));
  feed(ws, "b:values:values", Tensor::vector<float>({0, 1, 2, 3, 4, 5}));
  feed(ws, "c:lengths", Tensor::vector<int64_t>({1, 1, 0}));
  feed(ws, "c:c1", Tensor::vector<std::string>({"x", "y"}));
}

Strings out_names(const std::string& prefix, std::size_t n) {
  Strings v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

Strings with_cursor(const std::string& cursor, const Strings& fields) {
  Strings v{cursor};
  v.insert(v.end(), fields.begin(), fields.end());
  return v;
}

TEST(DatasetTree, ParsesNestedDomains) {
  DatasetTree t(kNested);
  EXPECT_EQ(t.num_fields(), 6u);
  EXPECT_EQ(t.num_length_fields(), 3u);
  EXPECT_EQ(t.num_offset_fields(), 4u);
  EXPECT_EQ(t.domain_of(0), 0u);  // a
  EXPECT_EQ(t.domain_of(1), 0u);  // b:lengths lives at the top level
  EXPECT_EQ(t.domain_of(2), 1u);  // b:values:lengths in domain b
  EXPECT_EQ(t.domain_of(3), 2u);  // b:values:values in domain b:values (longest prefix)
  EXPECT_EQ(t.domain_of(4), 0u);
  EXPECT_EQ(t.domain_of(5), 3u);
  EXPECT_EQ(t.length_field(1), 2u);
  EXPECT_EQ(t.length_index_of(4), 2);
  EXPECT_EQ(t.length_index_of(0), -1);
  // "lengths" alone has an empty prefix and indexes nothing, as in Caffe2.
  DatasetTree bare({"lengths", "x"});
  EXPECT_EQ(bare.domain_of(1), 0u);
}

TEST(DatasetTree, RejectsBadFieldLists) {
  expect_error<InvalidInput>(
      [] {
        DatasetTree({"b:values", "b:lengths"});
      },
      {"Error: Field 0 (b:values) depends on a field defined afterwards: 1 (b:lengths)."});
  expect_error<InvalidInput>([] { DatasetTree({"a", "a"}); }, {"\"a\"", "more than once"});
  expect_error<InvalidInput>([] { DatasetTree({"a", ""}); }, {"empty name"});
}

TEST(TreeCursor, OffsetsForCheckpointing) {
  TreeCursor c(kNested);
  EXPECT_TRUE(c.offsets().empty());
  c.set_offsets({1, 2, 3, 1});
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{1, 2, 3, 1}));
  c.set_offsets({7});  // a random reader's position
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{7}));
  expect_error<InvalidInput>([&] { c.set_offsets({1, 2}); }, {"2 offsets", "4 domains"});
  expect_error<InvalidInput>([&] { c.set_offsets({0, -1, 0, 0}); }, {"negative"});
  c.reset();
  EXPECT_TRUE(c.offsets().empty());
  EXPECT_EQ(c.field_names(), kNested);
}

// claim_flat moves a one-offset position without the mutex; everything that uses the mutex (offsets()
// for checkpoints, set_offsets, reset, offsets_locked for the other reads) still sees and sets it.
TEST(TreeCursor, FlatClaimsAndTheLockedPositionAreOne) {
  TreeCursor c({"a", "b"});
  int64_t start = -1;
  EXPECT_EQ(c.claim_flat(10, 4, start), 4);  // from the empty position
  EXPECT_EQ(start, 0);
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{4}));
  EXPECT_EQ(c.claim_flat(10, 4, start), 4);
  EXPECT_EQ(start, 4);
  EXPECT_EQ(c.claim_flat(10, 4, start), 2);  // the last, partial batch
  EXPECT_EQ(start, 8);
  EXPECT_EQ(c.claim_flat(10, 4, start), 0);  // at the end: nothing, and stays there
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{10}));
  EXPECT_EQ(c.claim_flat(9, 4, start), -1);  // past the end of fewer rows: the caller reports it
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{10}));
  c.set_offsets({3});  // a restored checkpoint
  EXPECT_EQ(c.claim_flat(10, 4, start), 4);
  EXPECT_EQ(start, 3);
  {
    std::lock_guard lk(c.mutex());
    std::vector<int64_t>& off = c.offsets_locked();  // as a nested or random read takes it
    EXPECT_EQ(off, (std::vector<int64_t>{7}));
    off[0] = 8;
  }
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{8}));
  EXPECT_EQ(c.claim_flat(10, 4, start), 2);
  EXPECT_EQ(start, 8);
  c.reset();
  EXPECT_TRUE(c.offsets().empty());
  EXPECT_EQ(c.claim_flat(10, 4, start), 4);
  EXPECT_EQ(start, 0);
  // A nested position is not a flat one.
  TreeCursor nested(kNested);
  nested.set_offsets({1, 2, 3, 1});
  EXPECT_EQ(nested.claim_flat(10, 4, start), -1);
  EXPECT_EQ(nested.offsets(), (std::vector<int64_t>{1, 2, 3, 1}));
}

// Flat readers on several threads claim every row exactly once while another thread takes the
// position under the mutex again and again (as checkpoints, and the other reads, do).
TEST(TreeCursor, ConcurrentFlatReadsClaimEveryRowOnce) {
  constexpr int64_t kRows = 1000000, kBatch = 3;
  constexpr int kThreads = 3;
  TreeCursor c({"a"});
  std::vector<std::vector<int64_t>> claimed(kThreads);
  std::atomic<int> done{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      int64_t start = 0;
      for (int64_t n; (n = c.claim_flat(kRows, kBatch, start)) > 0;)
        for (int64_t k = 0; k < n; ++k) claimed[t].push_back(start + k);
      done.fetch_add(1);
    });
  }
  int64_t last = 0;
  int went_back = 0;
  while (done.load() < kThreads) {
    const std::vector<int64_t> off = c.offsets();
    const int64_t now = off.empty() ? 0 : off.at(0);
    if (now < last) ++went_back;
    last = now;
    {
      std::lock_guard lk(c.mutex());
      const std::vector<int64_t>& locked = c.offsets_locked();
      if (!locked.empty() && locked[0] < last) ++went_back;
    }
  }
  for (auto& th : readers) th.join();
  EXPECT_EQ(went_back, 0);
  std::vector<int64_t> all;
  for (const auto& v : claimed) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> want(kRows);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(all, want);
  EXPECT_EQ(c.offsets(), (std::vector<int64_t>{kRows}));
}

TEST(DatasetOps, CreateTreeCursorAndReset) {
  Workspace ws;
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a"})});
  EXPECT_EQ(ws.blob("cur").type_name(), "TreeCursor");
  TreeCursor* first = &ws.blob("cur").get_checked_mutable<TreeCursor>();
  first->set_offsets({2});
  run_op(ws, "GetCursorOffset", {"cur"}, {"off"});
  EXPECT_EQ(fetch(ws, "off"), Tensor::vector<int32_t>({2}));
  run_op(ws, "ResetCursor", {"cur"}, {});
  EXPECT_TRUE(first->offsets().empty());
  // Same fields again: the same cursor, reset. Different fields: a new cursor.
  first->set_offsets({1});
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a"})});
  EXPECT_EQ(&ws.blob("cur").get<TreeCursor>(), first);
  EXPECT_TRUE(first->offsets().empty());
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a", "b"})});
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().field_names(), (Strings{"a", "b"}));
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "CreateTreeCursor", {}, {"bad"}, {fields_arg({"x:values", "x:lengths"})});
      },
      {"CreateTreeCursor", "depends on a field defined afterwards"});
}

TEST(DatasetOps, ReadNextBatchFlatWithPartialLastBatch) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({0, 1, 2, 3, 4}));
  feed(ws, "s", Tensor::from_vector<std::string>({5, 2}, {"0a", "0b", "1a", "1b", "2a", "2b", "3a", "3b", "4a", "4b"}));
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a", "s"})});
  auto op = create_op(ws, "ReadNextBatch", {"cur", "a", "s"}, {"oa", "os"}, {make_arg("batch_size", 2)});
  auto empty = create_op(ws, "IsEmpty", {"oa"}, {"done"});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor::vector<int64_t>({0, 1}));
  EXPECT_EQ(fetch(ws, "os"), Tensor::from_vector<std::string>({2, 2}, {"0a", "0b", "1a", "1b"}));
  ASSERT_TRUE(empty->run());
  EXPECT_EQ(fetch(ws, "done"), Tensor::scalar<bool>(false));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor::vector<int64_t>({2, 3}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor::vector<int64_t>({4}));
  EXPECT_EQ(fetch(ws, "os"), Tensor::from_vector<std::string>({1, 2}, {"4a", "4b"}));
  for (int i = 0; i < 2; ++i) {  // stays empty at the end
    ASSERT_TRUE(op->run());
    EXPECT_EQ(fetch(ws, "oa"), Tensor(DType::Int64, {0}));
    EXPECT_EQ(fetch(ws, "os"), Tensor(DType::String, {0, 2}));
    ASSERT_TRUE(empty->run());
    EXPECT_EQ(fetch(ws, "done"), Tensor::scalar<bool>(true));
  }
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{5}));
  // Reset starts over.
  run_op(ws, "ResetCursor", {"cur"}, {});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor::vector<int64_t>({0, 1}));
}

TEST(DatasetOps, ReadNextBatchNested) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg(kNested)});
  const Strings outs = out_names("o", kNested.size());
  auto op = create_op(ws, "ReadNextBatch", with_cursor("cur", kNested), outs, {make_arg("batch_size", 2)});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o0"), Tensor::vector<int32_t>({10, 11}));
  EXPECT_EQ(fetch(ws, "o1"), Tensor::vector<int32_t>({2, 0}));
  EXPECT_EQ(fetch(ws, "o2"), Tensor::vector<int32_t>({1, 2}));
  EXPECT_EQ(fetch(ws, "o3"), Tensor::vector<float>({0, 1, 2}));
  EXPECT_EQ(fetch(ws, "o4"), Tensor::vector<int64_t>({1, 1}));
  EXPECT_EQ(fetch(ws, "o5"), Tensor::vector<std::string>({"x", "y"}));
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{2, 2, 3, 2}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o0"), Tensor::vector<int32_t>({12}));
  EXPECT_EQ(fetch(ws, "o1"), Tensor::vector<int32_t>({1}));
  EXPECT_EQ(fetch(ws, "o2"), Tensor::vector<int32_t>({3}));
  EXPECT_EQ(fetch(ws, "o3"), Tensor::vector<float>({3, 4, 5}));
  EXPECT_EQ(fetch(ws, "o4"), Tensor::vector<int64_t>({0}));
  EXPECT_EQ(fetch(ws, "o5"), Tensor(DType::String, {0}));
  ASSERT_TRUE(op->run());
  for (std::size_t i = 0; i < outs.size(); ++i) EXPECT_EQ(fetch(ws, outs[i]).numel(), 0) << outs[i];
  EXPECT_EQ(fetch(ws, "o3").dtype(), DType::Float);
}

TEST(DatasetOps, ReadNextBatchEnforceBatchSize) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int32_t>({0, 1, 2, 3, 4}));
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a"})});
  auto op = create_op(ws, "ReadNextBatch", {"cur", "a"}, {"o"},
                      {make_arg("batch_size", 2), make_arg("enforce_batch_size", true)});
  ASSERT_TRUE(op->run());
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o"), Tensor::vector<int32_t>({2, 3}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o"), Tensor(DType::Int32, {0}));  // one row left: not a full batch
}

// A record without lists takes ReadNextBatch's flat path: the same rows, limits and errors as the tree walk.
TEST(DatasetOps, ReadNextBatchFlatLimitsAndErrors) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({0, 1, 2, 3, 4}));
  feed(ws, "b", Tensor::from_vector<float>({3, 2}, {0, 0.5f, 1, 1.5f, 2, 2.5f}));  // fewer rows: it limits
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a", "b"})});
  auto op = create_op(ws, "ReadNextBatch", {"cur", "a", "b"}, {"oa", "ob"}, {make_arg("batch_size", 2)});
  ASSERT_TRUE(op->run());
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor::vector<int64_t>({2}));
  EXPECT_EQ(fetch(ws, "ob"), Tensor::from_vector<float>({1, 2}, {2, 2.5f}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "oa"), Tensor(DType::Int64, {0}));
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{3}));
  // A restored cursor past the data: the tree walk's error, and the cursor stays.
  ws.blob("cur").get_checked_mutable<TreeCursor>().set_offsets({9});
  expect_error<InvalidInput>([&] { op->run(); },
                             {"ReadNextBatch", "Tried to advance past end of cursor.", "offset 9", "3 rows"});
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{9}));
  // A 0-d field and a field never written.
  run_op(ws, "ResetCursor", {"cur"}, {});
  feed(ws, "scalar", Tensor::scalar<float>(1));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "ReadNextBatch", {"cur", "a", "scalar"}, {"oa", "ob"});
      },
      {"ReadNextBatch", "field 1 (b)", "\"scalar\"", "0-d"});
  ws.create_blob("never");
  expect_error<TypeError>(
      [&] {
        run_op(ws, "ReadNextBatch", {"cur", "never", "b"}, {"oa", "ob"});
      },
      {"ReadNextBatch", "\"never\""});
  EXPECT_TRUE(ws.blob("cur").get<TreeCursor>().offsets().empty());
}

TEST(DatasetOps, ReadNextBatchEveryDtype) {
  for (DType dt : {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64, DType::Float,
                   DType::Double, DType::String}) {
    Workspace ws;
    Tensor t(dt, {4, 2});
    visit_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      T* p = t.mutable_data<T>();
      for (int i = 0; i < 8; ++i) {
        if constexpr (std::is_same_v<T, std::string>)
          p[i] = std::to_string(i);
        else if constexpr (std::is_same_v<T, bool>)
          p[i] = (i % 3) == 0;
        else
          p[i] = static_cast<T>(i);
      }
    });
    feed(ws, "f", t);
    run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"f"})});
    auto op = create_op(ws, "ReadNextBatch", {"cur", "f"}, {"o"}, {make_arg("batch_size", 3)});
    ASSERT_TRUE(op->run());
    const Tensor& o = fetch(ws, "o");
    ASSERT_EQ(o.shape(), (std::vector<int64_t>{3, 2})) << dtype_name(dt);
    visit_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      for (int i = 0; i < 6; ++i) EXPECT_EQ(o.data<T>()[i], t.data<T>()[i]) << dtype_name(dt);
    });
    ASSERT_TRUE(op->run());
    EXPECT_EQ(fetch(ws, "o").shape(), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(fetch(ws, "o").dtype(), dt);
  }
}

// A vector of dtype dt holding the numbers `at` (strings "0", "1", ...; bools true for multiples of 3).
Tensor vector_of(DType dt, const std::vector<int64_t>& at) {
  Tensor t(dt, {static_cast<int64_t>(at.size())});
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.mutable_data<T>();
    for (std::size_t i = 0; i < at.size(); ++i) {
      if constexpr (std::is_same_v<T, std::string>)
        p[i] = std::to_string(at[i]);
      else if constexpr (std::is_same_v<T, bool>)
        p[i] = at[i] % 3 == 0;
      else
        p[i] = static_cast<T>(at[i]);
    }
  });
  return t;
}

// vector_of(dt, {first, first + 1, ..., first + n - 1}).
Tensor counting_vector(DType dt, int64_t n, int64_t first = 0) {
  std::vector<int64_t> at(static_cast<std::size_t>(n));
  std::iota(at.begin(), at.end(), first);
  return vector_of(dt, at);
}

// Reads of 1-d fields copy into the output's own storage when it already holds a vector of the
// field's dtype (the pipe's steady state). Whatever the output held before — a longer or shorter
// vector, another dtype, a 2-d tensor, not a tensor — every batch must read exactly its rows.
TEST(DatasetOps, ReadNextBatchOfVectorsIgnoresWhatTheOutputHeld) {
  for (DType dt : {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64, DType::Float,
                   DType::Double, DType::String}) {
    SCOPED_TRACE(dtype_name(dt));
    Workspace ws;
    feed(ws, "f", counting_vector(dt, 7));
    feed(ws, "long", counting_vector(dt, 50, 100));
    feed(ws, "other", counting_vector(dt == DType::Float ? DType::Int32 : DType::Float, 3, 100));
    feed(ws, "matrix", Tensor(dt, {2, 2}));
    ws.create_blob("mutex")->emplace<BlobMutex>();
    for (const char* held : {"long", "other", "matrix", "mutex"}) {
      SCOPED_TRACE(held);
      run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"f"})});
      if (std::string(held) == "mutex")
        ws.create_blob("o")->emplace<BlobMutex>();
      else
        feed(ws, "o", fetch(ws, held));
      auto op = create_op(ws, "ReadNextBatch", {"cur", "f"}, {"o"}, {make_arg("batch_size", 3)});
      for (int64_t first : {0, 3, 6, 7, 7}) {
        ASSERT_TRUE(op->run());
        EXPECT_EQ(fetch(ws, "o"), counting_vector(dt, std::min<int64_t>(3, 7 - first), first)) << "rows from " << first;
      }
    }
    // Appending vectors (AtomicAppend's and Append's steady state) keeps every row, across growth.
    feed(ws, "d", counting_vector(dt, 0));
    ws.create_blob("mu")->emplace<BlobMutex>();
    feed(ws, "part", counting_vector(dt, 0));
    auto append = create_op(ws, "AtomicAppend", {"mu", "d", "part"}, {"d"});
    for (int64_t first = 0; first < 40; first += 4) {
      feed(ws, "part", counting_vector(dt, first % 8 == 0 ? 4 : 0, first));  // every other part is empty
      ASSERT_TRUE(append->run());
    }
    std::vector<int64_t> want;
    for (int64_t first = 0; first < 40; first += 8)
      for (int64_t k = 0; k < 4; ++k) want.push_back(first + k);
    EXPECT_EQ(fetch(ws, "d"), vector_of(dt, want));
    EXPECT_EQ(fetch(ws, "d").dim(0), 20);
  }
}

// Several threads share one cursor: every top-level row (with its nested values) is read exactly once.
TEST(DatasetOps, ConcurrentReadNextBatchReadsEveryRowOnce) {
  constexpr int kRows = 3000, kThreads = 4;
  Workspace ws;
  std::vector<int64_t> ids, lengths, values;
  for (int r = 0; r < kRows; ++r) {
    ids.push_back(r);
    lengths.push_back(r % 4);
    for (int k = 0; k < r % 4; ++k) values.push_back(r * 10 + k);
  }
  feed(ws, "id", Tensor::vector<int64_t>(ids));
  feed(ws, "v:lengths", Tensor::vector<int64_t>(lengths));
  feed(ws, "v:values", Tensor::vector<int64_t>(values));
  const Strings fields = {"id", "v:lengths", "v:values"};
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg(fields)});
  std::vector<std::unique_ptr<OperatorBase>> ops;
  for (int t = 0; t < kThreads; ++t)
    ops.push_back(create_op(ws, "ReadNextBatch", with_cursor("cur", fields),
                            out_names("t" + std::to_string(t) + "_", 3), {make_arg("batch_size", 7)}));
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string p = "t" + std::to_string(t) + "_";
      while (true) {
        ops[t]->run();
        const auto got = vals<int64_t>(fetch(ws, p + "0"));
        if (got.empty()) break;
        const auto len = vals<int64_t>(fetch(ws, p + "1"));
        const auto val = vals<int64_t>(fetch(ws, p + "2"));
        std::size_t at = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (len[i] != got[i] % 4) ++bad[t];
          for (int64_t k = 0; k < len[i]; ++k)
            if (at >= val.size() || val[at++] != got[i] * 10 + k) ++bad[t];
        }
        if (at != val.size()) ++bad[t];
        seen[t].insert(seen[t].end(), got.begin(), got.end());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<int64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(bad[t], 0);
    all.insert(all.end(), seen[t].begin(), seen[t].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, ids);
}

TEST(DatasetOps, ComputeOffsetMatrix) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg(kNested)});
  ws.blob("cur").get_checked_mutable<TreeCursor>().set_offsets({1, 2, 3, 1});
  run_op(ws, "ComputeOffset", with_cursor("cur", kNested), {"offsets"});
  EXPECT_EQ(fetch(ws, "offsets"), Tensor::from_vector<int64_t>({4, 4}, {0, 0, 0, 0,  //
                                                                        1, 2, 3, 1,  //
                                                                        2, 2, 3, 2,  //
                                                                        3, 3, 6, 2}));
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(DatasetOps, SortAndShuffleIsSeededAndDeterministic) {
  Workspace ws;
  std::vector<int32_t> key;
  for (int i = 0; i < 100; ++i) key.push_back((i * 37) % 100);
  feed(ws, "id", Tensor::vector<int32_t>(key));
  feed(ws, "k", Tensor::vector<int32_t>(key));
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"id", "k"})});
  auto shuffled = [&](int64_t seed, int64_t bs, int64_t ss, int64_t sort_idx) {
    run_op(ws, "SortAndShuffle", {"cur", "id", "k"}, {"idx"},
           {make_arg("seed", seed), make_arg("batch_size", bs), make_arg("shuffle_size", ss),
            make_arg("sort_by_field_idx", sort_idx)});
    return vals<int64_t>(fetch(ws, "idx"));
  };
  const auto a = shuffled(7, 1, 1, -1);
  EXPECT_EQ(a, shuffled(7, 1, 1, -1));
  EXPECT_NE(a, shuffled(8, 1, 1, -1));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(sorted[i], i);
  // Sorted by "k", chunks of one batch (size 10): each batch holds 10 consecutive keys.
  const auto b = shuffled(3, 10, 1, 1);
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<int32_t> keys;
    for (int j = 0; j < 10; ++j) keys.push_back(key[static_cast<std::size_t>(b[batch * 10 + j])]);
    std::sort(keys.begin(), keys.end());
    for (int j = 1; j < 10; ++j) EXPECT_EQ(keys[j], keys[0] + j);
    EXPECT_EQ(keys[0] % 10, 0);
  }
  // Incomplete last batch stays last.
  const auto c = shuffled(3, 30, 1, 1);
  std::set<int32_t> tail;
  for (int j = 90; j < 100; ++j) tail.insert(key[static_cast<std::size_t>(c[j])]);
  EXPECT_EQ(*tail.begin(), 90);
  expect_error<InvalidInput>([&] { shuffled(0, 1, 1, 2); }, {"SortAndShuffle", "sort_by_field_idx", "2 fields"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "SortAndShuffle", {"cur", "id", "k"}, {"i"}, {make_arg("batch_size", 0)});
      },
      {"SortAndShuffle", "batch_size"});
}

TEST(DatasetOps, ReadRandomBatchNested) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg(kNested)});
  run_op(ws, "ComputeOffset", with_cursor("cur", kNested), {"offsets"});
  feed(ws, "idx", Tensor::vector<int64_t>({2, 0, 1}));
  Strings in = {"cur", "idx", "offsets"};
  in.insert(in.end(), kNested.begin(), kNested.end());
  const Strings outs = out_names("o", kNested.size());
  auto op = create_op(ws, "ReadRandomBatch", in, outs, {make_arg("batch_size", 2)});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o0"), Tensor::vector<int32_t>({12, 10}));
  EXPECT_EQ(fetch(ws, "o1"), Tensor::vector<int32_t>({1, 2}));
  EXPECT_EQ(fetch(ws, "o2"), Tensor::vector<int32_t>({3, 1, 2}));
  EXPECT_EQ(fetch(ws, "o3"), Tensor::vector<float>({3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(fetch(ws, "o4"), Tensor::vector<int64_t>({0, 1}));
  EXPECT_EQ(fetch(ws, "o5"), Tensor::vector<std::string>({"x"}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o0"), Tensor::vector<int32_t>({11}));
  EXPECT_EQ(fetch(ws, "o3"), Tensor(DType::Float, {0}));
  EXPECT_EQ(fetch(ws, "o5"), Tensor::vector<std::string>({"y"}));
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "o0"), Tensor(DType::Int32, {0}));
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets().size(), 1u);

  // loop_over starts again; enforce_batch_size skips the short last batch.
  run_op(ws, "ResetCursor", {"cur"}, {});
  auto loop = create_op(ws, "ReadRandomBatch", in, outs,
                        {make_arg("batch_size", 2), make_arg("loop_over", true), make_arg("enforce_batch_size", true)});
  std::vector<int32_t> got;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(loop->run());
    auto v = vals<int32_t>(fetch(ws, "o0"));
    got.insert(got.end(), v.begin(), v.end());
  }
  EXPECT_EQ(got, (std::vector<int32_t>{12, 10, 12, 10, 12, 10}));
  // A cursor moved by ReadRandomBatch cannot be used by ReadNextBatch without a reset.
  auto seq = create_op(ws, "ReadNextBatch", with_cursor("cur", kNested), outs);
  expect_error<InvalidInput>([&] { seq->run(); }, {"ReadNextBatch", "ReadRandomBatch"});
  // Bad index / offsets.
  feed(ws, "bad_idx", Tensor::vector<int64_t>({5}));
  Strings bad = in;
  bad[1] = "bad_idx";
  run_op(ws, "ResetCursor", {"cur"}, {});
  expect_error<InvalidInput>([&] { run_op(ws, "ReadRandomBatch", bad, outs); },
                             {"ReadRandomBatch", "Out of bound when trying to get elem from offsetsmat"});
  bad[1] = "idx";
  bad[2] = "a";
  expect_error<TypeError>([&] { run_op(ws, "ReadRandomBatch", bad, outs); }, {"ReadRandomBatch", "offsets matrix"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "ReadRandomBatch", {"cur", "idx", "offsets", "a"}, {"x"});
      },
      {"ReadRandomBatch", "Invalid number of fields. Expected 6, got 1"});
}

// Random reads in a seeded order are the same every time.
TEST(DatasetOps, RandomReadsAreDeterministicForASeed) {
  auto read_all = [](int64_t seed) {
    Workspace ws;
    std::vector<int64_t> v(50);
    std::iota(v.begin(), v.end(), 0);
    feed(ws, "a", Tensor::vector<int64_t>(v));
    run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg({"a"})});
    run_op(ws, "ComputeOffset", {"cur", "a"}, {"off"});
    run_op(ws, "SortAndShuffle", {"cur", "a"}, {"idx"},
           {make_arg("sort_by_field_idx", -1), make_arg("batch_size", 4), make_arg("seed", seed)});
    auto op = create_op(ws, "ReadRandomBatch", {"cur", "idx", "off", "a"}, {"o"}, {make_arg("batch_size", 4)});
    std::vector<int64_t> got;
    while (true) {
      op->run();
      auto b = vals<int64_t>(fetch(ws, "o"));
      if (b.empty()) break;
      got.insert(got.end(), b.begin(), b.end());
    }
    return got;
  };
  const auto a = read_all(11);
  EXPECT_EQ(a.size(), 50u);
  EXPECT_EQ(a, read_all(11));
  EXPECT_NE(a, read_all(12));
}

TEST(DatasetOps, CheckDatasetConsistency) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "CheckDatasetConsistency", kNested, {}, {fields_arg(kNested)});
  // Lengths that add up to more (or fewer) values than there are.
  feed(ws, "long", Tensor::vector<int32_t>({1, 2, 4}));
  Strings in = kNested;
  in[2] = "long";
  expect_error<InvalidInput>([&] { run_op(ws, "CheckDatasetConsistency", in, {}, {fields_arg(kNested)}); },
                             {"CheckDatasetConsistency", "Inconsistent field length"});
  feed(ws, "short", Tensor::vector<int32_t>({1, 2, 2}));
  in[2] = "short";
  expect_error<InvalidInput>([&] { run_op(ws, "CheckDatasetConsistency", in, {}, {fields_arg(kNested)}); },
                             {"CheckDatasetConsistency", "b:values:lengths", "add up to 5", "6 rows"});
  // Two top-level fields with different row counts.
  feed(ws, "a4", Tensor::vector<int32_t>({1, 2, 3, 4}));
  in = kNested;
  in[0] = "a4";
  expect_error<InvalidInput>([&] { run_op(ws, "CheckDatasetConsistency", in, {}, {fields_arg(kNested)}); },
                             {"Inconsistent sizes for fields belonging to same domain.", "Field: 1 (b:lengths)",
                              "Previous size: 4; New size: 3"});
  // Negative length, float lengths, 0-d field.
  feed(ws, "neg", Tensor::vector<int32_t>({-1, 2, 5}));
  in = kNested;
  in[2] = "neg";
  expect_error<InvalidInput>([&] { run_op(ws, "CheckDatasetConsistency", in, {}, {fields_arg(kNested)}); },
                             {"CheckDatasetConsistency", "negative length -1"});
  feed(ws, "flt", Tensor::vector<float>({1, 2, 3}));
  in[2] = "flt";
  expect_error<TypeError>([&] { run_op(ws, "CheckDatasetConsistency", in, {}, {fields_arg(kNested)}); },
                          {"CheckDatasetConsistency", "b:values:lengths", "1-d int32 or int64", "float32[3]"});
  feed(ws, "scalar", Tensor::scalar<int32_t>(1));
  expect_error<InvalidInput>([&] { run_op(ws, "CheckDatasetConsistency", {"scalar"}, {}, {fields_arg({"a"})}); },
                             {"CheckDatasetConsistency", "0-d"});
  // A flat record (no lengths fields): equal row counts pass, different ones fail.
  feed(ws, "f1", Tensor::vector<float>({1, 2, 3}));
  feed(ws, "f2", Tensor::vector<int64_t>({4, 5, 6}));
  run_op(ws, "CheckDatasetConsistency", {"f1", "f2"}, {}, {fields_arg({"p", "q"})});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "CheckDatasetConsistency", {"f1", "a4"}, {}, {fields_arg({"p", "q"})});
      },
      {"Inconsistent sizes for fields belonging to same domain.", "Field: 1 (q)", "Previous size: 3; New size: 4"});
  // Wrong number of fields: caught when the operator is created.
  expect_error<InvalidInput>([&] { create_op(ws, "CheckDatasetConsistency", {"a"}, {}, {fields_arg(kNested)}); },
                             {"CheckDatasetConsistency", "Invalid number of fields. Expected 6, got 1"});
}

TEST(DatasetOps, AppendGrowsInPlace) {
  Workspace ws;
  feed(ws, "a", Tensor::from_vector<int64_t>({1, 2}, {1, 2}));
  feed(ws, "b", Tensor::from_vector<int64_t>({2, 2}, {3, 4, 5, 6}));
  run_op(ws, "Append", {"a", "b"}, {"a"});
  EXPECT_EQ(fetch(ws, "a"), Tensor::from_vector<int64_t>({3, 2}, {1, 2, 3, 4, 5, 6}));
  // As in Caffe2, only input 0 may be the output.
  expect_error<InvalidInput>([&] { create_op(ws, "Append", {"a", "a"}, {"a"}); }, {"Append", "in place"});
  // An empty column is replaced (whatever its dtype, as InitEmptyRecord makes them).
  feed(ws, "s", Tensor(DType::Float, {0}));
  feed(ws, "t", Tensor::vector<std::string>({"p", "q"}));
  run_op(ws, "Append", {"s", "t"}, {"s"});
  run_op(ws, "Append", {"s", "t"}, {"s"});
  EXPECT_EQ(fetch(ws, "s"), Tensor::vector<std::string>({"p", "q", "p", "q"}));
  // Mismatches.
  feed(ws, "f", Tensor::from_vector<float>({1, 2}, {1, 2}));
  expect_error<InvalidInput>([&] { run_op(ws, "Append", {"a", "f"}, {"a"}); }, {"Append", "dtypes differ"});
  feed(ws, "w", Tensor::from_vector<int64_t>({1, 3}, {1, 2, 3}));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "Append", {"a", "w"}, {"a"});
      },
      {"Append", "all dimensions but the first"});
  feed(ws, "z", Tensor::scalar<int64_t>(1));
  expect_error<InvalidInput>([&] { run_op(ws, "Append", {"a", "z"}, {"a"}); }, {"Append", "0-d"});
  expect_error<InvalidInput>([&] { create_op(ws, "Append", {"a", "b"}, {"c"}); }, {"Append", "in place"});
  ws.create_blob("cnt")->emplace<BlobMutex>();
  expect_error<TypeError>([&] { run_op(ws, "Append", {"cnt", "b"}, {"cnt"}); }, {"Append", "BlobMutex"});
}

TEST(DatasetOps, AppendIsAmortizedLinear) {
  Workspace ws;
  feed(ws, "a", Tensor(DType::Int64, {0}));
  feed(ws, "row", Tensor::vector<int64_t>({7}));
  auto op = create_op(ws, "Append", {"a", "row"}, {"a"});
  const auto start = std::chrono::steady_clock::now();
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) op->run();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(fetch(ws, "a").dim(0), kN);
  EXPECT_LT(secs, 5.0);  // quadratic copying would take minutes
}

TEST(DatasetOps, AtomicAppendFromSeveralThreads) {
  constexpr int kThreads = 4, kAppends = 300;
  Workspace ws;
  run_op(ws, "CreateMutex", {}, {"mu"});
  feed(ws, "d:lengths", Tensor(DType::Int32, {0}));
  feed(ws, "d:values", Tensor(DType::String, {0}));
  std::vector<std::unique_ptr<OperatorBase>> ops;
  for (int t = 0; t < kThreads; ++t) {
    const std::string p = "n" + std::to_string(t);
    // Each batch: one record with t+1 values.
    feed(ws, p + "l", Tensor::vector<int32_t>({t + 1}));
    feed(ws, p + "v", Tensor::vector<std::string>(std::vector<std::string>(static_cast<std::size_t>(t + 1), p)));
    ops.push_back(
        create_op(ws, "AtomicAppend", {"mu", "d:lengths", "d:values", p + "l", p + "v"}, {"d:lengths", "d:values"}));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppends; ++i) ops[t]->run();
    });
  for (auto& th : threads) th.join();
  const auto len = vals<int32_t>(fetch(ws, "d:lengths"));
  const auto v = vals<std::string>(fetch(ws, "d:values"));
  ASSERT_EQ(len.size(), static_cast<std::size_t>(kThreads * kAppends));
  std::size_t at = 0;
  for (int32_t l : len) {  // every record's values are contiguous and belong to it
    const std::string want = "n" + std::to_string(l - 1);
    for (int k = 0; k < l; ++k) ASSERT_EQ(v.at(at++), want);
  }
  EXPECT_EQ(at, v.size());
  run_op(ws, "CheckDatasetConsistency", {"d:lengths", "d:values"}, {}, {fields_arg({"d:lengths", "d:values"})});
}

TEST(DatasetOps, AtomicAppendIsAllOrNothingAndChecksInputs) {
  Workspace ws;
  run_op(ws, "CreateMutex", {}, {"mu"});
  feed(ws, "x", Tensor::vector<int32_t>({1}));
  feed(ws, "y", Tensor::vector<int32_t>({2}));
  feed(ws, "nx", Tensor::vector<int32_t>({3}));
  feed(ws, "ny", Tensor::vector<float>({4}));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "AtomicAppend", {"mu", "x", "y", "nx", "ny"}, {"x", "y"});
      },
      {"AtomicAppend", "dtypes differ", "\"ny\""});
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int32_t>({1}));  // untouched
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "AtomicAppend", {"mu", "x", "nx"}, {"z"});
      },
      {"AtomicAppend", "Appended-to arguments must be in-place."});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "AtomicAppend", {"mu", "x", "y", "nx"}, {"x"});
      },
      {"AtomicAppend", "4 inputs"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "AtomicAppend", {"mu", "x", "nx"}, {"x", "y"});
      },
      {"AtomicAppend", "2 outputs"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "AtomicAppend", {"x", "x", "nx"}, {"x"});
      },
      {"AtomicAppend", "input 0 (\"x\")", "mutex"});
  // A dataset field may also be appended to itself.
  run_op(ws, "AtomicAppend", {"mu", "x", "x"}, {"x"});
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int32_t>({1, 1}));
}

// New fields that are the dataset's own fields, crossed: each is appended as it was before the
// operator ran (the operator works out which inputs alias its outputs once, when it is made).
TEST(DatasetOps, AtomicAppendOfCrossedDatasetFieldsUsesTheirValuesBefore) {
  Workspace ws;
  ws.create_blob("mu")->emplace<BlobMutex>();
  feed(ws, "x", Tensor::vector<int32_t>({1, 2}));
  feed(ws, "y", Tensor::vector<int32_t>({7, 8}));
  auto op = create_op(ws, "AtomicAppend", {"mu", "x", "y", "y", "x"}, {"x", "y"});
  op->run();
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int32_t>({1, 2, 7, 8}));
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<int32_t>({7, 8, 1, 2}));
  op->run();  // the same operator again: the aliasing still holds
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int32_t>({1, 2, 7, 8, 7, 8, 1, 2}));
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<int32_t>({7, 8, 1, 2, 1, 2, 7, 8}));
}

TEST(DatasetOps, TrimDataset) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "TrimDataset", kNested, kNested, {fields_arg(kNested), make_arg("multiple_of", 2)});
  EXPECT_EQ(fetch(ws, "a"), Tensor::vector<int32_t>({10, 11}));
  EXPECT_EQ(fetch(ws, "b:lengths"), Tensor::vector<int32_t>({2, 0}));
  EXPECT_EQ(fetch(ws, "b:values:lengths"), Tensor::vector<int32_t>({1, 2}));
  EXPECT_EQ(fetch(ws, "b:values:values"), Tensor::vector<float>({0, 1, 2}));
  EXPECT_EQ(fetch(ws, "c:lengths"), Tensor::vector<int64_t>({1, 1}));
  EXPECT_EQ(fetch(ws, "c:c1"), Tensor::vector<std::string>({"x", "y"}));
  run_op(ws, "TrimDataset", kNested, kNested, {fields_arg(kNested), make_arg("multiple_of", 2)});  // no-op
  EXPECT_EQ(fetch(ws, "a").dim(0), 2);
  Strings wrong = kNested;
  wrong[1] = "zz";
  expect_error<InvalidInput>([&] { create_op(ws, "TrimDataset", kNested, wrong, {fields_arg(kNested)}); },
                             {"TrimDataset", "in place"});
  expect_error<InvalidInput>([&] { create_op(ws, "TrimDataset", {"a"}, {"a"}, {fields_arg(kNested)}); },
                             {"TrimDataset", "Invalid number of fields"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "TrimDataset", {"a"}, {"a"}, {fields_arg({"a"}), make_arg("multiple_of", 0)});
      },
      {"TrimDataset", "multiple_of"});
}

TEST(DatasetOps, ReadNextBatchBadInputs) {
  Workspace ws;
  feed_nested(ws);
  run_op(ws, "CreateTreeCursor", {}, {"cur"}, {fields_arg(kNested)});
  const Strings outs = out_names("o", kNested.size());
  // The cursor blob holds a tensor.
  expect_error<TypeError>([&] { run_op(ws, "ReadNextBatch", with_cursor("a", kNested), outs); },
                          {"ReadNextBatch", "input 0 (\"a\")", "TreeCursor"});
  expect_error<TypeError>([&] { run_op(ws, "ResetCursor", {"a"}, {}); }, {"ResetCursor", "TreeCursor"});
  expect_error<TypeError>([&] { run_op(ws, "ComputeOffset", {"a", "a"}, {"x"}); }, {"ComputeOffset", "TreeCursor"});
  // Field blob count and output count.
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "ReadNextBatch", {"cur", "a"}, {"o0"});
      },
      {"ReadNextBatch", "Invalid number of fields. Expected 6, got 1"});
  expect_error<InvalidInput>([&] { run_op(ws, "ReadNextBatch", with_cursor("cur", kNested), {"o0"}); },
                             {"ReadNextBatch", "one output per field (6), got 1"});
  expect_error<InvalidInput>([&] { create_op(ws, "ReadNextBatch", {}, {"o"}); }, {"ReadNextBatch", "input"});
  expect_error<InvalidInput>(
      [&] { create_op(ws, "ReadNextBatch", with_cursor("cur", kNested), outs, {make_arg("batch_size", 0)}); },
      {"ReadNextBatch", "\"batch_size\" = 0"});
  // Lengths that run past the values: an error naming the operator, and the cursor does not move.
  feed(ws, "long", Tensor::vector<int32_t>({1, 2, 9}));
  Strings in = with_cursor("cur", kNested);
  in[3] = "long";
  auto op = create_op(ws, "ReadNextBatch", in, outs, {make_arg("batch_size", 3)});
  expect_error<InvalidInput>([&] { op->run(); }, {"ReadNextBatch", "Inconsistent field length"});
  EXPECT_EQ(ws.blob("cur").get<TreeCursor>().offsets(), (std::vector<int64_t>{0, 0, 0, 0}));
  // A field blob that was never written.
  ws.create_blob("empty");
  in[3] = "empty";
  expect_error<TypeError>([&] { run_op(ws, "ReadNextBatch", in, outs); }, {"ReadNextBatch", "\"empty\"", "nothing"});
  // Data shrank under a restored cursor.
  ws.blob("cur").get_checked_mutable<TreeCursor>().set_offsets({9, 0, 0, 0});
  expect_error<InvalidInput>([&] { run_op(ws, "ReadNextBatch", with_cursor("cur", kNested), outs); },
                             {"ReadNextBatch", "Tried to advance past end of cursor."});
}

TEST(DatasetOps, IsEmpty) {
  Workspace ws;
  feed(ws, "e", Tensor(DType::String, {3, 0}));
  feed(ws, "s", Tensor::scalar<float>(1));
  run_op(ws, "IsEmpty", {"e"}, {"r"});
  EXPECT_EQ(fetch(ws, "r"), Tensor::scalar<bool>(true));
  run_op(ws, "IsEmpty", {"s"}, {"r"});
  EXPECT_EQ(fetch(ws, "r"), Tensor::scalar<bool>(false));
  ws.create_blob("nothing");
  expect_error<TypeError>([&] { run_op(ws, "IsEmpty", {"nothing"}, {"r"}); }, {"IsEmpty", "\"nothing\""});
}

TEST(DatasetOps, TensorResizeDim0KeepsRows) {
  Tensor t = Tensor::from_vector<std::string>({2, 2}, {"a", "b", "c", "d"});
  t.resize_dim0(3);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.data<std::string>()[3], "d");
  t.resize_dim0(1);
  EXPECT_EQ(t, Tensor::from_vector<std::string>({1, 2}, {"a", "b"}));
  Tensor n = Tensor::vector<double>({1.5, 2.5});
  for (int i = 0; i < 1000; ++i) n.resize_dim0(n.dim(0) + 1);
  EXPECT_EQ(n.data<double>()[1], 2.5);
  // Rows beyond what the storage held before are zero...
  EXPECT_EQ(n.data<double>()[1000], 0.0);
  // ...unless an append's resize skips the zeroing; the rows kept are kept either way.
  n.resize_dim0(2000, /*zero_new=*/false);
  EXPECT_EQ(n.dim(0), 2000);
  EXPECT_EQ(n.data<double>()[0], 1.5);
  EXPECT_EQ(n.data<double>()[2], 0.0);
  EXPECT_THROW(n.resize_dim0(-1), InvalidInput);
  Tensor s = Tensor::scalar<int32_t>(1);
  EXPECT_THROW(s.resize_dim0(2), TypeError);
}

// Caffe2's InitEmptyRecord and readers rely on ConstantFill taking input 0's shape.
TEST(DatasetOps, ConstantFillTakesTheShapeOfItsInput) {
  Workspace ws;
  feed(ws, "like", Tensor::vector<std::string>({"a", "b", "c"}));
  run_op(ws, "ConstantFill", {"like"}, {"o"}, {make_arg("value", int64_t{5}), make_arg("dtype", int64_t{10})});
  EXPECT_EQ(fetch(ws, "o"), Tensor::vector<int64_t>({5, 5, 5}));
  feed(ws, "m", Tensor(DType::Int32, {2, 0}));
  run_op(ws, "ConstantFill", {"m"}, {"o"}, {make_arg("value", 1.0)});
  EXPECT_EQ(fetch(ws, "o"), Tensor(DType::Float, {2, 0}));
}

}  // namespace
}  // namespace moka
