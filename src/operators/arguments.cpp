// Arguments: typed getters with exact int/float conversion and clear errors.
#include "moka/operators/arguments.h"

#include <fmt/format.h>

#include <cmath>

#include "moka/core/error.h"
#include "moka/operators/schema.h"

namespace moka {

int64_t Arguments::get_int(const std::string& name, int64_t def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Int);
  return a->i ? *a->i : static_cast<int64_t>(*a->f);
}

bool Arguments::get_bool(const std::string& name, bool def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Bool);
  return *a->i != 0;
}

double Arguments::get_float(const std::string& name, double def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Float);
  if (a->f) return *a->f;
  const double d = static_cast<double>(*a->i);
  if (static_cast<int64_t>(d) != *a->i)
    throw InvalidInput(fmt::format("argument \"{}\": integer {} is not exactly representable as a float", name, *a->i));
  return d;
}

std::string Arguments::get_string(const std::string& name, const std::string& def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::String);
  return *a->s;
}

std::vector<int64_t> Arguments::get_ints(const std::string& name, std::vector<int64_t> def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Ints);
  return *a->ints;
}

std::vector<double> Arguments::get_floats(const std::string& name, std::vector<double> def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Floats);
  if (a->floats) return *a->floats;
  std::vector<double> out;
  out.reserve(a->ints->size());
  for (int64_t v : *a->ints) {
    const double d = static_cast<double>(v);
    if (static_cast<int64_t>(d) != v)
      throw InvalidInput(fmt::format("argument \"{}\": integer {} is not exactly representable as a float", name, v));
    out.push_back(d);
  }
  return out;
}

std::vector<std::string> Arguments::get_strings(const std::string& name, std::vector<std::string> def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::Strings);
  return *a->strings;
}

DType Arguments::get_dtype(const std::string& name, DType def) const {
  const Argument* a = find(name);
  if (!a) return def;
  check_arg_type(*a, ArgType::DType);
  return a->i ? *dtype_from_code(*a->i) : *dtype_from_name(*a->s);
}

}  // namespace moka
