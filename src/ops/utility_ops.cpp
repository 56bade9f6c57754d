// utility operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_utility_ops(OperatorRegistry&) {}
}  // namespace moka::detail
