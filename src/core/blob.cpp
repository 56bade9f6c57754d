// Blob type names and type-mismatch errors.
#include "moka/core/blob.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "moka/core/error.h"

namespace moka {

namespace detail {
std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = (status == 0 && d) ? d : mangled;
  std::free(d);
  // moka's own types read better without the namespace: "Tensor", "Counter".
  constexpr std::string_view prefix = "moka::";
  if (name.rfind(prefix, 0) == 0 && name.find("::", prefix.size()) == std::string::npos) name.erase(0, prefix.size());
  return name;
}

void throw_blob_type(const TypeInfo* have, const TypeInfo& want) {
  if (!have) throw TypeError(fmt::format("blob is empty, expected {}", want.name()));
  throw TypeError(fmt::format("blob holds {}, expected {}", have->name(), want.name()));
}
}  // namespace detail

std::string_view TypeInfo::name() const {
  // Demangled once per type; only messages need names, so a lock here costs nothing that matters.
  static std::mutex mu;
  static auto* names = new std::map<const TypeInfo*, std::string>();
  std::lock_guard lk(mu);
  auto it = names->find(this);
  if (it == names->end()) it = names->emplace(this, detail::demangle(cpp_type().name())).first;
  return it->second;
}

std::string_view Blob::type_name() const noexcept {
  if (!type_) return "nothing";
  try {
    return type_->name();
  } catch (...) {
    return "?";
  }
}

}  // namespace moka
