// Element types of tensors, numbered like Caffe2's TensorProto.DataType so plans stay compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moka {

/// Tensor element type. Values are Caffe2's `TensorProto.DataType` codes.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,  ///< float32
  Int32 = 2,
  String = 4,
  Bool = 5,
  UInt8 = 6,
  Int8 = 7,
  Int16 = 9,
  Int64 = 10,
  Double = 13,  ///< float64
};

/// moka's short name: "bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64", "string".
std::string_view dtype_name(DType t);
/// Caffe2's enum name: "BOOL", "INT8", ..., "FLOAT", "DOUBLE", "STRING".
std::string_view dtype_caffe2_name(DType t);
/// Bytes per element; 0 for String and Undefined. Inline: every tensor resize and copy asks.
constexpr std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
      return 2;
    case DType::Int32:
    case DType::Float:
      return 4;
    case DType::Int64:
    case DType::Double:
      return 8;
    case DType::String:
    case DType::Undefined:
      return 0;
  }
  return 0;
}
/// The DType for a Caffe2 code, or nullopt if the code is not one moka supports.
std::optional<DType> dtype_from_code(int64_t code);
/// Accepts Caffe2 names ("INT64", "FLOAT") and moka names ("int64", "float32"), case-insensitive.
std::optional<DType> dtype_from_name(std::string_view name);
/// Human description of a code for error messages ("10 (INT64)", "3 (BYTE, not supported)").
std::string describe_dtype_code(int64_t code);

bool dtype_is_integral(DType t);  ///< bool excluded
bool dtype_is_floating(DType t);

template <class T>
constexpr DType dtype_of() = delete;
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::Int8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return DType::Int16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::Float;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Double;
}
template <>
constexpr DType dtype_of<std::string>() {
  return DType::String;
}

/// Calls f(T{}) with the C++ type of t (every supported dtype, strings included).
/// Throws TypeError for Undefined.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f);

namespace detail {
[[noreturn]] void throw_undefined_dtype();
}

template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(bool{});
    case DType::Int8:
      return f(int8_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::Float:
      return f(float{});
    case DType::Double:
      return f(double{});
    case DType::String:
      return f(std::string{});
    case DType::Undefined:
      break;
  }
  detail::throw_undefined_dtype();
}

}  // namespace moka
