// Unit tests of the fill operators: ConstantFill and GivenTensor*Fill.
#include <gtest/gtest.h>

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
using F64 = std::vector<double>;
using Strs = std::vector<std::string>;

TEST(FillOps, ConstantFillDefaultIsFloatScalarZero) {
  Workspace ws;
  run_op(ws, "ConstantFill", {}, {"y"});
  const Tensor& y = fetch(ws, "y");
  EXPECT_EQ(y.dtype(), DType::Float);
  EXPECT_EQ(y.shape(), I64{});
  EXPECT_EQ(y.item<float>(), 0.0f);
}

TEST(FillOps, ConstantFillShapeAndFloatValue) {
  Workspace ws;
  run_op(ws, "ConstantFill", {}, {"y"}, {make_arg("shape", I64{2, 3}), make_arg("value", 1.5)});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<float>({2, 3}, std::vector<float>(6, 1.5f)));
}

TEST(FillOps, ConstantFillIntegerDtypes) {
  Workspace ws;
  run_op(ws, "ConstantFill", {}, {"a"}, {make_arg("shape", I64{2}), make_arg("value", 7), make_arg("dtype", 10)});
  EXPECT_EQ(fetch(ws, "a"), Tensor::vector<int64_t>({7, 7}));
  // An integral `f` converts exactly, a dtype may be given by name.
  run_op(ws, "ConstantFill", {}, {"b"}, {make_arg("value", 3.0), make_arg("dtype", "int32")});
  EXPECT_EQ(fetch(ws, "b"), Tensor::scalar<int32_t>(3));
  run_op(ws, "ConstantFill", {}, {"c"}, {make_arg("value", -128), make_arg("dtype", 7)});
  EXPECT_EQ(fetch(ws, "c"), Tensor::scalar<int8_t>(-128));
  run_op(ws, "ConstantFill", {}, {"d"}, {make_arg("value", 255), make_arg("dtype", 6)});
  EXPECT_EQ(fetch(ws, "d"), Tensor::scalar<uint8_t>(255));
}

TEST(FillOps, ConstantFillBoolAndDouble) {
  Workspace ws;
  run_op(ws, "ConstantFill", {}, {"t"}, {make_arg("value", true), make_arg("dtype", 5)});
  EXPECT_EQ(fetch(ws, "t"), Tensor::scalar<bool>(true));
  run_op(ws, "ConstantFill", {}, {"d"}, {make_arg("value", 0.1), make_arg("dtype", 13), make_arg("shape", I64{1})});
  EXPECT_EQ(fetch(ws, "d").item<double>(), 0.1);  // every digit of the float64 argument kept
  run_op(ws, "ConstantFill", {}, {"e"}, {make_arg("value", 3), make_arg("dtype", 1)});
  EXPECT_EQ(fetch(ws, "e").item<float>(), 3.0f);  // an exact integer in `i` for a floating dtype
}

TEST(FillOps, ConstantFillValueNotExactIsInvalidInputAtConstruction) {
  Workspace ws;
  auto make = [&](Argument value, int64_t dtype) {
    return [&ws, value, dtype] { create_op(ws, "ConstantFill", {}, {"y"}, {value, make_arg("dtype", dtype)}); };
  };
  expect_error<InvalidInput>(make(make_arg("value", 1.5), 10), {"ConstantFill", "\"value\"", "1.5", "INT64"});
  expect_error<InvalidInput>(make(make_arg("value", int64_t{1} << 40), 2), {"ConstantFill", "\"value\"", "INT32"});
  expect_error<InvalidInput>(make(make_arg("value", 256), 6), {"\"value\"", "UINT8"});
  expect_error<InvalidInput>(make(make_arg("value", 2), 5), {"\"value\"", "BOOL", "0 or 1"});
  expect_error<InvalidInput>(make(make_arg("value", 0.5), 5), {"\"value\"", "BOOL"});
  expect_error<InvalidInput>(make(make_arg("value", (int64_t{1} << 53) + 1), 13), {"\"value\"", "DOUBLE"});
  expect_error<InvalidInput>(make(make_arg("value", (int64_t{1} << 24) + 1), 1), {"\"value\"", "FLOAT"});
  expect_error<InvalidInput>(make(make_arg("value", 1e300), 1), {"\"value\"", "FLOAT"});
  expect_error<InvalidInput>(make(make_arg("value", 1e19), 10), {"\"value\"", "INT64"});
  EXPECT_FALSE(ws.blob("y").is_initialized());  // nothing ran
}

TEST(FillOps, ConstantFillStrings) {
  Workspace ws;
  // Caffe2 allows dtype STRING with a string value (InitEmptyRecord of a string field needs it).
  run_op(ws, "ConstantFill", {}, {"y"}, {make_arg("dtype", 4), make_arg("value", "ab"), make_arg("shape", I64{2})});
  const Tensor& y = ws.blob("y").get<Tensor>();
  ASSERT_EQ(y.dtype(), DType::String);
  EXPECT_EQ(y.data<std::string>()[0], "ab");
  EXPECT_EQ(y.data<std::string>()[1], "ab");
  run_op(ws, "ConstantFill", {}, {"e"}, {make_arg("dtype", 4), make_arg("shape", I64{0})});
  EXPECT_EQ(ws.blob("e").get<Tensor>().dtype(), DType::String);
  EXPECT_EQ(ws.blob("e").get<Tensor>().numel(), 0);
  // A value of the wrong kind for the dtype is refused.
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("dtype", 4), make_arg("value", 1)});
      },
      {"ConstantFill", "\"value\"", "STRING"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("value", "x")}); },
                             {"\"value\"", "FLOAT"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("dtype", 3)}); },
                             {"\"dtype\"", "BYTE"});
}

TEST(FillOps, ConstantFillShapeFromInput) {
  Workspace ws;
  feed(ws, "x", Tensor(DType::Int32, {2, 2}));
  run_op(ws, "ConstantFill", {"x"}, {"y"}, {make_arg("value", 2.0)});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<float>({2, 2}, std::vector<float>(4, 2.0f)));
  run_op(ws, "ConstantFill", {"x"}, {"z"},
         {make_arg("extra_shape", I64{3}), make_arg("value", 1), make_arg("dtype", 10)});
  EXPECT_EQ(fetch(ws, "z").shape(), (I64{2, 2, 3}));
  // In place: the input is replaced by the fill.
  run_op(ws, "ConstantFill", {"x"}, {"x"}, {make_arg("value", 9), make_arg("dtype", 2)});
  EXPECT_EQ(fetch(ws, "x"), Tensor::from_vector<int32_t>({2, 2}, {9, 9, 9, 9}));
}

TEST(FillOps, ConstantFillInputAsShape) {
  Workspace ws;
  feed(ws, "dims", Tensor::vector<int64_t>({2, 3}));
  feed(ws, "dims32", Tensor::vector<int32_t>({4}));
  feed(ws, "bad", Tensor::vector<float>({2}));
  feed(ws, "neg", Tensor::vector<int64_t>({-1}));
  run_op(ws, "ConstantFill", {"dims"}, {"y"}, {make_arg("input_as_shape", true), make_arg("value", 1.0)});
  EXPECT_EQ(fetch(ws, "y").shape(), (I64{2, 3}));
  run_op(ws, "ConstantFill", {"dims32"}, {"z"}, {make_arg("input_as_shape", true), make_arg("extra_shape", I64{2})});
  EXPECT_EQ(fetch(ws, "z").shape(), (I64{4, 2}));
  expect_error<TypeError>([&] { run_op(ws, "ConstantFill", {"bad"}, {"w"}, {make_arg("input_as_shape", true)}); },
                          {"ConstantFill", "input_as_shape", "\"bad\""});
  expect_error<InvalidInput>([&] { run_op(ws, "ConstantFill", {"neg"}, {"w"}, {make_arg("input_as_shape", true)}); },
                             {"ConstantFill", "negative", "\"neg\""});
}

TEST(FillOps, ConstantFillShapeArgumentErrors) {
  Workspace ws;
  feed(ws, "x", Tensor(DType::Float, {2}));
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {"x"}, {"y"}, {make_arg("shape", I64{2})}); },
                             {"ConstantFill", "\"shape\"", "\"x\""});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("extra_shape", I64{2})}); },
                             {"ConstantFill", "\"extra_shape\""});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("input_as_shape", true)}); },
                             {"ConstantFill", "\"input_as_shape\""});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("shape", I64{2, -1})});
      },
      {"ConstantFill", "\"shape\"", "negative"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("shape", int64_t{2})}); },
                             {"\"shape\"", "ints"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("input_as_shape", 2)}); },
                             {"\"input_as_shape\""});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("colour", 2)}); },
                             {"unknown argument", "\"colour\"", "ConstantFill"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {"x", "x"}, {"y"}); }, {"ConstantFill", "input"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {}, {}); }, {"ConstantFill", "output"});
  expect_error<InvalidInput>([&] { create_op(ws, "ConstantFill", {"missing"}, {"y"}); }, {"ConstantFill", "missing"});
}

TEST(FillOps, ConstantFillUninitializedInput) {
  Workspace ws;
  ws.create_blob("empty");
  expect_error<TypeError>([&] { run_op(ws, "ConstantFill", {"empty"}, {"y"}); }, {"\"empty\""});
}

TEST(FillOps, ConstantFillReusesStorage) {
  Workspace ws;
  auto op = create_op(ws, "ConstantFill", {}, {"y"}, {make_arg("shape", I64{16}), make_arg("value", 4.0)});
  ASSERT_TRUE(op->run());
  const float* p = fetch(ws, "y").data<float>();
  ws.blob("y").get_mutable<Tensor>().mutable_data<float>()[3] = 0;
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "y").data<float>(), p);
  EXPECT_EQ(fetch(ws, "y").values<float>()[3], 4.0f);
}

TEST(FillOps, GivenTensorFillFloat) {
  Workspace ws;
  run_op(ws, "GivenTensorFill", {}, {"y"}, {make_arg("values", F64{1, 2, 3, 4}), make_arg("shape", I64{2, 2})});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  run_op(ws, "GivenTensorFill", {}, {"z"}, {make_arg("values", F64{0.5, 1.5})});
  EXPECT_EQ(fetch(ws, "z"), Tensor::vector<float>({0.5f, 1.5f}));  // default shape: 1-d
  run_op(ws, "GivenTensorFill", {}, {"s"}, {make_arg("values", F64{5}), make_arg("shape", I64{})});
  EXPECT_EQ(fetch(ws, "s"), Tensor::scalar<float>(5));
}

TEST(FillOps, GivenTensorFillWithDtype) {
  Workspace ws;
  run_op(ws, "GivenTensorFill", {}, {"y"}, {make_arg("values", F64{1, -2}), make_arg("dtype", "INT64")});
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<int64_t>({1, -2}));
  run_op(ws, "GivenTensorFill", {}, {"b"}, {make_arg("values", F64{1, 0}), make_arg("dtype", 5)});
  EXPECT_EQ(fetch(ws, "b"), Tensor::from_vector<bool>({2}, std::vector<bool>{true, false}));
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "GivenTensorFill", {}, {"y"}, {make_arg("values", F64{1, 1.5}), make_arg("dtype", 10)});
      },
      {"GivenTensorFill", "\"values\"[1]", "1.5", "INT64"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "GivenTensorFill", {}, {"y"}, {make_arg("values", F64{1}), make_arg("dtype", 4)});
      },
      {"GivenTensorFill", "\"dtype\"", "STRING"});
}

TEST(FillOps, GivenTensorTypedFills) {
  Workspace ws;
  run_op(ws, "GivenTensorIntFill", {}, {"i"}, {make_arg("values", I64{1, -2, 3})});
  EXPECT_EQ(fetch(ws, "i"), Tensor::vector<int32_t>({1, -2, 3}));
  run_op(ws, "GivenTensorInt64Fill", {}, {"l"},
         {make_arg("values", I64{std::numeric_limits<int64_t>::min()}), make_arg("shape", I64{1, 1})});
  EXPECT_EQ(fetch(ws, "l"), Tensor::from_vector<int64_t>({1, 1}, {std::numeric_limits<int64_t>::min()}));
  run_op(ws, "GivenTensorBoolFill", {}, {"b"}, {make_arg("values", I64{0, 1, 1})});
  EXPECT_EQ(fetch(ws, "b"), Tensor::from_vector<bool>({3}, std::vector<bool>{false, true, true}));
  run_op(ws, "GivenTensorDoubleFill", {}, {"d"}, {make_arg("values", F64{0.1, 1e300})});
  EXPECT_EQ(fetch(ws, "d"), Tensor::vector<double>({0.1, 1e300}));
  run_op(ws, "GivenTensorStringFill", {}, {"s"}, {make_arg("values", Strs{"a", "bc"}), make_arg("shape", I64{2, 1})});
  EXPECT_EQ(fetch(ws, "s"), Tensor::from_vector<std::string>({2, 1}, {"a", "bc"}));
}

TEST(FillOps, GivenTensorFillValueErrors) {
  Workspace ws;
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "GivenTensorIntFill", {}, {"y"}, {make_arg("values", I64{1, int64_t{1} << 31})});
      },
      {"GivenTensorIntFill", "\"values\"[1]", "2147483648", "INT32"});
  expect_error<InvalidInput>([&] { create_op(ws, "GivenTensorBoolFill", {}, {"y"}, {make_arg("values", I64{2})}); },
                             {"GivenTensorBoolFill", "\"values\"[0]", "BOOL"});
  expect_error<InvalidInput>([&] { create_op(ws, "GivenTensorInt64Fill", {}, {"y"}, {make_arg("values", F64{1.0})}); },
                             {"\"values\"", "ints"});
  expect_error<InvalidInput>([&] { create_op(ws, "GivenTensorStringFill", {}, {"y"}, {make_arg("values", I64{1})}); },
                             {"\"values\"", "strings"});
  expect_error<InvalidInput>([&] { create_op(ws, "GivenTensorFill", {}, {"y"}); },
                             {"missing required argument", "\"values\""});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "GivenTensorInt64Fill", {}, {"y"}, {make_arg("values", I64{1}), make_arg("dtype", 10)});
      },
      {"unknown argument", "\"dtype\""});
}

TEST(FillOps, GivenTensorFillShapeMismatch) {
  Workspace ws;
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "GivenTensorFill", {}, {"y"},
                  {make_arg("values", F64{1, 2, 3, 4}), make_arg("shape", I64{2, 3})});
      },
      {"GivenTensorFill", "\"shape\"", "[2,3]", "6", "4"});
  feed(ws, "x", Tensor(DType::Float, {3}));
  run_op(ws, "GivenTensorInt64Fill", {"x"}, {"y"}, {make_arg("values", I64{4, 5, 6})});
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<int64_t>({4, 5, 6}));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "GivenTensorInt64Fill", {"x"}, {"z"}, {make_arg("values", I64{4, 5})});
      },
      {"GivenTensorInt64Fill", "[3]", "\"x\"", "2"});
}

TEST(FillOps, GivenTensorFillReusesStorage) {
  Workspace ws;
  auto op = create_op(ws, "GivenTensorInt64Fill", {}, {"y"}, {make_arg("values", I64{1, 2, 3})});
  ASSERT_TRUE(op->run());
  const int64_t* p = fetch(ws, "y").data<int64_t>();
  ws.blob("y").get_mutable<Tensor>().mutable_data<int64_t>()[0] = 100;
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "y").data<int64_t>(), p);
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<int64_t>({1, 2, 3}));
}

}  // namespace
}  // namespace moka
