// JobDef: a Job (Caffe2 checkpoint.py; docs/jobs.md §1) as plain data — its four compiled TaskGroups, the blobs
// whose values stop the epoch loop, and the nodes whose workspaces are checkpointed.
#pragma once

#include <string>
#include <vector>

#include "moka/defs/task_group_def.h"

namespace moka {

/// @brief A blob read after every epoch; any true value ends the epoch loop (a TaskOutput of Caffe2's
/// `add_stop_condition`). The blob must hold a one-element bool or numeric tensor.
struct StopConditionDef {
  std::string node;  ///< node whose workspace holds the blob
  std::string blob;
  bool operator==(const StopConditionDef&) const = default;
};

/// @brief A job: init_group runs once (not when resuming), epoch_group until a stop condition holds,
/// then download_group and exit_group. Format: docs/job-format.md.
struct JobDef {
  std::string name;
  TaskGroupDef init_group;
  TaskGroupDef epoch_group;
  TaskGroupDef download_group;
  TaskGroupDef exit_group;
  std::vector<StopConditionDef> stop_conditions;
  /// Nodes whose workspaces are checkpointed; empty means the nodes of init_group (Caffe2's default).
  std::vector<std::string> nodes_to_checkpoint;
  bool operator==(const JobDef&) const = default;

  /// The explicit list, or init_group's nodes in order.
  std::vector<std::string> checkpoint_nodes() const;
};

}  // namespace moka
