// NameScope: the per-thread blob-name scope (Caffe2's core.NameScope).
#include "moka/builder/name_scope.h"

namespace moka {

namespace {
std::string& scope_slot() {
  thread_local std::string scope;
  return scope;
}
}  // namespace

const std::string& current_name_scope() { return scope_slot(); }

std::string scoped_name(const std::string& name) { return scope_slot() + name; }

NameScope::NameScope(const std::string& prefix, bool reset) : old_(scope_slot()) {
  const std::string add = prefix.empty() ? std::string() : prefix + "/";
  scope_slot() = reset ? add : old_ + add;
}

NameScope::~NameScope() { scope_slot() = std::move(old_); }

}  // namespace moka
