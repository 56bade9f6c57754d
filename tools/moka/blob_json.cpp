// blob_json: a blob as the CLI prints it (tools/moka/blob_json.h).
#include "blob_json.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "moka/core/tensor.h"

namespace moka_cli {

namespace {

// JSON has no literal for non-finite numbers; they print as the strings the plan format reads.
// A float32 prints in its shortest form ("0.1", not 0.10000000149011612), which reads back as the
// same float32.
template <typename T>
Json number_json(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if constexpr (std::is_same_v<T, float>) return std::strtod(fmt::format("{}", v).c_str(), nullptr);
  return static_cast<double>(v);
}

}  // namespace

Json blob_json(const moka::Blob& blob) {
  const moka::Tensor* t = blob.tensor_or_null();
  if (!t || !t->defined()) {
    return Json{{"type", blob.is_initialized() ? std::string(blob.type_name()) : "nothing"}};
  }
  Json data = Json::array();
  moka::visit_dtype(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (const auto& v : t->values<T>()) {
      if constexpr (std::is_floating_point_v<T>) {
        data.push_back(number_json(v));
      } else if constexpr (std::is_same_v<T, bool>) {
        data.push_back(static_cast<bool>(v));
      } else if constexpr (std::is_same_v<T, std::string>) {
        data.push_back(v);
      } else {
        data.push_back(static_cast<int64_t>(v));
      }
    }
  });
  return Json{{"dtype", std::string(moka::dtype_name(t->dtype()))}, {"shape", t->shape()}, {"data", data}};
}

}  // namespace moka_cli
