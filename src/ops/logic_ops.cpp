// logic operators (placeholder until implemented).
#include "ops/builtin.h"
namespace moka::detail {
void register_logic_ops(OperatorRegistry&) {}
}  // namespace moka::detail
