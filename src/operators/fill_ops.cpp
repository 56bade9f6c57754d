// Fill operators: ConstantFill and the GivenTensor*Fill family (Caffe2 filler_op / given_tensor_fill_op).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

// ---- exact conversions of argument values (never UB: ranges are checked before any cast) ----

template <class T>
std::optional<T> exact_from_int(int64_t v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v == 0 || v == 1) return v == 1;
    return std::nullopt;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::in_range<T>(v)) return static_cast<T>(v);
    return std::nullopt;
  } else {
    const T t = static_cast<T>(v);
    const double d = static_cast<double>(t);
    if (d >= -0x1p63 && d < 0x1p63 && static_cast<int64_t>(d) == v) return t;
    return std::nullopt;
  }
}

template <class T>
std::optional<T> exact_from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v == 0.0 || v == 1.0) return v == 1.0;
    return std::nullopt;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isfinite(v) && std::trunc(v) == v && v >= static_cast<double>(std::numeric_limits<T>::min()) &&
        v < static_cast<double>(std::numeric_limits<T>::max()) + 1.0)
      return static_cast<T>(v);
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, float>) {
    // float64 arguments round to float32 (that is what a float32 fill means); only overflow is refused.
    if (std::isfinite(v) && std::abs(v) > static_cast<double>(std::numeric_limits<float>::max())) return std::nullopt;
    return static_cast<float>(v);
  } else {
    return v;
  }
}

std::string fill_hint(DType dt) {
  if (dt == DType::Bool) return "bool fills take 0 or 1";
  if (dtype_is_integral(dt)) return "integer fills take the value in \"i\"";
  return "floating fills take the value in \"f\"";
}

// ---- output shape: `shape`, or the input's shape / values, plus `extra_shape` ----

class FillShape {
 public:
  explicit FillShape(const OperatorBase& op) {
    const Arguments& a = op.args();
    has_input_ = op.input_size() == 1;
    input_as_shape_ = a.get_bool("input_as_shape", false);
    extra_ = a.get_ints("extra_shape");
    if (has_input_) {
      if (a.has("shape"))
        throw InvalidInput(
            fmt::format("{}: cannot set argument \"shape\" and pass in an input (\"{}\") at the same time", op.type(),
                        op.input_name(0)));
    } else {
      if (a.has("extra_shape"))
        throw InvalidInput(fmt::format("{}: argument \"extra_shape\" needs an input to extend", op.type()));
      if (input_as_shape_)
        throw InvalidInput(fmt::format("{}: argument \"input_as_shape\" = 1 needs an input", op.type()));
      shape_ = a.get_ints("shape");
    }
    check_dims(op, "shape", shape_);
    check_dims(op, "extra_shape", extra_);
  }

  bool is_static() const { return !has_input_; }
  const std::vector<int64_t>& static_shape() const { return shape_; }

  /// The shape for this run; the returned span stays valid until the next call.
  std::span<const int64_t> resolve(const OperatorBase& op) {
    if (!has_input_) return shape_;
    const Tensor& in = op.input(0);
    if (!input_as_shape_) {
      scratch_.assign(in.shape().begin(), in.shape().end());
    } else if (in.ndim() == 1 && in.dtype() == DType::Int64) {
      auto v = in.values<int64_t>();
      scratch_.assign(v.begin(), v.end());
    } else if (in.ndim() == 1 && in.dtype() == DType::Int32) {
      auto v = in.values<int32_t>();
      scratch_.assign(v.begin(), v.end());
    } else {
      throw TypeError(
          fmt::format("{}: with input_as_shape = 1, input 0 (\"{}\") must be a 1-d int64 or int32 tensor, got {}",
                      op.type(), op.input_name(0), in.describe()));
    }
    scratch_.insert(scratch_.end(), extra_.begin(), extra_.end());
    for (int64_t d : scratch_)
      if (d < 0)
        throw InvalidInput(fmt::format("{}: shape {} taken from input 0 (\"{}\") has a negative dimension", op.type(),
                                       shape_string(scratch_), op.input_name(0)));
    return scratch_;
  }

 private:
  static void check_dims(const OperatorBase& op, const char* name, const std::vector<int64_t>& dims) {
    for (int64_t d : dims)
      if (d < 0)
        throw InvalidInput(
            fmt::format("{}: argument \"{}\" = {} has a negative dimension", op.type(), name, shape_string(dims)));
    try {
      (void)shape_numel(dims);
    } catch (const InvalidInput&) {
      throw InvalidInput(fmt::format("{}: argument \"{}\" = {} is too large", op.type(), name, shape_string(dims)));
    }
  }

  bool has_input_ = false;
  bool input_as_shape_ = false;
  std::vector<int64_t> shape_, extra_, scratch_;
};

void add_shape_args(OpSchema& s) {
  s.arg("shape", ArgType::Ints, "output shape (only without an input)", "[] (a 0-d scalar)")
      .arg("extra_shape", ArgType::Ints, "dimensions appended to the input-derived shape (only with an input)", "[]")
      .arg("input_as_shape", ArgType::Bool,
           "1: input 0 is a 1-d int64/int32 tensor holding the output shape; 0: the output takes input 0's shape", "0");
}

// ---- ConstantFill ----

class ConstantFillOp final : public OperatorBase {
 public:
  ConstantFillOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), shape_(*this), dtype_(args().get_dtype("dtype", DType::Float)) {
    const Argument* a = args().find("value");
    if (a && a->s.has_value() != (dtype_ == DType::String))
      throw InvalidInput(fmt::format("ConstantFill: argument \"value\" must be a {} for dtype {}",
                                     dtype_ == DType::String ? "string (\"s\")" : "number (\"i\" or \"f\")",
                                     dtype_caffe2_name(dtype_)));
    value_ = visit_dtype(dtype_, [&](auto tag) -> Tensor {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, std::string>) {
        return Tensor::scalar<std::string>(a ? *a->s : std::string());
      } else {
        if (a == nullptr) return Tensor::scalar<T>(T{});
        std::optional<T> v = a->i ? exact_from_int<T>(*a->i) : exact_from_double<T>(*a->f);
        if (!v)
          throw InvalidInput(
              fmt::format("ConstantFill: argument \"value\" = {} cannot be represented exactly as {} ({})",
                          a->i ? fmt::format("{}", *a->i) : fmt::format("{}", *a->f), dtype_caffe2_name(dtype_),
                          fill_hint(dtype_)));
        return Tensor::scalar<T>(*v);
      }
    });
  }

  bool run() override {
    std::span<const int64_t> shape = shape_.resolve(*this);
    Tensor& out = output(0);
    out.resize(dtype_, shape);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      const T& v = value_.data<T>()[0];
      T* p = out.mutable_data<T>();
      const int64_t n = out.numel();
      for (int64_t k = 0; k < n; ++k) p[k] = v;
    });
    return true;
  }

 private:
  FillShape shape_;
  DType dtype_;
  Tensor value_;  // 0-d, of dtype_
};

// ---- GivenTensor*Fill ----

// Reads `values` in the op's form, converting each element to T exactly.
template <class T>
std::vector<T> given_values(const OperatorBase& op) {
  const Arguments& a = op.args();
  std::vector<T> out;
  auto fail = [&](std::size_t k, const std::string& v, const char* why) {
    throw InvalidInput(
        fmt::format("{}: argument \"values\"[{}] = {} {} {}", op.type(), k, v, why, dtype_caffe2_name(dtype_of<T>())));
  };
  if constexpr (std::is_same_v<T, std::string>) {
    out = a.get_strings("values");
  } else if (op.type() == "GivenTensorFill" || op.type() == "GivenTensorDoubleFill") {
    const std::vector<double> src = a.get_floats("values");
    out.reserve(src.size());
    for (std::size_t k = 0; k < src.size(); ++k) {
      auto v = exact_from_double<T>(src[k]);
      if (!v) fail(k, fmt::format("{}", src[k]), "cannot be represented exactly as");
      out.push_back(*v);
    }
  } else {
    const std::vector<int64_t> src = a.get_ints("values");
    out.reserve(src.size());
    for (std::size_t k = 0; k < src.size(); ++k) {
      auto v = exact_from_int<T>(src[k]);
      if (!v) fail(k, fmt::format("{}", src[k]), "does not fit");
      out.push_back(*v);
    }
  }
  return out;
}

class GivenTensorFillOp final : public OperatorBase {
 public:
  GivenTensorFillOp(const OperatorDef& def, Workspace* ws, DType fixed)
      : OperatorBase(def, ws), shape_(*this), dtype_(fixed) {
    if (type() == "GivenTensorFill") {
      dtype_ = args().get_dtype("dtype", DType::Float);
      if (dtype_ == DType::String)
        throw InvalidInput("GivenTensorFill: argument \"dtype\" = STRING is not supported (use GivenTensorStringFill)");
    }
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> v = given_values<T>(*this);
      count_ = static_cast<int64_t>(v.size());
      std::vector<int64_t> shape{count_};
      if (shape_.is_static() && args().has("shape")) shape = shape_.static_shape();
      if (shape_numel(shape) != count_)
        throw InvalidInput(fmt::format("{}: argument \"shape\" {} needs {} values, but \"values\" has {}", type(),
                                       shape_string(shape), shape_numel(shape), count_));
      values_ = Tensor::from_vector<T>(std::move(shape), v);
    });
  }

  bool run() override {
    Tensor& out = output(0);
    if (shape_.is_static()) {
      out.copy_from(values_);
      return true;
    }
    std::span<const int64_t> shape = shape_.resolve(*this);
    const int64_t n = shape_numel(shape);
    if (n != count_)
      throw InvalidInput(fmt::format("{}: shape {} (from input 0, \"{}\") needs {} values, but \"values\" has {}",
                                     type(), shape_string(shape), input_name(0), n, count_));
    out.resize(dtype_, shape);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      auto src = values_.values<T>();
      std::copy(src.begin(), src.end(), out.mutable_data<T>());
    });
    return true;
  }

 private:
  FillShape shape_;
  DType dtype_;
  int64_t count_ = 0;
  Tensor values_;  // in its final shape when the shape is static, else 1-d
};

void register_given_fill(OperatorRegistry& reg, const char* type, DType dtype, ArgType values_type,
                         const std::string& values_doc, const std::string& doc) {
  OpSchema s(type);
  s.inputs(0, 1).outputs(1).allow_inplace({{0, 0}});
  s.required_arg("values", values_type, values_doc);
  add_shape_args(s);
  if (std::string(type) == "GivenTensorFill")
    s.arg("dtype", ArgType::DType,
          "element type; each value must convert exactly (0/1 for BOOL, integers for integer types)", "FLOAT (1)");
  s.doc(doc +
        " Without `shape` the output is 1-d with one element per value; the element count must match the "
        "shape (InvalidInput naming both). The tensor is built once, when the operator is constructed, and "
        "copied into the output's storage on every run.");
  reg.add(std::move(s), [dtype](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
    return std::make_unique<GivenTensorFillOp>(d, ws, dtype);
  });
}

}  // namespace

namespace detail {

void register_fill_ops(OperatorRegistry& reg) {
  {
    OpSchema s("ConstantFill");
    s.inputs(0, 1).outputs(1).allow_inplace({{0, 0}});
    s.arg("value", ArgType::Number,
          "fill value: in \"i\" for integer and bool dtypes, in \"f\" for floating ones; the other field is "
          "accepted when the conversion is exact",
          "0");
    s.arg("dtype", ArgType::DType, "element type (STRING takes a string value, in \"s\")", "FLOAT (1)");
    add_shape_args(s);
    s.doc(
        "Fills the output with `value`. Without an input the shape is `shape` (default [], a 0-d scalar); with "
        "one input the output takes the input's shape (input_as_shape = 0) or the shape the input holds "
        "(input_as_shape = 1), followed by `extra_shape`. Arguments are checked when the operator is constructed.");
    reg.add(std::move(s), [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
      return std::make_unique<ConstantFillOp>(d, ws);
    });
  }
  register_given_fill(reg, "GivenTensorFill", DType::Float, ArgType::Floats, "the elements, row-major",
                      "Fills the output with the given values, as float32 unless `dtype` says otherwise.");
  register_given_fill(reg, "GivenTensorDoubleFill", DType::Double, ArgType::Floats, "the elements, row-major",
                      "Fills the output with the given float64 values.");
  register_given_fill(reg, "GivenTensorIntFill", DType::Int32, ArgType::Ints,
                      "the elements, row-major; each must fit int32", "Fills the output with the given int32 values.");
  register_given_fill(reg, "GivenTensorInt64Fill", DType::Int64, ArgType::Ints, "the elements, row-major",
                      "Fills the output with the given int64 values.");
  register_given_fill(reg, "GivenTensorBoolFill", DType::Bool, ArgType::Ints, "the elements, row-major; each 0 or 1",
                      "Fills the output with the given bool values.");
  register_given_fill(reg, "GivenTensorStringFill", DType::String, ArgType::Strings, "the elements, row-major",
                      "Fills the output with the given strings.");
}

}  // namespace detail
}  // namespace moka
