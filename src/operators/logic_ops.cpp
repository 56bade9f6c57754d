// Logic operators: comparisons EQ, NE, LT, LE, GT, GE (bool output) and boolean And, Or, Xor, Not.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <type_traits>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

enum class Bcast { None, Left, Right };

// Same rule as the arithmetic operators: same shape, or one side with a single element.
Bcast broadcast_of(const OperatorBase& op, const Tensor& a, const Tensor& b) {
  if (a.numel() == b.numel() && a.shape() == b.shape()) return Bcast::None;
  if (b.numel() == 1 && (a.numel() != 1 || a.ndim() >= b.ndim())) return Bcast::Right;
  if (a.numel() == 1) return Bcast::Left;
  throw TypeError(
      fmt::format("{}: inputs \"{}\" ({}) and \"{}\" ({}) must have the same shape, or one of them a "
                  "single element",
                  op.type(), op.input_name(0), a.describe(), op.input_name(1), b.describe()));
}

// Applies f elementwise with scalar broadcasting; the output is bool. Broadcast scalars are read
// before the output is resized, because the output may be one of the inputs.
template <class T, class F>
void binary_to_bool(const OperatorBase& op, const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const Bcast bc = broadcast_of(op, a, b);
  switch (bc) {
    case Bcast::None: {
      const int64_t n = a.numel();
      out.resize(DType::Bool, a.shape());  // in place (bool inputs only) keeps the shape and storage
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      bool* po = out.mutable_data<bool>();
      for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k], pb[k]);
      break;
    }
    case Bcast::Right: {
      const T y = b.data<T>()[0];
      const int64_t n = a.numel();
      out.resize(DType::Bool, a.shape());
      const T* pa = a.data<T>();
      bool* po = out.mutable_data<bool>();
      for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k], y);
      break;
    }
    case Bcast::Left: {
      const T x = a.data<T>()[0];
      const int64_t n = b.numel();
      out.resize(DType::Bool, b.shape());
      const T* pb = b.data<T>();
      bool* po = out.mutable_data<bool>();
      for (int64_t k = 0; k < n; ++k) po[k] = f(x, pb[k]);
      break;
    }
  }
}

[[noreturn]] void throw_dtype_mismatch(const OperatorBase& op, const Tensor& a, const Tensor& b) {
  throw TypeError(fmt::format("{}: inputs \"{}\" ({}) and \"{}\" ({}) have different dtypes", op.type(),
                              op.input_name(0), a.describe(), op.input_name(1), b.describe()));
}

struct EqFn {
  static constexpr const char* name = "EQ";
  static constexpr const char* sym = "==";
  using F = std::equal_to<>;
};
struct NeFn {
  static constexpr const char* name = "NE";
  static constexpr const char* sym = "!=";
  using F = std::not_equal_to<>;
};
struct LtFn {
  static constexpr const char* name = "LT";
  static constexpr const char* sym = "<";
  using F = std::less<>;
};
struct LeFn {
  static constexpr const char* name = "LE";
  static constexpr const char* sym = "<=";
  using F = std::less_equal<>;
};
struct GtFn {
  static constexpr const char* name = "GT";
  static constexpr const char* sym = ">";
  using F = std::greater<>;
};
struct GeFn {
  static constexpr const char* name = "GE";
  static constexpr const char* sym = ">=";
  using F = std::greater_equal<>;
};

template <class Fn>
constexpr bool kEquality = std::is_same_v<Fn, EqFn> || std::is_same_v<Fn, NeFn>;

template <class Fn>
class CompareOp final : public OperatorBase {
 public:
  CompareOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    (void)args().get_int("broadcast", 0);
    (void)args().get_int("axis", -1);
  }

  bool run() override {
    const Tensor& a = input(0);
    const Tensor& b = input(1);
    if (a.dtype() != b.dtype()) throw_dtype_mismatch(*this, a, b);
    Tensor& out = output(0);
    visit_dtype(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, std::string> && !kEquality<Fn>) {
        throw TypeError(fmt::format("{}: strings (inputs \"{}\", \"{}\") can only be compared with EQ and NE", type(),
                                    input_name(0), input_name(1)));
      } else if constexpr (std::is_same_v<T, std::string>) {
        // Strings are not trivially copyable: compare through references.
        const Bcast bc = broadcast_of(*this, a, b);
        const int64_t n = bc == Bcast::Left ? b.numel() : a.numel();
        const std::string* pa = a.data<std::string>();
        const std::string* pb = b.data<std::string>();
        // The output is bool and never aliases a string input, so resizing it cannot move pa/pb.
        out.resize(DType::Bool, bc == Bcast::Left ? b.shape() : a.shape());
        bool* po = out.mutable_data<bool>();
        typename Fn::F f;
        for (int64_t k = 0; k < n; ++k) po[k] = f(pa[bc == Bcast::Left ? 0 : k], pb[bc == Bcast::Right ? 0 : k]);
      } else {
        binary_to_bool<T>(*this, a, b, out, [](T x, T y) { return typename Fn::F{}(x, y); });
      }
    });
    return true;
  }
};

struct AndFn {
  static constexpr const char* name = "And";
  static bool apply(bool x, bool y) { return x && y; }
};
struct OrFn {
  static constexpr const char* name = "Or";
  static bool apply(bool x, bool y) { return x || y; }
};
struct XorFn {
  static constexpr const char* name = "Xor";
  static bool apply(bool x, bool y) { return x != y; }
};

template <class Fn>
class BoolBinaryOp final : public OperatorBase {
 public:
  BoolBinaryOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    (void)args().get_int("broadcast", 0);
    (void)args().get_int("axis", -1);
  }

  bool run() override {
    const Tensor& a = input(0);
    const Tensor& b = input(1);
    if (a.dtype() != DType::Bool || b.dtype() != DType::Bool)
      throw TypeError(fmt::format("{}: inputs must be bool tensors, got \"{}\" ({}) and \"{}\" ({})", type(),
                                  input_name(0), a.describe(), input_name(1), b.describe()));
    binary_to_bool<bool>(*this, a, b, output(0), [](bool x, bool y) { return Fn::apply(x, y); });
    return true;
  }
};

class NotOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const Tensor& a = input(0);
    if (a.dtype() != DType::Bool)
      throw TypeError(fmt::format("Not: input 0 (\"{}\") must be a bool tensor, got {}", input_name(0), a.describe()));
    Tensor& out = output(0);
    out.resize(DType::Bool, a.shape());
    const bool* pa = a.data<bool>();
    bool* po = out.mutable_data<bool>();
    const int64_t n = a.numel();
    for (int64_t k = 0; k < n; ++k) po[k] = !pa[k];
    return true;
  }
};

void add_broadcast_args(OpSchema& s) {
  s.arg("broadcast", ArgType::Int, "legacy Caffe2 flag; accepted and ignored (a single-element side always broadcasts)",
        "0");
  s.arg("axis", ArgType::Int, "legacy Caffe2 broadcast axis; accepted and ignored", "-1");
}

template <class Fn>
void register_compare(OperatorRegistry& reg) {
  OpSchema s(Fn::name);
  s.inputs(2).outputs(1);
  add_broadcast_args(s);
  s.doc(
      fmt::format("Elementwise A {} B as a bool tensor. Both inputs have the same dtype ({}) and either the same "
                  "shape or one side has a single element, which is broadcast. Not in place.",
                  Fn::sym, kEquality<Fn> ? "any, strings and bool included" : "numeric or bool; not string"));
  reg.add(std::move(s), [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
    return std::make_unique<CompareOp<Fn>>(d, ws);
  });
}

template <class Fn>
void register_bool_binary(OperatorRegistry& reg, const char* what) {
  OpSchema s(Fn::name);
  s.inputs(2).outputs(1).allow_inplace({{0, 0}});
  add_broadcast_args(s);
  s.doc(
      fmt::format("Elementwise logical {} of two bool tensors with the same shape, or one side a single element "
                  "(broadcast). Works in place on input 0.",
                  what));
  reg.add(std::move(s), [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
    return std::make_unique<BoolBinaryOp<Fn>>(d, ws);
  });
}

}  // namespace

namespace detail {

void register_logic_ops(OperatorRegistry& reg) {
  register_compare<EqFn>(reg);
  register_compare<NeFn>(reg);
  register_compare<LtFn>(reg);
  register_compare<LeFn>(reg);
  register_compare<GtFn>(reg);
  register_compare<GeFn>(reg);
  register_bool_binary<AndFn>(reg, "and");
  register_bool_binary<OrFn>(reg, "or");
  register_bool_binary<XorFn>(reg, "exclusive or");
  reg.add(OpSchema("Not").inputs(1).outputs(1).allow_inplace({{0, 0}}).doc(
              "Elementwise logical negation of a bool tensor. Works in place."),
          [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
            return std::make_unique<NotOp>(d, ws);
          });
}

}  // namespace detail
}  // namespace moka
