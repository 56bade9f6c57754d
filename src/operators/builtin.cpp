// Registers every built-in operator family with the global registry.
#include "operators/builtin.h"

#include <algorithm>
#include <string>
#include <vector>

#include "moka/operators/registry.h"
#include "operators/trace_counters.h"

namespace moka::detail {

void register_builtin_operators(OperatorRegistry& reg) {
  register_callable_ops(reg);  // Callable runs users' code, which may wait in any way: not fiber-safe
  const std::vector<std::string> callable = reg.types();
  register_fill_ops(reg);
  register_math_ops(reg);
  register_dense_math_ops(reg);
  register_logic_ops(reg);
  register_cast_ops(reg);
  register_utility_ops(reg);
  register_counter_ops(reg);
  register_timer_ops(reg);
  register_count_records_op(reg);
  register_dataset_ops(reg);
  register_text_file_ops(reg);
  register_queue_ops(reg);
  register_queue_link_ops(reg);
  register_collective_ops(reg);
  register_trace_counters();  // queue depths and pipe rates in timeline traces
  // The others wait only in BlobsQueue reads and writes and in collectives, which yield inside a fiber.
  for (const std::string& type : reg.types())
    if (std::find(callable.begin(), callable.end(), type) == callable.end()) reg.mark_fiber_safe(type);
}

}  // namespace moka::detail
