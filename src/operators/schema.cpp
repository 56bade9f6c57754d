// OpSchema: building, validating an OperatorDef against it, and describing it for `moka ops`.
#include "moka/operators/schema.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "moka/core/dtype.h"
#include "moka/core/error.h"

namespace moka {

const char* arg_type_name(ArgType t) {
  switch (t) {
    case ArgType::Int:
      return "int";
    case ArgType::Bool:
      return "bool";
    case ArgType::Float:
      return "float";
    case ArgType::Number:
      return "number";
    case ArgType::String:
      return "string";
    case ArgType::Ints:
      return "ints";
    case ArgType::Floats:
      return "floats";
    case ArgType::Strings:
      return "strings";
    case ArgType::DType:
      return "dtype";
    case ArgType::Net:
      return "net";
    case ArgType::Nets:
      return "nets";
  }
  return "?";
}

OpSchema& OpSchema::arg(std::string name, ArgType type, std::string doc, std::string default_text, bool required) {
  args_.push_back(ArgSpec{std::move(name), type, std::move(doc), std::move(default_text), required});
  return *this;
}

OpSchema& OpSchema::allow_inplace(std::vector<std::pair<int, int>> pairs) {
  inplace_.insert(inplace_.end(), pairs.begin(), pairs.end());
  return *this;
}

OpSchema& OpSchema::enforce_inplace(std::vector<std::pair<int, int>> pairs) {
  enforced_inplace_.insert(enforced_inplace_.end(), pairs.begin(), pairs.end());
  inplace_.insert(inplace_.end(), pairs.begin(), pairs.end());
  return *this;
}

const ArgSpec* OpSchema::find_arg(const std::string& name) const {
  for (const auto& a : args_)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {
std::string count_text(int min, int max) {
  if (max == OpSchema::kUnbounded) return fmt::format("at least {}", min);
  if (min == max) return fmt::format("{}", min);
  return fmt::format("{} to {}", min, max);
}

[[noreturn]] void bad_arg(const Argument& a, ArgType type, const std::string& why) {
  throw InvalidInput(fmt::format(
      "argument \"{}\" must be {} ({}), {}", a.name, arg_type_name(type),
      [&] {
        switch (type) {
          case ArgType::Int:
            return "\"i\"";
          case ArgType::Bool:
            return "\"i\" = 0 or 1";
          case ArgType::Float:
            return "\"f\"";
          case ArgType::Number:
            return "\"i\", \"f\" or \"s\"";
          case ArgType::String:
            return "\"s\"";
          case ArgType::Ints:
            return "\"ints\"";
          case ArgType::Floats:
            return "\"floats\"";
          case ArgType::Strings:
            return "\"strings\"";
          case ArgType::DType:
            return "\"i\" code or \"s\" name";
          case ArgType::Net:
            return "\"n\"";
          case ArgType::Nets:
            return "\"nets\"";
        }
        return "?";
      }(),
      why));
}
}  // namespace

void check_arg_type(const Argument& a, ArgType type) {
  const int n = a.num_fields_set();
  if (n == 0) bad_arg(a, type, "but it has no value");
  if (n > 1) bad_arg(a, type, "but it has several values");
  const std::string got = fmt::format("got \"{}\"", a.field_name());
  switch (type) {
    case ArgType::Int:
      if (a.i) return;
      if (a.f && std::trunc(*a.f) == *a.f && std::abs(*a.f) < 9.007199254740992e15) return;
      bad_arg(a, type, a.f ? fmt::format("got f = {} which is not an integer", *a.f) : got);
    case ArgType::Bool:
      if (a.i && (*a.i == 0 || *a.i == 1)) return;
      bad_arg(a, type, a.i ? fmt::format("got i = {}", *a.i) : got);
    case ArgType::Float:
      if (a.f || a.i) return;
      bad_arg(a, type, got);
    case ArgType::Number:
      if (a.f || a.i || a.s) return;
      bad_arg(a, type, got);
    case ArgType::String:
      if (a.s) return;
      bad_arg(a, type, got);
    case ArgType::Ints:
      if (a.ints) return;
      bad_arg(a, type, got);
    case ArgType::Floats:
      if (a.floats || a.ints) return;
      bad_arg(a, type, got);
    case ArgType::Strings:
      if (a.strings) return;
      bad_arg(a, type, got);
    case ArgType::DType:
      if (a.i) {
        if (dtype_from_code(*a.i)) return;
        throw InvalidInput(fmt::format("argument \"{}\": unsupported dtype {}", a.name, describe_dtype_code(*a.i)));
      }
      if (a.s) {
        if (dtype_from_name(*a.s)) return;
        throw InvalidInput(fmt::format("argument \"{}\": unknown dtype name \"{}\"", a.name, *a.s));
      }
      bad_arg(a, type, got);
    case ArgType::Net:
      if (a.n) return;
      bad_arg(a, type, got);
    case ArgType::Nets:
      if (a.nets) return;
      bad_arg(a, type, got);
  }
}

void OpSchema::validate(const OperatorDef& def) const {
  const int nin = static_cast<int>(def.input.size());
  const int nout = static_cast<int>(def.output.size());
  if (nin < min_in_ || nin > max_in_)
    throw InvalidInput(fmt::format("{} takes {} input(s), got {}", type_, count_text(min_in_, max_in_), nin));
  if (nout < min_out_ || nout > max_out_)
    throw InvalidInput(fmt::format("{} takes {} output(s), got {}", type_, count_text(min_out_, max_out_), nout));
  for (int i = 0; i < nin; ++i)
    if (def.input[i].empty()) throw InvalidInput(fmt::format("input {} has an empty blob name", i));
  for (int o = 0; o < nout; ++o)
    if (def.output[o].empty()) throw InvalidInput(fmt::format("output {} has an empty blob name", o));
  // In-place: an output may share its name with an input only where the schema allows it.
  for (int i = 0; i < nin; ++i) {
    for (int o = 0; o < nout; ++o) {
      if (def.input[i] != def.output[o] || any_inplace_) continue;
      bool ok = false;
      for (auto [pi, po] : inplace_) ok = ok || (pi == i && po == o);
      if (!ok)
        throw InvalidInput(fmt::format("input {} and output {} are both \"{}\", but {} does not work in place for them",
                                       i, o, def.input[i], type_));
    }
  }
  for (auto [pi, po] : enforced_inplace_) {
    if (pi < nin && po < nout && def.input[pi] != def.output[po])
      throw InvalidInput(fmt::format("{} must work in place: output {} (\"{}\") must be input {} (\"{}\")", type_, po,
                                     def.output[po], pi, def.input[pi]));
  }
  std::set<std::string> seen;
  for (const auto& a : def.arg) {
    if (a.name.empty()) throw InvalidInput(fmt::format("an argument of {} has an empty name", type_));
    if (!seen.insert(a.name).second)
      throw InvalidInput(fmt::format("argument \"{}\" of {} is given twice", a.name, type_));
    const ArgSpec* spec = find_arg(a.name);
    if (!spec) {
      if (unknown_args_ok_) continue;
      std::string known;
      for (const auto& s : args_) known += (known.empty() ? "" : ", ") + s.name;
      throw InvalidInput(
          fmt::format("unknown argument \"{}\" for {} (known: {})", a.name, type_, known.empty() ? "none" : known));
    }
    check_arg_type(a, spec->type);
  }
  for (const auto& s : args_)
    if (s.required && !seen.count(s.name))
      throw InvalidInput(
          fmt::format("missing required argument \"{}\" ({}) of {}", s.name, arg_type_name(s.type), type_));
}

std::string OpSchema::describe() const {
  std::string out = fmt::format("{}\n  inputs: {}, outputs: {}\n", type_, count_text(min_in_, max_in_),
                                count_text(min_out_, max_out_));
  if (any_inplace_) {
    out += "  in place: any input may be an output\n";
  } else if (!inplace_.empty()) {
    out += "  in place:";
    for (std::size_t k = 0; k < inplace_.size(); ++k)
      out += fmt::format("{} input {} -> output {}", k ? "," : "", inplace_[k].first, inplace_[k].second);
    out += "\n";
  }
  for (const auto& a : args_) {
    out += fmt::format("  arg {} ({}{}{}): {}\n", a.name, arg_type_name(a.type), a.required ? ", required" : "",
                       a.default_text.empty() ? "" : ", default " + a.default_text, a.doc);
  }
  if (!doc_.empty()) out += "  " + doc_ + "\n";
  return out;
}

}  // namespace moka
