// Unit tests of the arithmetic operators: Add, Sub, Mul, Div and Sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;
using I64 = std::vector<int64_t>;

TEST(MathOps, AddSameShape) {
  Workspace ws;
  feed(ws, "a", Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4}));
  feed(ws, "b", Tensor::from_vector<int64_t>({2, 2}, {10, 20, 30, 40}));
  run_op(ws, "Add", {"a", "b"}, {"c"});
  EXPECT_EQ(fetch(ws, "c"), Tensor::from_vector<int64_t>({2, 2}, {11, 22, 33, 44}));
}

TEST(MathOps, AllNumericDtypes) {
  Workspace ws;
  feed(ws, "f", Tensor::vector<float>({1.5f, 2}));
  feed(ws, "d", Tensor::vector<double>({1.5, 2}));
  feed(ws, "i8", Tensor::vector<int8_t>({3, 4}));
  feed(ws, "u8", Tensor::vector<uint8_t>({3, 4}));
  feed(ws, "i16", Tensor::vector<int16_t>({3, 4}));
  feed(ws, "i32", Tensor::vector<int32_t>({3, 4}));
  run_op(ws, "Mul", {"f", "f"}, {"of"});
  EXPECT_EQ(fetch(ws, "of"), Tensor::vector<float>({2.25f, 4}));
  run_op(ws, "Sub", {"d", "d"}, {"od"});
  EXPECT_EQ(fetch(ws, "od"), Tensor::vector<double>({0, 0}));
  run_op(ws, "Add", {"i8", "i8"}, {"o8"});
  EXPECT_EQ(fetch(ws, "o8"), Tensor::vector<int8_t>({6, 8}));
  run_op(ws, "Mul", {"u8", "u8"}, {"ou8"});
  EXPECT_EQ(fetch(ws, "ou8"), Tensor::vector<uint8_t>({9, 16}));
  run_op(ws, "Div", {"i16", "i16"}, {"o16"});
  EXPECT_EQ(fetch(ws, "o16"), Tensor::vector<int16_t>({1, 1}));
  run_op(ws, "Sub", {"i32", "i32"}, {"o32"});
  EXPECT_EQ(fetch(ws, "o32"), Tensor::vector<int32_t>({0, 0}));
}

TEST(MathOps, AddBroadcastScalar) {
  Workspace ws;
  feed(ws, "a", Tensor::from_vector<int64_t>({3}, {1, 2, 3}));
  feed(ws, "s", Tensor::scalar<int64_t>(10));
  feed(ws, "one", Tensor::vector<int64_t>({100}));
  run_op(ws, "Add", {"a", "s"}, {"r"});
  EXPECT_EQ(fetch(ws, "r"), Tensor::vector<int64_t>({11, 12, 13}));
  run_op(ws, "Sub", {"s", "a"}, {"l"});
  EXPECT_EQ(fetch(ws, "l"), Tensor::vector<int64_t>({9, 8, 7}));
  // Both single-element: the result takes the higher rank.
  run_op(ws, "Add", {"s", "one"}, {"x"});
  EXPECT_EQ(fetch(ws, "x"), Tensor::vector<int64_t>({110}));
  run_op(ws, "Add", {"s", "s"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), Tensor::scalar<int64_t>(20));
}

TEST(MathOps, InPlaceOnEitherInput) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({1, 2, 3}));
  feed(ws, "b", Tensor::vector<int64_t>({5}));
  run_op(ws, "Add", {"a", "b"}, {"a"});
  EXPECT_EQ(fetch(ws, "a"), Tensor::vector<int64_t>({6, 7, 8}));
  // The broadcast side is the output: it grows to the other side's shape.
  run_op(ws, "Mul", {"a", "b"}, {"b"});
  EXPECT_EQ(fetch(ws, "b"), Tensor::vector<int64_t>({30, 35, 40}));
  feed(ws, "s", Tensor::scalar<double>(2));
  feed(ws, "v", Tensor::vector<double>({1, 4}));
  run_op(ws, "Div", {"s", "v"}, {"s"});
  EXPECT_EQ(fetch(ws, "s"), Tensor::vector<double>({2, 0.5}));
}

TEST(MathOps, IntegerDivisionTruncates) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({-7, 7, 7}));
  feed(ws, "b", Tensor::vector<int64_t>({2, -2, 2}));
  run_op(ws, "Div", {"a", "b"}, {"c"});
  EXPECT_EQ(fetch(ws, "c"), Tensor::vector<int64_t>({-3, -3, 3}));
}

TEST(MathOps, DivByZeroIsRuntimeError) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int32_t>({4, 5}));
  feed(ws, "b", Tensor::vector<int32_t>({2, 0}));
  feed(ws, "z", Tensor::scalar<int32_t>(0));
  feed(ws, "c", Tensor::vector<int32_t>({-1, -1}));
  expect_error<RuntimeError>(
      [&] {
        run_op(ws, "Div", {"a", "b"}, {"c"});
      },
      {"Div", "integer division by zero", "\"a\"", "\"b\""});
  EXPECT_EQ(fetch(ws, "c"), Tensor::vector<int32_t>({-1, -1}));  // untouched
  expect_error<RuntimeError>([&] { run_op(ws, "Div", {"a", "z"}, {"c"}); }, {"Div: integer division by zero"});
  expect_error<RuntimeError>([&] { run_op(ws, "Div", {"z", "z"}, {"q"}); }, {"Div: integer division by zero"});
}

TEST(MathOps, DivMinByMinusOneIsRuntimeError) {
  Workspace ws;
  feed(ws, "m64", Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::min()));
  feed(ws, "n64", Tensor::scalar<int64_t>(-1));
  feed(ws, "m8", Tensor::vector<int8_t>({1, -128}));
  feed(ws, "n8", Tensor::scalar<int8_t>(-1));
  expect_error<RuntimeError>(
      [&] {
        run_op(ws, "Div", {"m64", "n64"}, {"o"});
      },
      {"Div", "overflow", "-9223372036854775808 / -1"});
  expect_error<RuntimeError>([&] { run_op(ws, "Div", {"m8", "n8"}, {"o"}); }, {"Div", "overflow", "-128 / -1"});
  // Unsigned: no such case.
  feed(ws, "u", Tensor::scalar<uint8_t>(255));
  run_op(ws, "Div", {"u", "u"}, {"o"});
  EXPECT_EQ(fetch(ws, "o"), Tensor::scalar<uint8_t>(1));
}

TEST(MathOps, FloatDivisionFollowsIeee) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<float>({1, -1, 0}));
  feed(ws, "z", Tensor::scalar<float>(0));
  run_op(ws, "Div", {"a", "z"}, {"c"});
  auto c = vals<float>(fetch(ws, "c"));
  EXPECT_EQ(c[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(c[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(c[2]));
}

TEST(MathOps, IntegerOverflowWraps) {
  Workspace ws;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  feed(ws, "max", Tensor::scalar<int64_t>(kMax));
  feed(ws, "min", Tensor::scalar<int64_t>(kMin));
  feed(ws, "one", Tensor::scalar<int64_t>(1));
  feed(ws, "two", Tensor::scalar<int64_t>(2));
  run_op(ws, "Add", {"max", "one"}, {"r"});
  EXPECT_EQ(fetch(ws, "r").item<int64_t>(), kMin);
  run_op(ws, "Sub", {"min", "one"}, {"r"});
  EXPECT_EQ(fetch(ws, "r").item<int64_t>(), kMax);
  run_op(ws, "Mul", {"max", "two"}, {"r"});
  EXPECT_EQ(fetch(ws, "r").item<int64_t>(), -2);
  feed(ws, "i8", Tensor::scalar<int8_t>(127));
  feed(ws, "i8one", Tensor::scalar<int8_t>(1));
  run_op(ws, "Add", {"i8", "i8one"}, {"r8"});
  EXPECT_EQ(fetch(ws, "r8").item<int8_t>(), -128);
  feed(ws, "i16", Tensor::scalar<int16_t>(-32768));
  run_op(ws, "Mul", {"i16", "i16"}, {"r16"});
  EXPECT_EQ(fetch(ws, "r16").item<int16_t>(), 0);
  feed(ws, "u8", Tensor::scalar<uint8_t>(255));
  run_op(ws, "Mul", {"u8", "u8"}, {"ru8"});
  EXPECT_EQ(fetch(ws, "ru8").item<uint8_t>(), 1);
  feed(ws, "i32", Tensor::scalar<int32_t>(std::numeric_limits<int32_t>::max()));
  run_op(ws, "Mul", {"i32", "i32"}, {"r32"});
  EXPECT_EQ(fetch(ws, "r32").item<int32_t>(), 1);
}

TEST(MathOps, DtypeMismatchIsTypeError) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int64_t>({1}));
  feed(ws, "b", Tensor::vector<float>({1}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "Add", {"a", "b"}, {"c"});
      },
      {"Add", "\"a\"", "\"b\"", "int64", "float32", "different dtypes"});
}

TEST(MathOps, UnsupportedDtypesAreTypeErrors) {
  Workspace ws;
  feed(ws, "t", Tensor::scalar<bool>(true));
  feed(ws, "s", Tensor::scalar<std::string>("x"));
  expect_error<TypeError>([&] { run_op(ws, "Add", {"t", "t"}, {"c"}); }, {"Add", "bool", "\"t\""});
  expect_error<TypeError>([&] { run_op(ws, "Mul", {"s", "s"}, {"c"}); }, {"Mul", "string", "\"s\""});
  expect_error<TypeError>([&] { run_op(ws, "Sum", {"s"}, {"c"}); }, {"Sum", "string", "\"s\""});
}

TEST(MathOps, ShapeMismatchIsTypeError) {
  Workspace ws;
  feed(ws, "a", Tensor(DType::Float, {2, 3}));
  feed(ws, "b", Tensor(DType::Float, {3}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "Sub", {"a", "b"}, {"c"});
      },
      {"Sub", "\"a\"", "float32[2,3]", "\"b\"", "float32[3]", "same shape"});
  feed(ws, "c", Tensor(DType::Float, {3, 2}));
  expect_error<TypeError>([&] { run_op(ws, "Add", {"a", "c"}, {"d"}); }, {"Add", "[2,3]", "[3,2]"});
  // Caffe2's axis broadcasting is named when asked for.
  expect_error<TypeError>(
      [&] {
        run_op(ws, "Add", {"a", "b"}, {"d"}, {make_arg("broadcast", 1), make_arg("axis", 1)});
      },
      {"Add", "axis", "not supported"});
}

TEST(MathOps, LegacyBroadcastArgumentsAccepted) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<double>({1, 2}));
  feed(ws, "s", Tensor::scalar<double>(1));
  run_op(ws, "Add", {"a", "s"}, {"c"}, {make_arg("broadcast", 1)});
  run_op(ws, "Add", {"a", "s"}, {"c"}, {make_arg("broadcast", 1), make_arg("axis", 0)});
  EXPECT_EQ(fetch(ws, "c"), Tensor::vector<double>({2, 3}));
  expect_error<InvalidInput>([&] { create_op(ws, "Add", {"a", "s"}, {"c"}, {make_arg("axis", "x")}); }, {"\"axis\""});
}

TEST(MathOps, ArityAndArgumentErrors) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<double>({1}));
  expect_error<InvalidInput>([&] { create_op(ws, "Add", {"a"}, {"c"}); }, {"Add", "2 input"});
  expect_error<InvalidInput>([&] { create_op(ws, "Div", {"a", "a", "a"}, {"c"}); }, {"Div", "2 input"});
  expect_error<InvalidInput>([&] { create_op(ws, "Mul", {"a", "a"}, {}); }, {"Mul", "output"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "Add", {"a", "a"}, {"c"}, {make_arg("alpha", 1.0)});
      },
      {"unknown argument", "\"alpha\"", "Add"});
  expect_error<InvalidInput>([&] { create_op(ws, "Sum", {}, {"c"}); }, {"Sum", "at least 1"});
  expect_error<InvalidInput>([&] { create_op(ws, "Sum", {"a", "a"}, {"a"}); }, {"Sum", "in place"});
  expect_error<InvalidInput>([&] { create_op(ws, "Add", {"a", "nope"}, {"c"}); }, {"Add", "nope"});
}

TEST(MathOps, UninitializedInputIsTypeError) {
  Workspace ws;
  ws.create_blob("empty");
  feed(ws, "a", Tensor::vector<double>({1}));
  ws.create_blob("undef")->get_mutable<Tensor>();
  expect_error<TypeError>([&] { run_op(ws, "Add", {"a", "empty"}, {"c"}); }, {"\"empty\""});
  expect_error<TypeError>([&] { run_op(ws, "Add", {"undef", "a"}, {"c"}); }, {"\"undef\"", "never filled"});
}

TEST(MathOps, SumOfInputs) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<int32_t>({1, 2}));
  feed(ws, "b", Tensor::vector<int32_t>({10, 20}));
  feed(ws, "c", Tensor::vector<int32_t>({100, 200}));
  run_op(ws, "Sum", {"a", "b", "c"}, {"s"});
  EXPECT_EQ(fetch(ws, "s"), Tensor::vector<int32_t>({111, 222}));
  run_op(ws, "Sum", {"a"}, {"one"});
  EXPECT_EQ(fetch(ws, "one"), Tensor::vector<int32_t>({1, 2}));
  run_op(ws, "Sum", {"a", "b", "c"}, {"a"});  // in place on input 0
  EXPECT_EQ(fetch(ws, "a"), Tensor::vector<int32_t>({111, 222}));
}

TEST(MathOps, SumMismatches) {
  Workspace ws;
  feed(ws, "a", Tensor::vector<float>({1, 2}));
  feed(ws, "b", Tensor::vector<double>({1, 2}));
  feed(ws, "c", Tensor::vector<float>({1, 2, 3}));
  expect_error<TypeError>([&] { run_op(ws, "Sum", {"a", "b"}, {"s"}); }, {"Sum", "input 1", "\"b\"", "dtype"});
  expect_error<TypeError>([&] { run_op(ws, "Sum", {"a", "c"}, {"s"}); }, {"Sum", "input 1", "\"c\"", "shape"});
}

TEST(MathOps, ScalarAddDoesNotReallocate) {
  Workspace ws;
  feed(ws, "acc", Tensor::scalar<int64_t>(0));
  feed(ws, "one", Tensor::scalar<int64_t>(1));
  auto op = create_op(ws, "Add", {"acc", "one"}, {"acc"});
  auto copy = create_op(ws, "Add", {"acc", "one"}, {"out"});
  ASSERT_TRUE(op->run());
  ASSERT_TRUE(copy->run());
  const int64_t* p = fetch(ws, "acc").data<int64_t>();
  const int64_t* q = fetch(ws, "out").data<int64_t>();
  for (int k = 0; k < 1000; ++k) {
    ASSERT_TRUE(op->run());
    ASSERT_TRUE(copy->run());
  }
  EXPECT_EQ(fetch(ws, "acc").data<int64_t>(), p);
  EXPECT_EQ(fetch(ws, "out").data<int64_t>(), q);
  EXPECT_EQ(fetch(ws, "acc").item<int64_t>(), 1001);
  EXPECT_EQ(fetch(ws, "out").item<int64_t>(), 1002);
}

TEST(MathOps, VectorOpsDoNotReallocate) {
  Workspace ws;
  feed(ws, "a", Tensor(DType::Float, {64}));
  feed(ws, "s", Tensor::scalar<float>(1));
  auto op = create_op(ws, "Add", {"a", "s"}, {"b"});
  ASSERT_TRUE(op->run());
  const float* p = fetch(ws, "b").data<float>();
  for (int k = 0; k < 100; ++k) ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "b").data<float>(), p);
}

}  // namespace
}  // namespace moka
