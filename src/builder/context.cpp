// Context stacks: type names for messages, the errors, and the NetBuilder-name hook.
#include "moka/builder/context.h"

#include <cxxabi.h>

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {
namespace detail {

std::string context_type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled) ? demangled : type.name();
  std::free(demangled);
  // Messages read like Caffe2's ("Context Task is required ..."): the class name without its
  // namespaces. Template names keep their qualification (their arguments contain "::" too).
  if (name.find('<') == std::string::npos) {
    if (auto pos = name.rfind("::"); pos != std::string::npos) name.erase(0, pos + 2);
  } else if (name.starts_with("moka::")) {
    name.erase(0, 6);
  }
  return name;
}

void throw_no_active_context(const std::type_info& type) {
  throw InvalidInput(fmt::format("Context {} is required but none is active.", context_type_name(type)));
}

void throw_context_mismatch(const std::type_info& type) {
  throw InvalidInput(
      fmt::format("Context {}: the object being exited is not the innermost active one.", context_type_name(type)));
}

namespace {
std::atomic<NetBuilderNameSource> g_net_builder_name_source{nullptr};
}

void set_net_builder_name_source(NetBuilderNameSource source) {
  g_net_builder_name_source.store(source, std::memory_order_release);
}

}  // namespace detail

std::string current_net_builder_name() {
  auto source = detail::g_net_builder_name_source.load(std::memory_order_acquire);
  return source ? source() : std::string();
}

}  // namespace moka
