// OperatorRegistry: the process-wide table of operator types; built-ins are added on first use.
#include "moka/operators/registry.h"

#include <fmt/format.h>

#include <mutex>

#include "moka/core/error.h"
#include "operators/builtin.h"

namespace moka {

OperatorRegistry& OperatorRegistry::global() {
  static OperatorRegistry* reg = [] {
    auto* r = new OperatorRegistry();  // never destroyed: operators may run during static teardown
    detail::register_builtin_operators(*r);
    return r;
  }();
  return *reg;
}

void OperatorRegistry::add(OpSchema schema, OperatorFactory factory) {
  if (schema.type().empty()) throw InvalidInput("cannot register an operator with an empty type name");
  if (!factory) throw InvalidInput(fmt::format("operator {}: factory is empty", schema.type()));
  std::unique_lock lk(mu_);
  const std::string type = schema.type();
  if (entries_.count(type)) throw InvalidInput(fmt::format("operator type \"{}\" is already registered", type));
  entries_.emplace(type, Entry{std::make_unique<OpSchema>(std::move(schema)), std::move(factory)});
}

bool OperatorRegistry::has(const std::string& type) const {
  std::shared_lock lk(mu_);
  return entries_.count(type) != 0;
}

const OpSchema* OperatorRegistry::schema(const std::string& type) const {
  std::shared_lock lk(mu_);
  auto it = entries_.find(type);
  return it == entries_.end() ? nullptr : it->second.schema.get();
}

const OperatorRegistry::Entry& OperatorRegistry::entry(const std::string& type) const {
  std::shared_lock lk(mu_);
  auto it = entries_.find(type);
  if (it == entries_.end()) {
    if (type.empty()) throw InvalidInput("operator has no type");
    throw InvalidInput(fmt::format("unknown operator type \"{}\" (`moka ops` lists the registered ones)", type));
  }
  return it->second;  // entries are never removed, so the reference stays valid
}

void OperatorRegistry::validate(const OperatorDef& def) const { entry(def.type).schema->validate(def); }

std::unique_ptr<OperatorBase> OperatorRegistry::create(const OperatorDef& def, Workspace* ws) const {
  const Entry& e = entry(def.type);
  e.schema->validate(def);
  return e.factory(def, ws);
}

bool OperatorRegistry::is_fiber_safe(const std::string& type) const {
  std::shared_lock lk(mu_);
  auto it = entries_.find(type);
  return it != entries_.end() && it->second.schema->is_fiber_safe();
}

void OperatorRegistry::mark_fiber_safe(const std::string& type) {
  std::unique_lock lk(mu_);
  auto it = entries_.find(type);
  if (it == entries_.end()) throw InvalidInput(fmt::format("mark_fiber_safe: unknown operator type \"{}\"", type));
  it->second.schema->fiber_safe();
}

std::vector<std::string> OperatorRegistry::types() const {
  std::shared_lock lk(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : entries_) out.push_back(k);
  return out;
}

}  // namespace moka
