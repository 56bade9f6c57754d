// OperatorRegistry: operator types with their schemas and factories; built-ins are registered on first use.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "moka/operators/operator.h"
#include "moka/operators/schema.h"

namespace moka {

using OperatorFactory = std::function<std::unique_ptr<OperatorBase>(const OperatorDef&, Workspace*)>;

/// @brief Maps operator type names to schemas and factories.
///
/// @code
///   struct MyOp : OperatorBase { using OperatorBase::OperatorBase; bool run() override; };
///   register_operator<MyOp>(OpSchema("MyOp").inputs(1).outputs(1).doc("..."));
/// @endcode
/// Thread-safety: all methods may be called concurrently.
class OperatorRegistry {
 public:
  /// The process-wide registry, holding every built-in operator.
  static OperatorRegistry& global();

  /// Registers a type; InvalidInput if the name is taken.
  void add(OpSchema schema, OperatorFactory factory);
  bool has(const std::string& type) const;
  /// The schema, or nullptr.
  const OpSchema* schema(const std::string& type) const;
  /// Checks the type is known and the definition satisfies its schema (InvalidInput otherwise).
  void validate(const OperatorDef& def) const;
  /// Validates, then constructs the operator bound to ws.
  std::unique_ptr<OperatorBase> create(const OperatorDef& def, Workspace* ws) const;
  /// Registered type names, sorted.
  std::vector<std::string> types() const;
  /// Whether type is registered and its schema says fiber_safe().
  bool is_fiber_safe(const std::string& type) const;
  /// Marks a registered type fiber-safe (OpSchema::fiber_safe); InvalidInput if it is unknown.
  void mark_fiber_safe(const std::string& type);

 private:
  struct Entry {
    std::unique_ptr<OpSchema> schema;  // stable address
    OperatorFactory factory;
  };
  const Entry& entry(const std::string& type) const;
  mutable std::shared_mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_;
};

/// The factory of operator class Op (constructible from (const OperatorDef&, Workspace*)).
template <class Op>
OperatorFactory factory_of() {
  return
      [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> { return std::make_unique<Op>(d, ws); };
}

/// Registers operator class Op with the global registry.
template <class Op>
void register_operator(OpSchema schema) {
  OperatorRegistry::global().add(std::move(schema), factory_of<Op>());
}

}  // namespace moka
