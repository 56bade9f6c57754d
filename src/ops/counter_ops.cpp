// counter operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_counter_ops(OperatorRegistry&) {}
}  // namespace moka::detail
