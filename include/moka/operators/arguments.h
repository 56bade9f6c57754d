// Arguments: typed, checked reads of an operator's arguments (Caffe2's ArgumentHelper).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moka/core/dtype.h"
#include "moka/defs/argument.h"

namespace moka {

/// @brief Read-only view of an argument list with typed getters.
///
/// Getters return the default when the argument is absent and throw InvalidInput naming the
/// argument when it is present with the wrong form (e.g. `f` = 1.5 where an integer is needed).
/// Integers given as `f` are accepted where the conversion is exact, and vice versa.
class Arguments {
 public:
  explicit Arguments(const std::vector<Argument>& args) : args_(&args) {}

  bool has(const std::string& name) const { return find_arg(*args_, name) != nullptr; }
  const Argument* find(const std::string& name) const { return find_arg(*args_, name); }

  int64_t get_int(const std::string& name, int64_t def) const;
  bool get_bool(const std::string& name, bool def) const;
  double get_float(const std::string& name, double def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> get_floats(const std::string& name, std::vector<double> def = {}) const;
  std::vector<std::string> get_strings(const std::string& name, std::vector<std::string> def = {}) const;
  /// A dtype given as a code (`i`) or a name (`s`); throws InvalidInput for unsupported ones.
  DType get_dtype(const std::string& name, DType def) const;

 private:
  const std::vector<Argument>* args_;
};

}  // namespace moka
