// register_all_operators: the one place that registers the operator families defined above the ops layer; and
// run_operator_once over the registry they complete.
#include "moka/exec/register_operators.h"

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/exec/control_ops.h"
#include "moka/operators/registry.h"
#include "moka/storage/save_load.h"

namespace moka {

void register_all_operators() {
  register_storage_operators();
  register_control_operators();
}

void run_operator_once(Workspace& ws, const OperatorDef& def) {
  register_all_operators();
  auto op = OperatorRegistry::global().create(def, &ws);
  if (!op->run()) throw RuntimeError(fmt::format("operator {} failed", def.type));
}

}  // namespace moka
