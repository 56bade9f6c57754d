// moka::Net: the net builder (Caffe2's Python core.Net) — adds operators with Caffe2's automatic
// blob naming and produces a NetDef. (The instantiated net of the exec layer is moka::SimpleNet.)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/core/dtype.h"
#include "moka/defs/argument.h"
#include "moka/defs/operator_def.h"

namespace moka {

/// @brief Base of the objects a net carries as attributes (Caffe2's `net.add_attribute`).
///
/// Attributes have no meaning to Net itself; later builders attach setup steps to nets under
/// keys such as "task_setup" and collect them with ExecutionStep::get_all_attributes().
/// Thread-safety: whatever the derived class provides.
class NetAttribute {
 public:
  virtual ~NetAttribute();
};

/// @brief One named operator argument, built with make_arg's rules from a plain value.
///
/// @code
///   net.op("ConstantFill", {}, {"x"}, {{"value", 1.5}, {"shape", {2, 3}}, {"dtype", DType::Double}});
/// @endcode
/// Thread-safety: a value type.
class Arg {
 public:
  template <class V>
  requires requires(std::string n, V&& v) { make_arg(std::move(n), std::forward<V>(v)); }
  Arg(std::string name, V&& value)  // NOLINT(google-explicit-constructor)
      : arg_(make_arg(std::move(name), std::forward<V>(value))) {}
  Arg(std::string name, std::initializer_list<int> values);
  Arg(std::string name, std::initializer_list<int64_t> values);
  Arg(std::string name, std::initializer_list<double> values);
  Arg(std::string name, std::initializer_list<const char*> values);
  /// A dtype argument: stored as its TensorProto.DataType code in `i`.
  Arg(std::string name, DType dtype);
  Arg(Argument arg) : arg_(std::move(arg)) {}  // NOLINT(google-explicit-constructor)

  const Argument& get() const& noexcept { return arg_; }
  Argument&& get() && noexcept { return std::move(arg_); }

 private:
  Argument arg_;
};

/// @brief Which outputs an added operator gets (Caffe2's `outputs=` of `net.Op(...)`).
///
/// - `{}` (the default): one output named `<net>/<Type>` (deduplicated, see Net::next_name);
/// - a count `k`: k outputs `<net>/<Type>:0` … `<net>/<Type>:<k-1>`; `0` means no outputs;
/// - a list of names: exactly those (`{"a", b}`); an empty std::vector also means no outputs.
/// Thread-safety: a value type.
class Outputs {
 public:
  Outputs() = default;
  Outputs(int count);  // NOLINT(google-explicit-constructor)
  Outputs(std::initializer_list<BlobRef> names) : spec_(std::vector<BlobRef>(names)) {}
  Outputs(std::vector<BlobRef> names) : spec_(std::move(names)) {}  // NOLINT(google-explicit-constructor)

  bool is_auto() const noexcept { return std::holds_alternative<std::monostate>(spec_); }
  /// The count, when given as one.
  std::optional<int> count() const;
  /// The names, when given as a list (else nullptr).
  const std::vector<BlobRef>* names() const { return std::get_if<std::vector<BlobRef>>(&spec_); }

 private:
  std::variant<std::monostate, int, std::vector<BlobRef>> spec_;
};

/// @brief A value for Net::Const: a scalar or a 1-d list of int64, float64, bool or string.
///
/// C++ `int`/`int64_t` become int64 (Python ints on Linux), `double` float64, `bool` bool,
/// strings string; vectors and braced lists (`{1, 2}`) become 1-d tensors of their element type.
/// Thread-safety: a value type.
class ConstValue {
 public:
  using Storage = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                               std::vector<bool>, std::vector<std::string>>;
  ConstValue(int v) : v_(int64_t{v}) {}                         // NOLINT(google-explicit-constructor)
  ConstValue(int64_t v) : v_(v) {}                              // NOLINT(google-explicit-constructor)
  ConstValue(double v) : v_(v) {}                               // NOLINT(google-explicit-constructor)
  ConstValue(bool v) : v_(v) {}                                 // NOLINT(google-explicit-constructor)
  ConstValue(const char* v) : v_(std::string(v)) {}             // NOLINT(google-explicit-constructor)
  ConstValue(std::string v) : v_(std::move(v)) {}               // NOLINT(google-explicit-constructor)
  ConstValue(std::vector<int64_t> v) : v_(std::move(v)) {}      // NOLINT(google-explicit-constructor)
  ConstValue(std::vector<double> v) : v_(std::move(v)) {}       // NOLINT(google-explicit-constructor)
  ConstValue(std::vector<bool> v) : v_(std::move(v)) {}         // NOLINT(google-explicit-constructor)
  ConstValue(std::vector<std::string> v) : v_(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  ConstValue(std::initializer_list<int> v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  ConstValue(std::initializer_list<int64_t> v) : v_(std::vector<int64_t>(v)) {}
  ConstValue(std::initializer_list<double> v) : v_(std::vector<double>(v)) {}
  ConstValue(std::initializer_list<bool> v) : v_(std::vector<bool>(v)) {}
  ConstValue(std::initializer_list<const char*> v) : v_(std::vector<std::string>(v.begin(), v.end())) {}

  const Storage& storage() const noexcept { return v_; }

 private:
  Storage v_;
};

/// Optional arguments of Net::Const (Caffe2's `blob_out=`, `dtype=`).
///
/// Every member has a default initializer so that designated initializers may name any subset
/// without -Wmissing-field-initializers warnings.
struct ConstOptions {
  BlobRef blob_out{};            ///< empty: `<net>/<FillType>:0`
  std::optional<DType> dtype{};  ///< element type to convert the value to (exactly; InvalidInput otherwise)
};

namespace detail {
struct NetState;
}

/// @brief Builds one net (Caffe2's `core.Net`): operators over named blobs, with automatic names.
///
/// Net is a **handle**: copies refer to the same net, like Python references, and `==` compares
/// identity. Names follow Caffe2 (docs/building-plans.md §3): the net's name is prefixed with the active NetBuilder's
/// name and made unique in the process (`name`, `name_1`, …); unnamed outputs are
/// `<net>/<Type>` (deduplicated `_2`, `_3`, …) or `<net>/<Type>:<i>`. Every added operator is
/// checked against its registered schema, so a misspelt argument fails here, naming the net
/// and operator. A frozen net (one added to a Plan, or frozen explicitly) refuses changes.
///
/// @code
///   moka::Net net("train");                        // "train", or "train_1" if taken
///   moka::BlobRef one = net.Const(1);              // "train/GivenTensorInt64Fill:0", 0-d int64
///   moka::BlobRef two = net.op("Add", {one, one}); // "train/Add"
///   net.op("Add", {two, one}, {"total"});          // explicit output name
///   moka::NetDef def = net.proto();
/// @endcode
/// Thread-safety: a net is built by one thread at a time (distinct nets may be built
/// concurrently); the process-wide name registry is thread-safe.
class Net {
 public:
  /// A new, empty net named `<NetBuilder name>/<name>` (either part may be empty; both empty
  /// gives "net"), made unique in the process.
  explicit Net(std::string name = {});

  /// A net holding a copy of def (Caffe2's `Net(proto)`): its defined blobs are def's operator
  /// outputs and external inputs. With unique_name (Caffe2's behaviour) the name is made unique
  /// like a new net's; without it the name is kept as is, so two Net objects may share a name
  /// (steps and plans then refuse to mix them).
  static Net from_proto(NetDef def, bool unique_name = true);

  const std::string& name() const noexcept;

  /// @brief Adds an operator; returns its output blobs.
  ///
  /// Inputs not defined in this net are appended to external_input (once each). Throws
  /// InvalidInput (net and operator named) when the registry does not know `type` or the
  /// operator does not satisfy its schema; the net is unchanged then.
  BlobRefs op(const std::string& type, std::vector<BlobRef> inputs = {}, Outputs outputs = {},
              std::vector<Arg> args = {});

  /// @brief A constant (Caffe2's `net.Const`): one fill operator, returns its output.
  ///
  /// int → `GivenTensorInt64Fill`, double → `GivenTensorDoubleFill`, string →
  /// `GivenTensorStringFill` (0-d; a vector gives 1-d), bool → `ConstantFill(dtype=BOOL)` (0-d),
  /// vector<bool> → `GivenTensorBoolFill`. With options.dtype the values are converted
  /// exactly to that type and the matching fill is used (InvalidInput if a value does not fit).
  BlobRef Const(const ConstValue& value, const ConstOptions& options = {});

  /// @brief Caffe2's `NextName`: a fresh blob name for this net.
  ///
  /// With a prefix: `<net>/<prefix>` (+ `:<output_id>`); if that is already defined here,
  /// `<net>/<prefix>_2` (+ `:<output_id>`), `_3`, …. Without: `<net>_blob_<k>`, k = 0, 1, ….
  BlobRef next_name(const std::string& prefix = {}, std::optional<int> output_id = {});

  /// @brief Caffe2's `NextBlob`: `prefix` itself if this net neither defines nor handed it out
  /// before, else `<prefix>_auto_<i>` for the first free i = 0, 1, …. The name is remembered, so
  /// two calls never return the same name.
  BlobRef next_blob(const std::string& prefix = "unnamed");
  /// @brief Caffe2's `NextScopedBlob`: next_blob(current_name_scope() + prefix) (see NameScope).
  /// Unlike next_name(), the net's name is not part of the result.
  BlobRef next_scoped_blob(const std::string& prefix = "unnamed");

  /// True when some operator of this net outputs blob, or blob is an external input.
  bool is_defined(const BlobRef& blob) const;

  /// Declares an external input; InvalidInput "Net N already contains an input named X".
  BlobRef add_external_input(const BlobRef& blob);
  /// Declares an external output; it must be defined here (InvalidInput "... X is not defined").
  void add_external_output(const BlobRef& blob);

  /// Appends attr to the list under key.
  void add_attribute(const std::string& key, std::shared_ptr<NetAttribute> attr);
  /// The attributes under key, in the order added (empty if none).
  const std::vector<std::shared_ptr<NetAttribute>>& get_attributes(const std::string& key) const;

  /// The definition built so far. The reference stays valid while the net exists; it changes
  /// when the net does.
  const NetDef& proto() const noexcept;

  /// Makes the net read-only: every later change throws InvalidInput naming the net.
  /// Plan::add_step freezes the nets it collects, since the plan uses their definitions as
  /// they are then.
  void freeze() noexcept;
  bool is_frozen() const noexcept;

  friend bool operator==(const Net& a, const Net& b) noexcept { return a.state_ == b.state_; }
  /// An identity that expires when the last handle to this net is gone (a session keys its
  /// compiled runnables by it, and drops them once nobody can run them again).
  std::weak_ptr<const void> identity() const noexcept { return state_; }

 private:
  struct FromState {};
  Net(FromState, std::shared_ptr<detail::NetState> state) : state_(std::move(state)) {}
  void check_mutable() const;

  std::shared_ptr<detail::NetState> state_;
};

}  // namespace moka
