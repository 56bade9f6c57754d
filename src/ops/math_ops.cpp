// math operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_math_ops(OperatorRegistry&) {}
}  // namespace moka::detail
