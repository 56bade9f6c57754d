// timer operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_timer_ops(OperatorRegistry&) {}
}  // namespace moka::detail
