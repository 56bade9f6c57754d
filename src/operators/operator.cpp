// OperatorBase: binding inputs/outputs at construction and input type errors.
#include "moka/operators/operator.h"

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {

OperatorBase::OperatorBase(const OperatorDef& def, Workspace* ws) : def_(def), ws_(ws), args_(def_.arg) {
  inputs_.reserve(def_.input.size());
  for (const auto& name : def_.input) {
    Blob* b = ws->get_blob(name);
    if (!b) throw InvalidInput(fmt::format("op {}: Encountered a non-existing input blob: {}", def_.type, name));
    inputs_.push_back(b);
  }
  outputs_.reserve(def_.output.size());
  for (const auto& name : def_.output) outputs_.push_back(ws->create_blob(name));
}

std::string OperatorBase::describe(const OperatorDef& def, int index) {
  if (def.name.empty()) return fmt::format("operator #{} ({})", index, def.type);
  return fmt::format("operator #{} ({} \"{}\")", index, def.type, def.name);
}

void OperatorBase::throw_input_not_tensor(std::size_t i) const {
  const Blob& b = *inputs_[i];
  if (b.is_type<Tensor>())
    throw TypeError(fmt::format("input {} (\"{}\") is a tensor that was never filled", i, def_.input[i]));
  if (!b.is_initialized())
    throw TypeError(fmt::format("input {} (\"{}\") is empty; expected a tensor", i, def_.input[i]));
  throw TypeError(fmt::format("input {} (\"{}\") holds {}, expected a tensor", i, def_.input[i], b.type_name()));
}

void OperatorBase::throw_input_type(std::size_t i, const TypeInfo& want) const {
  const Blob& b = *inputs_[i];
  throw TypeError(fmt::format("input {} (\"{}\") holds {}, expected {}", i, def_.input[i], b.type_name(), want.name()));
}

}  // namespace moka
