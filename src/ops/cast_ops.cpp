// cast operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_cast_ops(OperatorRegistry&) {}
}  // namespace moka::detail
