// moka._C's bindings of jobs and checkpoints: Job, epoch_limiter, CheckpointManager, MultiNodeCheckpointManager,
// db_name and JobRunner — the engine behind moka.checkpoint (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

namespace moka::python {

void bind_job(pybind11::module_& m);

}  // namespace moka::python
