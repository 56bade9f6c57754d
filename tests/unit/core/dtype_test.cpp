// Unit tests for DType: Caffe2 codes, names in both spellings, sizes, classification, visit_dtype.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "moka/core/dtype.h"
#include "moka/core/error.h"

namespace moka {
namespace {

struct Expected {
  DType type;
  int code;
  const char* name;
  const char* caffe2;
  std::size_t size;
  bool integral;
  bool floating;
};

constexpr Expected kAll[] = {
    {DType::Float, 1, "float32", "FLOAT", 4, false, true},    {DType::Int32, 2, "int32", "INT32", 4, true, false},
    {DType::String, 4, "string", "STRING", 0, false, false},  {DType::Bool, 5, "bool", "BOOL", 1, false, false},
    {DType::UInt8, 6, "uint8", "UINT8", 1, true, false},      {DType::Int8, 7, "int8", "INT8", 1, true, false},
    {DType::Int16, 9, "int16", "INT16", 2, true, false},      {DType::Int64, 10, "int64", "INT64", 8, true, false},
    {DType::Double, 13, "float64", "DOUBLE", 8, false, true},
};

TEST(DType, EveryDTypeHasCaffe2CodeNamesAndSize) {
  for (const auto& e : kAll) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<int>(e.type), e.code);
    EXPECT_EQ(dtype_name(e.type), e.name);
    EXPECT_EQ(dtype_caffe2_name(e.type), e.caffe2);
    EXPECT_EQ(dtype_size(e.type), e.size);
    EXPECT_EQ(dtype_is_integral(e.type), e.integral);
    EXPECT_EQ(dtype_is_floating(e.type), e.floating);
    EXPECT_EQ(dtype_from_code(e.code), e.type);
    EXPECT_EQ(dtype_from_name(e.name), e.type);
    EXPECT_EQ(dtype_from_name(e.caffe2), e.type);
  }
}

TEST(DType, UndefinedHasNoNameSizeOrCode) {
  EXPECT_EQ(dtype_name(DType::Undefined), "undefined");
  EXPECT_EQ(dtype_caffe2_name(DType::Undefined), "UNDEFINED");
  EXPECT_EQ(dtype_size(DType::Undefined), 0u);
  EXPECT_FALSE(dtype_from_code(0).has_value());
  EXPECT_FALSE(dtype_is_integral(DType::Undefined));
  EXPECT_FALSE(dtype_is_floating(DType::Undefined));
}

TEST(DType, UnsupportedCodesAreRejected) {
  for (int64_t code : std::initializer_list<int64_t>{-1, 0, 3, 8, 11, 12, 14, 100, int64_t{1} << 40}) {
    EXPECT_FALSE(dtype_from_code(code).has_value()) << code;
  }
}

TEST(DType, NamesAreCaseInsensitiveWithAliases) {
  EXPECT_EQ(dtype_from_name("Int64"), DType::Int64);
  EXPECT_EQ(dtype_from_name("iNt32"), DType::Int32);
  EXPECT_EQ(dtype_from_name("float"), DType::Float);
  EXPECT_EQ(dtype_from_name("FLOAT32"), DType::Float);
  EXPECT_EQ(dtype_from_name("double"), DType::Double);
  EXPECT_EQ(dtype_from_name("Float64"), DType::Double);
  EXPECT_EQ(dtype_from_name("Bool"), DType::Bool);
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(dtype_from_name("int128").has_value());
  EXPECT_FALSE(dtype_from_name("undefined").has_value());
  EXPECT_FALSE(dtype_from_name("int64 ").has_value());
}

TEST(DType, DescribeCodeExplainsUnsupported) {
  EXPECT_EQ(describe_dtype_code(10), "10 (INT64)");
  EXPECT_EQ(describe_dtype_code(1), "1 (FLOAT)");
  EXPECT_EQ(describe_dtype_code(0), "0 (UNDEFINED, not supported)");
  EXPECT_EQ(describe_dtype_code(3), "3 (BYTE, not supported; use UINT8 = 6)");
  EXPECT_EQ(describe_dtype_code(8), "8 (UINT16, not supported)");
  EXPECT_EQ(describe_dtype_code(12), "12 (FLOAT16, not supported)");
  EXPECT_EQ(describe_dtype_code(99), "99 (not a TensorProto.DataType code)");
}

TEST(DType, DTypeOfMapsCppTypes) {
  static_assert(dtype_of<bool>() == DType::Bool);
  static_assert(dtype_of<int8_t>() == DType::Int8);
  static_assert(dtype_of<uint8_t>() == DType::UInt8);
  static_assert(dtype_of<int16_t>() == DType::Int16);
  static_assert(dtype_of<int32_t>() == DType::Int32);
  static_assert(dtype_of<int64_t>() == DType::Int64);
  static_assert(dtype_of<float>() == DType::Float);
  static_assert(dtype_of<double>() == DType::Double);
  static_assert(dtype_of<std::string>() == DType::String);
  SUCCEED();
}

TEST(DType, VisitCallsWithMatchingCppType) {
  for (const auto& e : kAll) {
    SCOPED_TRACE(e.name);
    DType seen = visit_dtype(e.type, [](auto tag) { return dtype_of<decltype(tag)>(); });
    EXPECT_EQ(seen, e.type);
    std::size_t size = visit_dtype(e.type, [](auto tag) -> std::size_t {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, std::string>)
        return 0;
      else
        return sizeof(T);
    });
    EXPECT_EQ(size, e.size);
  }
}

TEST(DType, VisitUndefinedThrowsTypeError) {
  EXPECT_THROW(visit_dtype(DType::Undefined, [](auto) { return 0; }), TypeError);
}

}  // namespace
}  // namespace moka
