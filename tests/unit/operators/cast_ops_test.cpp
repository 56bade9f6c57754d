// Unit tests of the Cast operator.
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

Argument to(int64_t code) { return make_arg("to", code); }

TEST(CastOps, NumericConversions) {
  Workspace ws;
  feed(ws, "i", Tensor::vector<int64_t>({-2, 0, 3}));
  feed(ws, "f", Tensor::vector<float>({-2.7f, -0.5f, 0.0f, 2.9f}));
  run_op(ws, "Cast", {"i"}, {"a"}, {to(1)});
  EXPECT_EQ(fetch(ws, "a"), Tensor::vector<float>({-2, 0, 3}));
  run_op(ws, "Cast", {"f"}, {"b"}, {to(2)});
  EXPECT_EQ(fetch(ws, "b"), Tensor::vector<int32_t>({-2, 0, 0, 2}));  // truncates toward zero
  run_op(ws, "Cast", {"i"}, {"c"}, {make_arg("to", "int8")});
  EXPECT_EQ(fetch(ws, "c"), Tensor::vector<int8_t>({-2, 0, 3}));
  run_op(ws, "Cast", {"f"}, {"d"}, {make_arg("to", "DOUBLE")});
  EXPECT_EQ(fetch(ws, "d").values<double>()[0], static_cast<double>(-2.7f));
}

TEST(CastOps, BoolConversions) {
  Workspace ws;
  feed(ws, "f", Tensor::vector<float>({0.0f, -0.0f, 0.25f, std::numeric_limits<float>::quiet_NaN()}));
  run_op(ws, "Cast", {"f"}, {"b"}, {to(5)});
  EXPECT_EQ(fetch(ws, "b"), Tensor::from_vector<bool>({4}, std::vector<bool>{false, false, true, true}));
  feed(ws, "t", Tensor::from_vector<bool>({2}, std::vector<bool>{true, false}));
  run_op(ws, "Cast", {"t"}, {"i"}, {to(10)});
  EXPECT_EQ(fetch(ws, "i"), Tensor::vector<int64_t>({1, 0}));
  run_op(ws, "Cast", {"t"}, {"d"}, {to(13)});
  EXPECT_EQ(fetch(ws, "d"), Tensor::vector<double>({1, 0}));
}

TEST(CastOps, Int64Limits) {
  Workspace ws;
  feed(ws, "lo", Tensor::scalar<double>(-0x1p63));
  run_op(ws, "Cast", {"lo"}, {"a"}, {to(10)});
  EXPECT_EQ(fetch(ws, "a").item<int64_t>(), std::numeric_limits<int64_t>::min());
  feed(ws, "hi", Tensor::scalar<double>(0x1p63));
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"hi"}, {"b"}, {to(10)}); }, {"Cast", "\"hi\"", "INT64"});
  feed(ws, "m", Tensor::scalar<float>(-128.9f));
  run_op(ws, "Cast", {"m"}, {"c"}, {to(7)});
  EXPECT_EQ(fetch(ws, "c").item<int8_t>(), -128);
}

TEST(CastOps, UnrepresentableValuesAreRuntimeErrors) {
  Workspace ws;
  feed(ws, "nan", Tensor::vector<float>({1, std::numeric_limits<float>::quiet_NaN()}));
  feed(ws, "inf", Tensor::scalar<double>(std::numeric_limits<double>::infinity()));
  feed(ws, "big", Tensor::scalar<double>(1e10));
  feed(ws, "i64", Tensor::vector<int64_t>({1, 300}));
  feed(ws, "neg", Tensor::scalar<int32_t>(-1));
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"nan"}, {"o"}, {to(10)}); },
                             {"Cast", "nan", "element 1", "\"nan\"", "INT64"});
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"inf"}, {"o"}, {to(2)}); }, {"Cast", "inf", "INT32"});
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"big"}, {"o"}, {to(2)}); }, {"Cast", "\"big\"", "INT32"});
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"i64"}, {"o"}, {to(7)}); }, {"Cast", "300", "\"i64\"", "INT8"});
  expect_error<RuntimeError>([&] { run_op(ws, "Cast", {"neg"}, {"o"}, {to(6)}); }, {"Cast", "-1", "UINT8"});
}

TEST(CastOps, StringsOnlyToStrings) {
  Workspace ws;
  feed(ws, "s", Tensor::vector<std::string>({"1", "2"}));
  feed(ws, "i", Tensor::vector<int32_t>({1}));
  expect_error<TypeError>([&] { run_op(ws, "Cast", {"s"}, {"o"}, {to(2)}); }, {"Cast", "\"s\"", "string", "INT32"});
  expect_error<TypeError>([&] { run_op(ws, "Cast", {"i"}, {"o"}, {to(4)}); }, {"Cast", "\"i\"", "STRING"});
  run_op(ws, "Cast", {"s"}, {"o"}, {to(4)});
  EXPECT_EQ(fetch(ws, "o"), Tensor::vector<std::string>({"1", "2"}));
}

TEST(CastOps, InPlace) {
  Workspace ws;
  feed(ws, "x", Tensor::vector<double>({1.5, -2.5}));
  auto op = create_op(ws, "Cast", {"x"}, {"x"}, {to(10)});
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int64_t>({1, -2}));
  ASSERT_TRUE(op->run());  // same dtype now: nothing to do
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int64_t>({1, -2}));
  run_op(ws, "Cast", {"x"}, {"x"}, {to(1)});
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<float>({1, -2}));
}

TEST(CastOps, DefinitionErrors) {
  Workspace ws;
  feed(ws, "x", Tensor::vector<double>({1}));
  expect_error<InvalidInput>([&] { create_op(ws, "Cast", {"x"}, {"y"}); }, {"missing required argument", "\"to\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Cast", {"x"}, {"y"}, {to(3)}); }, {"\"to\"", "BYTE"});
  expect_error<InvalidInput>([&] { create_op(ws, "Cast", {"x"}, {"y"}, {make_arg("to", "complex")}); },
                             {"\"to\"", "complex"});
  expect_error<InvalidInput>([&] { create_op(ws, "Cast", {"x"}, {"y"}, {make_arg("to", 1.5)}); }, {"\"to\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Cast", {"x", "x"}, {"y"}, {to(1)}); }, {"Cast", "1 input"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "Cast", {"x"}, {"y"}, {to(1), make_arg("from_type", 1)});
      },
      {"unknown argument", "\"from_type\""});
  ws.create_blob("empty");
  expect_error<TypeError>([&] { run_op(ws, "Cast", {"empty"}, {"y"}, {to(1)}); }, {"\"empty\""});
}

}  // namespace
}  // namespace moka
