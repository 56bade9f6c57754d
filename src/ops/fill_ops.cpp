// fill operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_fill_ops(OperatorRegistry&) {}
}  // namespace moka::detail
