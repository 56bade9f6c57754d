// Unit tests of the logic operators: EQ, NE, LT, LE, GT, GE, And, Or, Xor, Not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using B = std::vector<bool>;

Tensor bools(B v) { return Tensor::from_vector<bool>({static_cast<int64_t>(v.size())}, v); }

TEST(LogicOps, ComparisonsSameShape) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({1, 2, 3}));
  feed(ws, "b", Tensor::vector<int64_t>({3, 2, 1}));
  const std::pair<const char*, B> cases[] = {
      {"EQ", {false, true, false}}, {"NE", {true, false, true}},  {"LT", {true, false, false}},
      {"LE", {true, true, false}},  {"GT", {false, false, true}}, {"GE", {false, true, true}},
  };
  for (const auto& [type, want] : cases) {
    run_op(ws, type, {"a", "b"}, {"c"});
    EXPECT_EQ(fetch(ws, "c"), bools(want)) << type;
  }
}

TEST(LogicOps, ComparisonBroadcastScalar) {
  Workspace ws;
  feed(ws, "v", Tensor::vector<double>({0.5, 1.0, 1.5}));
  feed(ws, "s", Tensor::scalar<double>(1.0));
  run_op(ws, "GE", {"v", "s"}, {"r"});
  EXPECT_EQ(fetch(ws, "r"), bools({false, true, true}));
  run_op(ws, "LT", {"s", "v"}, {"l"});
  EXPECT_EQ(fetch(ws, "l"), bools({false, false, true}));
  run_op(ws, "EQ", {"s", "s"}, {"e"});
  EXPECT_EQ(fetch(ws, "e"), Tensor::scalar<bool>(true));
}

TEST(LogicOps, NanComparesUnequal) {
  Workspace ws;
  feed(ws, "n", Tensor::scalar<float>(std::numeric_limits<float>::quiet_NaN()));
  run_op(ws, "EQ", {"n", "n"}, {"e"});
  run_op(ws, "NE", {"n", "n"}, {"ne"});
  EXPECT_FALSE(fetch(ws, "e").item<bool>());
  EXPECT_TRUE(fetch(ws, "ne").item<bool>());
}

TEST(LogicOps, StringsAndBoolsCompareForEquality) {
  Workspace ws;
  feed(ws, "s", Tensor::vector<std::string>({"a", "b"}));
  feed(ws, "t", Tensor::scalar<std::string>("b"));
  run_op(ws, "EQ", {"s", "t"}, {"e"});
  EXPECT_EQ(fetch(ws, "e"), bools({false, true}));
  run_op(ws, "NE", {"t", "s"}, {"n"});
  EXPECT_EQ(fetch(ws, "n"), bools({true, false}));
  expect_error<TypeError>([&] { run_op(ws, "LT", {"s", "t"}, {"x"}); }, {"LT", "\"s\"", "\"t\"", "EQ and NE"});
  feed(ws, "p", bools({true, false}));
  feed(ws, "q", bools({true, true}));
  run_op(ws, "EQ", {"p", "q"}, {"pq"});
  EXPECT_EQ(fetch(ws, "pq"), bools({true, false}));
  run_op(ws, "GT", {"p", "q"}, {"gt"});
  EXPECT_EQ(fetch(ws, "gt"), bools({false, false}));
}

TEST(LogicOps, ComparisonErrors) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({1, 2}));
  feed(ws, "b", Tensor::vector<int32_t>({1, 2}));
  feed(ws, "c", Tensor::vector<int64_t>({1, 2, 3}));
  expect_error<TypeError>([&] { run_op(ws, "EQ", {"a", "b"}, {"x"}); }, {"EQ", "\"a\"", "\"b\"", "different dtypes"});
  expect_error<TypeError>([&] { run_op(ws, "GE", {"a", "c"}, {"x"}); }, {"GE", "\"a\"", "\"c\"", "same shape"});
  expect_error<InvalidInput>([&] { create_op(ws, "EQ", {"a", "a"}, {"a"}); }, {"EQ", "in place"});
  expect_error<InvalidInput>([&] { create_op(ws, "LT", {"a"}, {"x"}); }, {"LT", "2 input"});
  ws.create_blob("empty");
  expect_error<TypeError>([&] { run_op(ws, "NE", {"a", "empty"}, {"x"}); }, {"\"empty\""});
}

TEST(LogicOps, AndOrXor) {
  Workspace ws;
  feed(ws, "a", bools({false, false, true, true}));
  feed(ws, "b", bools({false, true, false, true}));
  run_op(ws, "And", {"a", "b"}, {"and"});
  run_op(ws, "Or", {"a", "b"}, {"or"});
  run_op(ws, "Xor", {"a", "b"}, {"xor"});
  EXPECT_EQ(fetch(ws, "and"), bools({false, false, false, true}));
  EXPECT_EQ(fetch(ws, "or"), bools({false, true, true, true}));
  EXPECT_EQ(fetch(ws, "xor"), bools({false, true, true, false}));
  feed(ws, "t", Tensor::scalar<bool>(true));
  run_op(ws, "And", {"t", "b"}, {"tb"});
  EXPECT_EQ(fetch(ws, "tb"), bools({false, true, false, true}));
  run_op(ws, "Or", {"a", "b"}, {"a"});  // in place
  EXPECT_EQ(fetch(ws, "a"), bools({false, true, true, true}));
}

TEST(LogicOps, BooleanOpsRequireBool) {
  Workspace ws;
  feed(ws, "b", bools({true}));
  feed(ws, "i", Tensor::vector<int32_t>({1}));
  expect_error<TypeError>([&] { run_op(ws, "And", {"b", "i"}, {"x"}); }, {"And", "bool", "\"i\"", "int32"});
  expect_error<TypeError>([&] { run_op(ws, "Not", {"i"}, {"x"}); }, {"Not", "bool", "\"i\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Xor", {"b", "b"}, {"b", "c"}); }, {"Xor", "output"});
  expect_error<InvalidInput>([&] { create_op(ws, "Or", {"b", "i"}, {"i"}); }, {"Or", "in place"});
}

TEST(LogicOps, Not) {
  Workspace ws;
  feed(ws, "a", bools({true, false}));
  run_op(ws, "Not", {"a"}, {"b"});
  EXPECT_EQ(fetch(ws, "b"), bools({false, true}));
  run_op(ws, "Not", {"a"}, {"a"});
  EXPECT_EQ(fetch(ws, "a"), bools({false, true}));
}

}  // namespace
}  // namespace moka
