// OpSchema: what an operator type accepts — input/output counts, arguments with types and defaults,
// in-place rules and documentation. The registry validates every OperatorDef against it.
#pragma once

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "moka/defs/operator_def.h"

namespace moka {

/// How an argument's value must be given.
enum class ArgType {
  Int,      ///< `i`
  Bool,     ///< `i` equal to 0 or 1
  Float,    ///< `f`, or `i` (converted exactly)
  Number,   ///< `i`, `f` or `s` (a fill's `value`: which one is right depends on dtype)
  String,   ///< `s`
  Ints,     ///< `ints`
  Floats,   ///< `floats`, or `ints` (converted exactly)
  Strings,  ///< `strings`
  DType,    ///< `i` (a TensorProto.DataType code) or `s` (a name such as "INT64")
  Net,      ///< `n`
  Nets,     ///< `nets`
};
const char* arg_type_name(ArgType t);

/// One argument an operator type accepts.
struct ArgSpec {
  std::string name;
  ArgType type;
  std::string doc;
  std::string default_text;  ///< shown by `moka ops`; empty = no default
  bool required = false;
};

/// @brief The contract of an operator type.
///
/// @code
///   OpSchema("Add").inputs(2).outputs(1).allow_inplace({{0, 0}, {1, 0}})
///       .arg("broadcast", ArgType::Int, "legacy; ignored", "0")
///       .doc("Elementwise sum ...");
/// @endcode
class OpSchema {
 public:
  static constexpr int kUnbounded = INT_MAX;

  explicit OpSchema(std::string type) : type_(std::move(type)) {}

  OpSchema& inputs(int n) { return inputs(n, n); }
  OpSchema& inputs(int min, int max) {
    min_in_ = min;
    max_in_ = max;
    return *this;
  }
  OpSchema& outputs(int n) { return outputs(n, n); }
  OpSchema& outputs(int min, int max) {
    min_out_ = min;
    max_out_ = max;
    return *this;
  }
  /// Declares an argument (optional unless `required`).
  OpSchema& arg(std::string name, ArgType type, std::string doc, std::string default_text = {}, bool required = false);
  OpSchema& required_arg(std::string name, ArgType type, std::string doc) {
    return arg(std::move(name), type, std::move(doc), {}, true);
  }
  /// (input, output) index pairs that may name the same blob. By default none may.
  OpSchema& allow_inplace(std::vector<std::pair<int, int>> pairs);
  /// Any input may share a name with any output.
  OpSchema& allow_any_inplace() {
    any_inplace_ = true;
    return *this;
  }
  /// (input, output) pairs that must name the same blob.
  OpSchema& enforce_inplace(std::vector<std::pair<int, int>> pairs);
  /// Accept arguments that are not declared (for user operators that read their own).
  OpSchema& allow_unknown_args() {
    unknown_args_ok_ = true;
    return *this;
  }
  OpSchema& doc(std::string text) {
    doc_ = std::move(text);
    return *this;
  }
  /// Declares that run() waits for other threads only through moka's cooperative waits (BlobsQueue
  /// reads and writes, yield_until_ready) or not at all, so the operator may share a thread with its
  /// concurrent siblings as a fiber (Concurrency::fibers). Built-in operators other than Callable are.
  OpSchema& fiber_safe(bool yes = true) {
    fiber_safe_ = yes;
    return *this;
  }

  const std::string& type() const { return type_; }
  int min_inputs() const { return min_in_; }
  int max_inputs() const { return max_in_; }
  int min_outputs() const { return min_out_; }
  int max_outputs() const { return max_out_; }
  const std::vector<ArgSpec>& args() const { return args_; }
  const std::string& doc() const { return doc_; }
  bool is_fiber_safe() const { return fiber_safe_; }
  const ArgSpec* find_arg(const std::string& name) const;

  /// Checks arity, in-place rules, unknown/duplicate/missing arguments and argument value types.
  /// Throws InvalidInput naming the argument or index; the caller adds where the operator is.
  void validate(const OperatorDef& def) const;

  /// Multi-line human description for `moka ops`.
  std::string describe() const;

 private:
  std::string type_;
  int min_in_ = 0, max_in_ = 0, min_out_ = 0, max_out_ = 0;
  std::vector<ArgSpec> args_;
  std::vector<std::pair<int, int>> inplace_;
  std::vector<std::pair<int, int>> enforced_inplace_;
  bool any_inplace_ = false;
  bool unknown_args_ok_ = false;
  bool fiber_safe_ = false;
  std::string doc_;
};

/// Checks that `a`'s value has the form `type` requires; throws InvalidInput naming the argument.
void check_arg_type(const Argument& a, ArgType type);

}  // namespace moka
