// DType names, sizes and code conversions.
#include "moka/core/dtype.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "moka/core/error.h"

namespace moka {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view caffe2;
  std::size_t size;
};
constexpr DTypeInfo kInfos[] = {
    {DType::Bool, "bool", "BOOL", 1},       {DType::Int8, "int8", "INT8", 1},
    {DType::UInt8, "uint8", "UINT8", 1},    {DType::Int16, "int16", "INT16", 2},
    {DType::Int32, "int32", "INT32", 4},    {DType::Int64, "int64", "INT64", 8},
    {DType::Float, "float32", "FLOAT", 4},  {DType::Double, "float64", "DOUBLE", 8},
    {DType::String, "string", "STRING", 0},
};
// The table and the inline dtype_size in the header must agree.
constexpr bool sizes_agree() {
  for (const auto& i : kInfos)
    if (dtype_size(i.type) != i.size) return false;
  return true;
}
static_assert(sizes_agree(), "kInfos and dtype_size disagree");
const DTypeInfo* find(DType t) {
  for (const auto& i : kInfos)
    if (i.type == t) return &i;
  return nullptr;
}
std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}
}  // namespace

std::string_view dtype_name(DType t) {
  const auto* i = find(t);
  return i ? i->name : "undefined";
}
std::string_view dtype_caffe2_name(DType t) {
  const auto* i = find(t);
  return i ? i->caffe2 : "UNDEFINED";
}
std::optional<DType> dtype_from_code(int64_t code) {
  for (const auto& i : kInfos)
    if (static_cast<int64_t>(i.type) == code) return i.type;
  return std::nullopt;
}
std::optional<DType> dtype_from_name(std::string_view name) {
  const std::string l = lower(name);
  for (const auto& i : kInfos)
    if (l == i.name || l == lower(i.caffe2)) return i.type;
  if (l == "float") return DType::Float;
  if (l == "double") return DType::Double;
  return std::nullopt;
}
std::string describe_dtype_code(int64_t code) {
  if (auto t = dtype_from_code(code)) return fmt::format("{} ({})", code, dtype_caffe2_name(*t));
  switch (code) {
    case 0:
      return "0 (UNDEFINED, not supported)";
    case 3:
      return "3 (BYTE, not supported; use UINT8 = 6)";
    case 8:
      return "8 (UINT16, not supported)";
    case 12:
      return "12 (FLOAT16, not supported)";
    default:
      return fmt::format("{} (not a TensorProto.DataType code)", code);
  }
}
bool dtype_is_integral(DType t) {
  return t == DType::Int8 || t == DType::UInt8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
bool dtype_is_floating(DType t) { return t == DType::Float || t == DType::Double; }

namespace detail {
void throw_undefined_dtype() { throw TypeError("tensor has no dtype (it was never filled)"); }
}  // namespace detail

}  // namespace moka
