// Argument: a named operator/net argument with caffe2.proto's fields (f, i, s, floats, ints, strings, n, nets).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace moka {

struct NetDef;

/// @brief One named argument. Exactly one value field is set in a valid argument.
///
/// Field meanings follow caffe2.proto's Argument; `f`/`floats` are float64 in moka (Caffe2 used
/// float32), so fills of float64 tensors keep every digit.
struct Argument {
  std::string name;
  std::optional<double> f;
  std::optional<int64_t> i;
  std::optional<std::string> s;
  std::shared_ptr<const NetDef> n;  ///< a nested net (control operators); shared, immutable
  std::optional<std::vector<double>> floats;
  std::optional<std::vector<int64_t>> ints;
  std::optional<std::vector<std::string>> strings;
  std::optional<std::vector<NetDef>> nets;

  /// Number of value fields that are set (0 for a bare name).
  int num_fields_set() const;
  /// The JSON key of the set field ("f", "ints", ...), or "none".
  const char* field_name() const;

  bool operator==(const Argument& other) const;
};

/// Argument constructors, mirroring Caffe2's MakeArgument: integers and bools go to `i`,
/// floating values to `f`, strings to `s`, vectors to the plural fields.
Argument make_arg(std::string name, int64_t v);
Argument make_arg(std::string name, int v);
Argument make_arg(std::string name, bool v);
Argument make_arg(std::string name, double v);
Argument make_arg(std::string name, std::string v);
Argument make_arg(std::string name, const char* v);
Argument make_arg(std::string name, std::vector<int64_t> v);
Argument make_arg(std::string name, std::vector<double> v);
Argument make_arg(std::string name, std::vector<std::string> v);
Argument make_arg(std::string name, NetDef v);
Argument make_arg(std::string name, std::vector<NetDef> v);

/// The argument called `name`, or nullptr.
const Argument* find_arg(const std::vector<Argument>& args, const std::string& name);

}  // namespace moka
