// Arithmetic operators: Add, Sub, Mul, Div (same shape or one scalar side) and Sum (n same-shape inputs).
#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"
#include "operators/elementwise_loops.h"

namespace moka {

namespace {

// Integer arithmetic is done in an unsigned type at least as wide as unsigned int, so overflow
// wraps (two's complement) instead of being undefined; small types would otherwise promote to int.
template <class T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct AddFn {
  static constexpr const char* name = "Add";
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    else
      return a + b;
  }
};
struct SubFn {
  static constexpr const char* name = "Sub";
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b));
    else
      return a - b;
  }
};
struct MulFn {
  static constexpr const char* name = "Mul";
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    else
      return a * b;
  }
};
struct DivFn {
  static constexpr const char* name = "Div";
  // Integer division checks its divisor first (see check_divisor); here it is known to be safe.
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(a / b);
    else
      return a / b;
  }
};

template <class Fn, class T>
[[noreturn]] void throw_bad_division(const OperatorBase& op, T a, T b) {
  if (b == 0)
    throw RuntimeError(fmt::format("{}: integer division by zero (inputs \"{}\", \"{}\")", op.type(), op.input_name(0),
                                   op.input_name(1)));
  throw RuntimeError(fmt::format("{}: integer overflow: {} / {} (inputs \"{}\", \"{}\")", op.type(), +a, +b,
                                 op.input_name(0), op.input_name(1)));
}

template <class Fn, class T>
inline bool division_is_bad(T a, T b) {
  if constexpr (std::is_same_v<Fn, DivFn> && std::is_integral_v<T>) {
    if (b == 0) return true;
    if constexpr (std::is_signed_v<T>) return b == T(-1) && a == std::numeric_limits<T>::min();
  }
  (void)a;
  (void)b;
  return false;
}

// Which side (if any) broadcasts a single element.
enum class Bcast { None, Left, Right };

[[noreturn]] void throw_shape_mismatch(const OperatorBase& op, const Tensor& a, const Tensor& b, bool axis_given) {
  throw TypeError(
      fmt::format("{}: inputs \"{}\" ({}) and \"{}\" ({}) must have the same shape, or one of them a single element{}",
                  op.type(), op.input_name(0), a.describe(), op.input_name(1), b.describe(),
                  axis_given ? "; broadcasting along an axis (argument \"axis\"/\"broadcast\") is not supported" : ""));
}

// Decides output shape and broadcasting for two inputs; throws TypeError for incompatible shapes.
inline Bcast broadcast_of(const OperatorBase& op, const Tensor& a, const Tensor& b, bool axis_given) {
  if (a.numel() == b.numel() && a.shape() == b.shape()) return Bcast::None;
  if (b.numel() == 1 && (a.numel() != 1 || a.ndim() >= b.ndim())) return Bcast::Right;
  if (a.numel() == 1) return Bcast::Left;
  throw_shape_mismatch(op, a, b, axis_given);
}

// Tensor::resize with a shortcut for the steady state (same dtype and shape as the last run), which is
// the hot path of every loop: no numel recomputation, no storage checks.
inline void fit(Tensor& out, DType dtype, const std::vector<int64_t>& shape) { out.resize(dtype, shape); }

bool is_arith_dtype(DType t) { return t != DType::Bool && t != DType::String && t != DType::Undefined; }

template <class Fn>
class BinaryArithOp final : public OperatorBase {
 public:
  BinaryArithOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    // `broadcast` and `axis` are Caffe2's legacy broadcasting arguments; only scalar broadcasting exists here.
    (void)args().get_int("broadcast", 0);
    const int64_t axis = args().get_int("axis", -1);
    axis_given_ = args().has("axis") && axis != -1;
  }

  bool run() override {
    const Tensor& a = input(0);
    const Tensor& b = input(1);
    if (a.dtype() != b.dtype() || !is_arith_dtype(a.dtype())) throw_dtype_error(a, b);
    switch (a.dtype()) {
      case DType::Int8:
        compute<int8_t>(a, b);
        break;
      case DType::UInt8:
        compute<uint8_t>(a, b);
        break;
      case DType::Int16:
        compute<int16_t>(a, b);
        break;
      case DType::Int32:
        compute<int32_t>(a, b);
        break;
      case DType::Int64:
        compute<int64_t>(a, b);
        break;
      case DType::Float:
        compute<float>(a, b);
        break;
      case DType::Double:
        compute<double>(a, b);
        break;
      default:
        throw_dtype_error(a, b);
    }
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& a, const Tensor& b) {
    Tensor& out = output(0);
    // Single elements on both sides: the common case in control flow (counters, iterations).
    if (a.numel() == 1 && b.numel() == 1) {
      const T x = a.data<T>()[0];
      const T y = b.data<T>()[0];
      if (division_is_bad<Fn>(x, y)) throw_bad_division<Fn>(*this, x, y);
      fit(out, a.dtype(), a.ndim() >= b.ndim() ? a.shape() : b.shape());
      out.mutable_data<T>()[0] = Fn::apply(x, y);
      return;
    }
    const Bcast bc = broadcast_of(*this, a, b, axis_given_);
    const int64_t n = bc == Bcast::Left ? b.numel() : a.numel();
    if constexpr (std::is_same_v<Fn, DivFn> && std::is_integral_v<T>) {
      // Check every divisor before writing anything, so a failed Div leaves its output untouched.
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      for (int64_t k = 0; k < n; ++k) {
        const T x = bc == Bcast::Left ? pa[0] : pa[k];
        const T y = bc == Bcast::Right ? pb[0] : pb[k];
        if (division_is_bad<Fn>(x, y)) throw_bad_division<Fn>(*this, x, y);
      }
    }
    // Read a broadcast scalar before resizing: the output may be that same (growing) tensor.
    switch (bc) {
      case Bcast::None: {
        fit(out, a.dtype(), a.shape());
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.mutable_data<T>();
        detail::elementwise_same<Fn>(pa, pb, po, n);
        break;
      }
      case Bcast::Right: {
        const T y = b.data<T>()[0];
        fit(out, a.dtype(), a.shape());
        const T* pa = a.data<T>();
        T* po = out.mutable_data<T>();
        detail::elementwise_right<Fn>(pa, y, po, n);
        break;
      }
      case Bcast::Left: {
        const T x = a.data<T>()[0];
        fit(out, b.dtype(), b.shape());
        const T* pb = b.data<T>();
        T* po = out.mutable_data<T>();
        detail::elementwise_left<Fn>(x, pb, po, n);
        break;
      }
    }
  }

  [[noreturn]] void throw_dtype_error(const Tensor& a, const Tensor& b) const {
    if (a.dtype() != b.dtype())
      throw TypeError(fmt::format("{}: inputs \"{}\" ({}) and \"{}\" ({}) have different dtypes", type(), input_name(0),
                                  a.describe(), input_name(1), b.describe()));
    throw TypeError(fmt::format("{}: dtype {} of inputs \"{}\" and \"{}\" is not supported (numeric types only)",
                                type(), dtype_name(a.dtype()), input_name(0), input_name(1)));
  }

  bool axis_given_ = false;
};

class SumOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;

  bool run() override {
    const Tensor& first = input(0);
    if (!is_arith_dtype(first.dtype()))
      throw TypeError(fmt::format("Sum: dtype {} of input 0 (\"{}\") is not supported (numeric types only)",
                                  dtype_name(first.dtype()), input_name(0)));
    for (std::size_t i = 1; i < input_size(); ++i) {
      const Tensor& t = input(i);
      if (t.dtype() != first.dtype())
        throw TypeError(fmt::format("Sum: input {} (\"{}\", {}) has a different dtype than input 0 (\"{}\", {})", i,
                                    input_name(i), t.describe(), input_name(0), first.describe()));
      if (t.shape() != first.shape())
        throw TypeError(fmt::format("Sum: input {} (\"{}\", {}) has a different shape than input 0 (\"{}\", {})", i,
                                    input_name(i), t.describe(), input_name(0), first.describe()));
    }
    visit_dtype(first.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, std::string>) compute<T>(first);
    });
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& first) {
    Tensor& out = output(0);
    const int64_t n = first.numel();
    if (&out != &first) {  // in place (0 -> 0) the accumulator already holds input 0
      fit(out, first.dtype(), first.shape());
      const T* p0 = first.data<T>();
      T* po = out.mutable_data<T>();
      for (int64_t k = 0; k < n; ++k) po[k] = p0[k];
    }
    T* po = out.mutable_data<T>();
    for (std::size_t i = 1; i < input_size(); ++i) {
      const T* pi = input(i).data<T>();
      for (int64_t k = 0; k < n; ++k) po[k] = AddFn::apply(po[k], pi[k]);
    }
  }
};

template <class Fn>
void register_binary(OperatorRegistry& reg, const std::string& what) {
  OpSchema s(Fn::name);
  s.inputs(2).outputs(1).allow_inplace({{0, 0}, {1, 0}});
  s.arg("broadcast", ArgType::Int, "legacy Caffe2 flag; accepted and ignored (a single-element side always broadcasts)",
        "0");
  s.arg("axis", ArgType::Int,
        "legacy Caffe2 broadcast axis; accepted, but broadcasting along an axis is not supported (-1 = unset)", "-1");
  s.doc(fmt::format(
      "Elementwise {}. Both inputs have the same numeric dtype (not bool or string) and either the same shape or "
      "one side has a single element, which is broadcast; the output has the other side's shape. Integer overflow "
      "wraps around (two's complement); floating point follows IEEE 754.{} Works in place on either input.",
      what,
      std::string(Fn::name) == "Div"
          ? " Integer division truncates toward zero; an integer divisor of zero, or the minimum value divided by "
            "-1, is a RuntimeError and leaves the output untouched."
          : ""));
  reg.add(std::move(s), [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
    return std::make_unique<BinaryArithOp<Fn>>(d, ws);
  });
}

}  // namespace

namespace detail {

void register_math_ops(OperatorRegistry& reg) {
  register_binary<AddFn>(reg, "sum A + B");
  register_binary<SubFn>(reg, "difference A - B");
  register_binary<MulFn>(reg, "product A * B");
  register_binary<DivFn>(reg, "quotient A / B");
  reg.add(OpSchema("Sum")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1)
              .allow_inplace({{0, 0}})
              .doc("Elementwise sum of all inputs, which must share one numeric dtype and one shape (no "
                   "broadcasting). Integer overflow wraps around. Works in place on input 0."),
          [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
            return std::make_unique<SumOp>(d, ws);
          });
}

}  // namespace detail
}  // namespace moka
