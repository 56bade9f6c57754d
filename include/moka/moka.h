// Umbrella header: every public moka header.
#pragma once

#include "moka/core/blob.h"
#include "moka/core/dtype.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/argument.h"
#include "moka/defs/json.h"
#include "moka/defs/operator_def.h"
#include "moka/defs/plan_def.h"
#include "moka/exec/net.h"
#include "moka/exec/plan_executor.h"
#include "moka/ops/arguments.h"
#include "moka/ops/callable.h"
#include "moka/ops/operator.h"
#include "moka/ops/registry.h"
#include "moka/ops/schema.h"
