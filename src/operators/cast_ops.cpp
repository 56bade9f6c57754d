// Cast: converts a tensor to another dtype, refusing conversions that would lose the value (never UB).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

class CastOp final : public OperatorBase {
 public:
  CastOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), to_(args().get_dtype("to", DType::Undefined)) {}

  bool run() override {
    const Tensor& in = input(0);
    Tensor& out = output(0);
    const DType from = in.dtype();
    if (from == to_) {
      if (&out != &in) out.copy_from(in);
      return true;
    }
    if (from == DType::String || to_ == DType::String)
      throw TypeError(fmt::format("Cast: cannot cast input 0 (\"{}\", {}) to {}: strings convert only to strings",
                                  input_name(0), in.describe(), dtype_caffe2_name(to_)));
    // In place with a new dtype: convert into scratch storage, then swap (both buffers are reused).
    Tensor& target = (&out == &in) ? scratch_ : out;
    target.resize(to_, in.shape());
    visit_dtype(from, [&](auto from_tag) {
      using From = decltype(from_tag);
      visit_dtype(to_, [&](auto to_tag) {
        using To = decltype(to_tag);
        if constexpr (!std::is_same_v<From, std::string> && !std::is_same_v<To, std::string>) {
          convert<From, To>(in.data<From>(), target.mutable_data<To>(), in.numel());
        }
      });
    });
    if (&target == &scratch_) std::swap(out, scratch_);
    return true;
  }

 private:
  template <class From, class To>
  void convert(const From* src, To* dst, int64_t n) const {
    for (int64_t k = 0; k < n; ++k) {
      const From v = src[k];
      if constexpr (std::is_same_v<To, bool>) {
        dst[k] = v != From{};
      } else if constexpr (std::is_same_v<From, bool> || std::is_floating_point_v<To>) {
        dst[k] = static_cast<To>(v);  // 0/1, or any value to a floating type (rounds; IEEE overflow to inf)
      } else if constexpr (std::is_integral_v<From>) {
        if (!std::in_range<To>(v)) fail(k, fmt::format("{}", +v));
        dst[k] = static_cast<To>(v);
      } else {
        const double t = std::trunc(static_cast<double>(v));
        if (!(t >= static_cast<double>(std::numeric_limits<To>::min()) &&
              t < static_cast<double>(std::numeric_limits<To>::max()) + 1.0))
          fail(k, fmt::format("{}", v));
        dst[k] = static_cast<To>(t);
      }
    }
  }

  [[noreturn]] void fail(int64_t k, const std::string& value) const {
    throw RuntimeError(fmt::format("Cast: value {} (element {} of input 0, \"{}\") cannot be converted to {}", value, k,
                                   input_name(0), dtype_caffe2_name(to_)));
  }

  DType to_;
  Tensor scratch_;
};

}  // namespace

namespace detail {

void register_cast_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("Cast")
              .inputs(1)
              .outputs(1)
              .allow_inplace({{0, 0}})
              .required_arg("to", ArgType::DType, "target dtype (TensorProto.DataType code or name)")
              .doc("Converts input 0 to dtype `to`, keeping its shape. Numeric types convert to each other: to "
                   "BOOL is x != 0, from BOOL is 0/1, integer to floating rounds to nearest, floating to integer "
                   "truncates toward zero. A value the target cannot hold (NaN, infinity or out of range, integer "
                   "narrowing included) is a RuntimeError naming the value — never a wrapped or undefined result. "
                   "Strings convert only to strings. Works in place."),
          [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
            return std::make_unique<CastOp>(d, ws);
          });
}

}  // namespace detail
}  // namespace moka
