// Unit tests of CountRecords: the records of a batch added to a stat, skipped while the stop flag is true.
#include <gtest/gtest.h>

#include "moka/operators/stats.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::feed;

TEST(CountRecordsOp, AddsTheRowsOfEachBatchUnlessStopped) {
  Workspace ws;
  const char* key = "count_records_op_test/rows";
  const int64_t before = StatRegistry::global().get(key);
  feed(ws, "batch", Tensor::vector<float>({1, 2, 3}));
  feed(ws, "stop", Tensor::scalar<bool>(false));
  auto op = create_op(ws, "CountRecords", {"batch", "stop"}, {}, {make_arg("key", std::string(key))});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(StatRegistry::global().get(key), before + 3);
  feed(ws, "batch", Tensor(DType::Int64, {5, 2}));  // 5 records of 2 values
  ASSERT_TRUE(op->run());
  EXPECT_EQ(StatRegistry::global().get(key), before + 8);
  feed(ws, "stop", Tensor::scalar<bool>(true));  // a read that stopped left its outputs as they were
  ASSERT_TRUE(op->run());
  EXPECT_EQ(StatRegistry::global().get(key), before + 8);
  feed(ws, "batch", Tensor(DType::Int64, {0}));
  feed(ws, "stop", Tensor::scalar<bool>(false));
  ASSERT_TRUE(op->run());  // an empty batch adds nothing
  EXPECT_EQ(StatRegistry::global().get(key), before + 8);
  op.reset();  // what the operator counted stays in the registry
  EXPECT_EQ(StatRegistry::global().get(key), before + 8);
  // Without a stop flag every run counts; a 0-d tensor is one record.
  feed(ws, "one", Tensor::scalar<int64_t>(7));
  auto plain = create_op(ws, "CountRecords", {"one"}, {}, {make_arg("key", std::string(key))});
  ASSERT_TRUE(plain->run());
  EXPECT_EQ(StatRegistry::global().get(key), before + 9);
}

TEST(CountRecordsOp, BadKeyStopFlagOrBatchIsNamed) {
  Workspace ws;
  feed(ws, "batch", Tensor::vector<float>({1, 2}));
  feed(ws, "flag", Tensor::vector<bool>({false, true}));
  expect_error<InvalidInput>([&] { create_op(ws, "CountRecords", {"batch"}, {}); }, {"CountRecords", "\"key\""});
  expect_error<InvalidInput>([&] { create_op(ws, "CountRecords", {"batch"}, {}, {make_arg("key", std::string())}); },
                             {"CountRecords", "\"key\"", "non-empty"});
  expect_error<InvalidInput>([&] { create_op(ws, "CountRecords", {}, {}, {make_arg("key", std::string("k"))}); },
                             {"CountRecords", "input"});
  auto two = create_op(ws, "CountRecords", {"batch", "flag"}, {}, {make_arg("key", std::string("k"))});
  expect_error<TypeError>([&] { two->run(); }, {"CountRecords", "stop flag", "\"flag\"", "bool"});
  ws.create_blob("nothing");
  auto empty = create_op(ws, "CountRecords", {"nothing"}, {}, {make_arg("key", std::string("k"))});
  expect_error<TypeError>([&] { empty->run(); }, {"\"nothing\""});
}

}  // namespace
}  // namespace moka
