// Argument helpers: field inspection, equality, make_arg overloads, lookup.
#include "moka/defs/argument.h"

#include "moka/defs/operator_def.h"

namespace moka {

int Argument::num_fields_set() const {
  return int(f.has_value()) + int(i.has_value()) + int(s.has_value()) + int(n != nullptr) + int(floats.has_value()) +
         int(ints.has_value()) + int(strings.has_value()) + int(nets.has_value());
}

const char* Argument::field_name() const {
  if (f) return "f";
  if (i) return "i";
  if (s) return "s";
  if (n) return "n";
  if (floats) return "floats";
  if (ints) return "ints";
  if (strings) return "strings";
  if (nets) return "nets";
  return "none";
}

bool Argument::operator==(const Argument& o) const {
  if (name != o.name || f != o.f || i != o.i || s != o.s || floats != o.floats || ints != o.ints ||
      strings != o.strings || nets != o.nets)
    return false;
  if ((n == nullptr) != (o.n == nullptr)) return false;
  return !n || *n == *o.n;
}

Argument make_arg(std::string name, int64_t v) {
  Argument a;
  a.name = std::move(name);
  a.i = v;
  return a;
}
Argument make_arg(std::string name, int v) { return make_arg(std::move(name), int64_t{v}); }
Argument make_arg(std::string name, bool v) { return make_arg(std::move(name), int64_t{v ? 1 : 0}); }
Argument make_arg(std::string name, double v) {
  Argument a;
  a.name = std::move(name);
  a.f = v;
  return a;
}
Argument make_arg(std::string name, std::string v) {
  Argument a;
  a.name = std::move(name);
  a.s = std::move(v);
  return a;
}
Argument make_arg(std::string name, const char* v) { return make_arg(std::move(name), std::string(v)); }
Argument make_arg(std::string name, std::vector<int64_t> v) {
  Argument a;
  a.name = std::move(name);
  a.ints = std::move(v);
  return a;
}
Argument make_arg(std::string name, std::vector<double> v) {
  Argument a;
  a.name = std::move(name);
  a.floats = std::move(v);
  return a;
}
Argument make_arg(std::string name, std::vector<std::string> v) {
  Argument a;
  a.name = std::move(name);
  a.strings = std::move(v);
  return a;
}
Argument make_arg(std::string name, NetDef v) {
  Argument a;
  a.name = std::move(name);
  a.n = std::make_shared<const NetDef>(std::move(v));
  return a;
}
Argument make_arg(std::string name, std::vector<NetDef> v) {
  Argument a;
  a.name = std::move(name);
  a.nets = std::move(v);
  return a;
}

const Argument* find_arg(const std::vector<Argument>& args, const std::string& name) {
  for (const auto& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

OperatorDef make_op(std::string type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<Argument> args, std::string name) {
  OperatorDef op;
  op.type = std::move(type);
  op.input = std::move(inputs);
  op.output = std::move(outputs);
  op.arg = std::move(args);
  op.name = std::move(name);
  return op;
}

}  // namespace moka
