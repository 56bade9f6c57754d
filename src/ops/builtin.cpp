// Registers every built-in operator family with the global registry.
#include "ops/builtin.h"

namespace moka::detail {

void register_builtin_operators(OperatorRegistry& reg) {
  register_callable_ops(reg);
  register_fill_ops(reg);
  register_math_ops(reg);
  register_logic_ops(reg);
  register_cast_ops(reg);
  register_utility_ops(reg);
  register_counter_ops(reg);
  register_timer_ops(reg);
  register_dataset_ops(reg);
  register_queue_ops(reg);
  register_db_ops(reg);
}

}  // namespace moka::detail
