// moka::Net: process-wide net names, Caffe2's blob naming, operator validation, Const and attributes.
#include "moka/builder/net.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "moka/builder/context.h"
#include "moka/builder/name_scope.h"
#include "moka/core/error.h"
#include "moka/exec/control_ops.h"
#include "moka/exec/register_operators.h"
#include "moka/exec/simple_net.h"
#include "moka/operators/operator.h"
#include "moka/operators/registry.h"
#include "unique_names.h"

namespace moka {

NetAttribute::~NetAttribute() = default;

// ---- Arg / Outputs ----

Arg::Arg(std::string name, std::initializer_list<int> values)
    : arg_(make_arg(std::move(name), std::vector<int64_t>(values.begin(), values.end()))) {}
Arg::Arg(std::string name, std::initializer_list<int64_t> values)
    : arg_(make_arg(std::move(name), std::vector<int64_t>(values))) {}
Arg::Arg(std::string name, std::initializer_list<double> values)
    : arg_(make_arg(std::move(name), std::vector<double>(values))) {}
Arg::Arg(std::string name, std::initializer_list<const char*> values)
    : arg_(make_arg(std::move(name), std::vector<std::string>(values.begin(), values.end()))) {}
Arg::Arg(std::string name, DType dtype) : arg_(make_arg(std::move(name), static_cast<int64_t>(dtype))) {}

Outputs::Outputs(int count) : spec_(count) {
  if (count < 0) throw InvalidInput(fmt::format("Outputs: the number of outputs must be >= 0, got {}", count));
}

std::optional<int> Outputs::count() const {
  if (const int* c = std::get_if<int>(&spec_)) return *c;
  return std::nullopt;
}

namespace detail {

struct NetState {
  NetDef def;
  // Caffe2's _op_outputs and _external_input_map: what BlobIsDefined looks at.
  std::unordered_set<std::string> op_outputs;
  std::unordered_set<std::string> external_inputs;
  int64_t next_name_index = 0;
  // Caffe2's _registered_blob_names: names handed out by next_blob().
  std::unordered_set<std::string> registered_blob_names;
  std::map<std::string, std::vector<std::shared_ptr<NetAttribute>>, std::less<>> attributes;
  bool frozen = false;
};

UniqueNames& net_names() {
  // Net._net_names_used: never reset, so two nets of a process never share a name unless the
  // user asks for it (from_proto without unique_name).
  static UniqueNames names;
  return names;
}

}  // namespace detail

namespace {

std::string joined_net_name(const std::string& name) {
  std::string prefix = current_net_builder_name();
  std::string joined = prefix.empty() ? name : (name.empty() ? prefix : prefix + "/" + name);
  // Caffe2 would name such a net "" (and its blobs "/Add"); moka gives it a real name.
  return joined.empty() ? std::string("net") : joined;
}

// Caffe2's NextName with a prefix, checking definedness through `defined` so that inputs about
// to become external inputs count too.
template <class Defined>
std::string next_prefixed_name(const std::string& net, const std::string& prefix, std::optional<int> output_id,
                               const Defined& defined) {
  const std::string base = net + "/" + prefix;
  auto with_id = [&](std::string s) { return output_id ? fmt::format("{}:{}", s, *output_id) : s; };
  std::string name = with_id(base);
  for (int index = 2; defined(name); ++index) name = with_id(fmt::format("{}_{}", base, index));
  return name;
}

}  // namespace

Net::Net(std::string name) : state_(std::make_shared<detail::NetState>()) {
  state_->def.name = detail::net_names().unique(joined_net_name(name));
}

Net Net::from_proto(NetDef def, bool unique_name) {
  auto state = std::make_shared<detail::NetState>();
  // Continue `<name>_blob_<k>` numbering after the highest k already used (Caffe2 looked at a
  // single digit only; every digit counts here).
  const std::string auto_prefix = def.name + "_blob_";
  int64_t next_index = 0;
  auto scan = [&](const std::string& blob) {
    if (!blob.starts_with(auto_prefix)) return;
    const char* first = blob.data() + auto_prefix.size();
    const char* last = blob.data() + blob.size();
    int64_t k = 0;
    auto [ptr, ec] = std::from_chars(first, last, k);
    if (ec == std::errc() && ptr == last && k >= 0 && k < std::numeric_limits<int64_t>::max())
      next_index = std::max(next_index, k + 1);
  };
  for (const auto& op : def.op) {
    for (const auto& in : op.input) scan(in);
    for (const auto& out : op.output) {
      scan(out);
      state->op_outputs.insert(out);
    }
  }
  state->external_inputs.insert(def.external_input.begin(), def.external_input.end());
  state->next_name_index = next_index;
  if (unique_name) {
    def.name = detail::net_names().unique(joined_net_name(def.name));
  } else {
    detail::net_names().reserve(def.name);
  }
  state->def = std::move(def);
  return Net(FromState{}, std::move(state));
}

const std::string& Net::name() const noexcept { return state_->def.name; }
const NetDef& Net::proto() const noexcept { return state_->def; }
void Net::freeze() noexcept { state_->frozen = true; }
bool Net::is_frozen() const noexcept { return state_->frozen; }

void Net::check_mutable() const {
  if (state_->frozen)
    throw InvalidInput(
        fmt::format("Cannot change net \"{}\": it is frozen (it has been added to a plan or built).", name()));
}

bool Net::is_defined(const BlobRef& blob) const {
  return state_->op_outputs.contains(blob.name()) || state_->external_inputs.contains(blob.name());
}

BlobRef Net::next_name(const std::string& prefix, std::optional<int> output_id) {
  if (prefix.empty()) return BlobRef(fmt::format("{}_blob_{}", name(), state_->next_name_index++));
  return BlobRef(next_prefixed_name(name(), prefix, output_id, [&](const std::string& n) { return is_defined(n); }));
}

BlobRef Net::next_blob(const std::string& prefix) {
  std::string name = prefix;
  for (int index = 0; state_->registered_blob_names.contains(name) || is_defined(name); ++index)
    name = fmt::format("{}_auto_{}", prefix, index);
  state_->registered_blob_names.insert(name);
  return BlobRef(name);
}

BlobRef Net::next_scoped_blob(const std::string& prefix) { return next_blob(scoped_name(prefix)); }

BlobRefs Net::op(const std::string& type, std::vector<BlobRef> inputs, Outputs outputs, std::vector<Arg> args) {
  check_mutable();
  detail::NetState& s = *state_;

  // Work on copies first: a rejected operator must leave the net exactly as it was.
  OperatorDef def;
  def.type = type;
  std::vector<std::string> new_external;
  auto defined = [&](const std::string& n) {
    return s.op_outputs.contains(n) || s.external_inputs.contains(n) ||
           std::find(new_external.begin(), new_external.end(), n) != new_external.end();
  };
  auto fail = [&](const std::string& msg) -> InvalidInput {
    InvalidInput e(msg);
    e.add_context(OperatorBase::describe(def, static_cast<int>(s.def.op.size())));
    e.add_context(describe_net(name()));
    return e;
  };
  if (type.empty()) throw fail("the operator type is empty");

  def.input.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& in = inputs[i].name();
    if (in.empty()) throw fail(fmt::format("input #{} is an empty BlobRef (never assigned?)", i));
    // Caffe2: an input this net does not define is something the caller must provide.
    if (!defined(in)) new_external.push_back(in);
    def.input.push_back(in);
  }

  if (outputs.is_auto()) {
    def.output.push_back(next_prefixed_name(name(), type, std::nullopt, defined));
  } else if (auto k = outputs.count()) {
    for (int i = 0; i < *k; ++i) def.output.push_back(next_prefixed_name(name(), type, i, defined));
  } else {
    const auto& names = *outputs.names();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) throw fail(fmt::format("output #{} is an empty BlobRef (never assigned?)", i));
      def.output.push_back(names[i].name());
    }
  }

  def.arg.reserve(args.size());
  for (auto& a : args) def.arg.push_back(std::move(a).get());

  try {
    // Save/Load (storage) and If, While, Do, CreateScope (exec) live above the registry: registered
    // here too, so that `op("If", ...)` works before any net has run.
    register_all_operators();
    OperatorRegistry::global().validate(def);
  } catch (Error& e) {
    e.add_context(OperatorBase::describe(def, static_cast<int>(s.def.op.size())));
    e.add_context(describe_net(name()));
    throw;
  }

  s.def.external_input.insert(s.def.external_input.end(), new_external.begin(), new_external.end());
  s.external_inputs.insert(new_external.begin(), new_external.end());
  BlobRefs result;
  result.reserve(def.output.size());
  for (const auto& out : def.output) {
    s.op_outputs.insert(out);
    result.emplace_back(out);
  }
  s.def.op.push_back(std::move(def));
  return result;
}

// ---- Const ----

namespace {

const char* const kConstWhere = "Const";

// Exact conversions of one element to the target dtype; nullopt when the value does not fit.
std::optional<int64_t> int_to_int(int64_t v, DType t) {
  auto in = [&](auto lo, auto hi) -> std::optional<int64_t> {
    if (v < static_cast<int64_t>(lo) || v > static_cast<int64_t>(hi)) return std::nullopt;
    return v;
  };
  switch (t) {
    case DType::Bool:
      return in(0, 1);
    case DType::Int8:
      return in(std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max());
    case DType::UInt8:
      return in(0, std::numeric_limits<uint8_t>::max());
    case DType::Int16:
      return in(std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max());
    case DType::Int32:
      return in(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    case DType::Int64:
      return v;
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> double_to_int(double v, DType t) {
  // 2^63 is exactly representable; anything at or above it does not fit int64.
  if (!std::isfinite(v) || v != std::trunc(v) || v < -9223372036854775808.0 || v >= 9223372036854775808.0)
    return std::nullopt;
  return int_to_int(static_cast<int64_t>(v), t);
}

std::optional<double> int_to_double(int64_t v, DType t) {
  if (v >= (int64_t{1} << 53) || v <= -(int64_t{1} << 53)) {
    // Beyond 2^53 only some integers are representable; check the round trip.
    double d = static_cast<double>(v);
    if (d >= 9223372036854775808.0 || static_cast<int64_t>(d) != v) return std::nullopt;
  }
  double d = static_cast<double>(v);
  if (t == DType::Float && static_cast<double>(static_cast<float>(d)) != d) return std::nullopt;
  return d;
}

std::optional<double> double_to_double(double v, DType t) {
  if (t == DType::Float && !std::isnan(v)) {
    if (std::isfinite(v) && std::abs(v) > static_cast<double>(std::numeric_limits<float>::max())) return std::nullopt;
    if (static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
  }
  return v;
}

// The fill operator for a target dtype, and whether it needs a `dtype` argument.
struct FillChoice {
  const char* type;
  bool floats;  // values go to `floats`, else `ints` (strings handled apart)
  bool dtype_arg;
};

FillChoice fill_for(DType t) {
  switch (t) {
    case DType::Int64:
      return {"GivenTensorInt64Fill", false, false};
    case DType::Int32:
      return {"GivenTensorIntFill", false, false};
    case DType::Bool:
      return {"GivenTensorBoolFill", false, false};
    case DType::Double:
      return {"GivenTensorDoubleFill", true, false};
    case DType::Float:
      return {"GivenTensorFill", true, false};
    case DType::String:
      return {"GivenTensorStringFill", false, false};
    // No dedicated fill: GivenTensorFill converts its float values to `dtype` exactly.
    default:
      return {"GivenTensorFill", true, true};
  }
}

std::string element_text(const ConstValue::Storage& v, std::size_t k) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::vector<bool>>)
          return x[k] ? "true" : "false";
        else if constexpr (std::is_same_v<X, std::vector<std::string>>)
          return fmt::format("\"{}\"", x[k]);
        else if constexpr (std::is_same_v<X, std::vector<int64_t>> || std::is_same_v<X, std::vector<double>>)
          return fmt::format("{}", x[k]);
        else if constexpr (std::is_same_v<X, bool>)
          return x ? "true" : "false";
        else if constexpr (std::is_same_v<X, std::string>)
          return fmt::format("\"{}\"", x);
        else
          return fmt::format("{}", x);
      },
      v);
}

}  // namespace

BlobRef Net::Const(const ConstValue& value, const ConstOptions& options) {
  check_mutable();
  const ConstValue::Storage& v = value.storage();
  const Outputs out = options.blob_out.empty() ? Outputs(1) : Outputs{options.blob_out};
  auto fail = [&](const std::string& msg) {
    InvalidInput e(msg);
    e.add_context(kConstWhere);
    e.add_context(describe_net(name()));
    return e;
  };

  // Caffe2 checks for a Python bool first: a bool scalar is a ConstantFill, not a GivenTensor*Fill.
  if (const bool* b = std::get_if<bool>(&v)) {
    DType t = options.dtype.value_or(DType::Bool);
    if (t == DType::String || t == DType::Undefined)
      throw fail(fmt::format("cannot make a {} constant from a bool", dtype_caffe2_name(t)));
    return op("ConstantFill", {}, out, {{"dtype", t}, {"value", int64_t{*b}}}).single();
  }

  // Flatten to one representation: ints (int64, bool) or doubles or strings.
  bool scalar = true;
  DType natural = DType::Int64;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<std::string> strings;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, int64_t>) {
          ints = {x};
        } else if constexpr (std::is_same_v<X, double>) {
          natural = DType::Double;
          doubles = {x};
        } else if constexpr (std::is_same_v<X, std::string>) {
          natural = DType::String;
          strings = {x};
        } else if constexpr (std::is_same_v<X, std::vector<int64_t>>) {
          scalar = false;
          ints = x;
        } else if constexpr (std::is_same_v<X, std::vector<double>>) {
          scalar = false;
          natural = DType::Double;
          doubles = x;
        } else if constexpr (std::is_same_v<X, std::vector<bool>>) {
          scalar = false;
          natural = DType::Bool;
          ints.assign(x.begin(), x.end());
        } else if constexpr (std::is_same_v<X, std::vector<std::string>>) {
          scalar = false;
          natural = DType::String;
          strings = x;
        }
      },
      v);
  const DType target = options.dtype.value_or(natural);
  if (target == DType::Undefined) throw fail("dtype UNDEFINED is not a tensor element type");
  if ((natural == DType::String) != (target == DType::String))
    throw fail(
        fmt::format("cannot make a {} constant from {} values", dtype_caffe2_name(target), dtype_caffe2_name(natural)));

  const FillChoice fill = fill_for(target);
  std::vector<Arg> args;
  std::size_t count = 0;
  auto not_exact = [&](std::size_t k) {
    return fail(fmt::format("value {}{} cannot be represented exactly as {}", scalar ? "" : fmt::format("[{}] ", k),
                            element_text(v, k), dtype_caffe2_name(target)));
  };
  if (target == DType::String) {
    count = strings.size();
    args.emplace_back("values", std::move(strings));
  } else if (fill.floats) {
    std::vector<double> out_values;
    count = natural == DType::Double ? doubles.size() : ints.size();
    for (std::size_t k = 0; k < count; ++k) {
      std::optional<double> d =
          natural == DType::Double ? double_to_double(doubles[k], target) : int_to_double(ints[k], target);
      // Narrow integer targets go through GivenTensorFill's floats; they must still fit.
      if (d && fill.dtype_arg && !double_to_int(*d, target)) d.reset();
      if (!d) throw not_exact(k);
      out_values.push_back(*d);
    }
    args.emplace_back("values", std::move(out_values));
  } else {
    std::vector<int64_t> out_values;
    count = natural == DType::Double ? doubles.size() : ints.size();
    for (std::size_t k = 0; k < count; ++k) {
      std::optional<int64_t> i =
          natural == DType::Double ? double_to_int(doubles[k], target) : int_to_int(ints[k], target);
      if (!i) throw not_exact(k);
      out_values.push_back(*i);
    }
    args.emplace_back("values", std::move(out_values));
  }
  // Caffe2 passes shape = array.shape: [] for a scalar (0-d), [n] for a list.
  args.emplace_back("shape", scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(count)});
  if (fill.dtype_arg) args.emplace_back("dtype", target);
  return op(fill.type, {}, out, std::move(args)).single();
}

// ---- external inputs/outputs, attributes ----

BlobRef Net::add_external_input(const BlobRef& blob) {
  check_mutable();
  if (blob.empty()) throw InvalidInput(fmt::format("Net {}: an external input cannot be an empty BlobRef", name()));
  if (state_->external_inputs.contains(blob.name()))
    throw InvalidInput(fmt::format("Net {} already contains an input named {}", name(), blob.name()));
  state_->def.external_input.push_back(blob.name());
  state_->external_inputs.insert(blob.name());
  return blob;
}

void Net::add_external_output(const BlobRef& blob) {
  check_mutable();
  if (!is_defined(blob))
    throw InvalidInput(fmt::format("Net {}: cannot add external output: {} is not defined", name(), blob.name()));
  state_->def.external_output.push_back(blob.name());
}

void Net::add_attribute(const std::string& key, std::shared_ptr<NetAttribute> attr) {
  check_mutable();
  state_->attributes[key].push_back(std::move(attr));
}

const std::vector<std::shared_ptr<NetAttribute>>& Net::get_attributes(const std::string& key) const {
  static const std::vector<std::shared_ptr<NetAttribute>> kNone;
  auto it = state_->attributes.find(key);
  return it == state_->attributes.end() ? kNone : it->second;
}

}  // namespace moka
