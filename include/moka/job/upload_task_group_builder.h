// UploadTaskGroupBuilder: builds the TaskGroup JobRunner runs after the last epoch, e.g. to copy the
// final checkpoint elsewhere (docs/jobs.md §4.4).
#pragma once

#include <cstdint>

#include "moka/builder/task_group.h"

namespace moka {

class CheckpointManagerBase;

/// @brief Builds the upload TaskGroup (Caffe2's UploadTaskGroupBuilder, abstract there too).
/// @code
///   struct CopyFinal : moka::UploadTaskGroupBuilder {
///     moka::TaskGroup build(int64_t epoch, moka::CheckpointManagerBase* cm) override { ... }
///   };
///   moka::JobRunner(job, cm, {.upload_task_group_builder = std::make_shared<CopyFinal>()}).train(session);
/// @endcode
/// Thread-safety: called from the thread running JobRunner::train.
class UploadTaskGroupBuilder {
 public:
  virtual ~UploadTaskGroupBuilder() = default;
  /// @brief The group to run once training ended at `epoch`; checkpoint_manager may be null.
  virtual TaskGroup build(int64_t epoch, CheckpointManagerBase* checkpoint_manager) = 0;
};

}  // namespace moka
