// epoch_limiter: stops a Job after a fixed number of epochs with a counter (docs/jobs.md §3).
#pragma once

#include <cstdint>

#include "moka/builder/task_output.h"

namespace moka {

class Job;

/// @brief Makes job stop after exactly num_epochs epochs (Caffe2's epoch_limiter).
///
/// Adds to the init group a task creating a counter at num_epochs - 1, to the epoch group a task
/// counting it down, and that task's output as a stop condition — all on the current Node.
/// InvalidInput when num_epochs < 1 (Caffe2 failed only when running).
/// @code
///   moka::Job job([&](moka::Job& j) { ...; moka::epoch_limiter(j, 5); });
/// @endcode
/// Returns the stop condition. Thread-safety: build-time, one thread.
TaskOutput epoch_limiter(Job& job, int64_t num_epochs);

}  // namespace moka
