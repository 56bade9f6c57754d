// TaskGroupDef: a compiled TaskGroup as plain data — one plan per node plus the blobs each node outputs.
#pragma once

#include <string>
#include <vector>

#include "moka/defs/plan_def.h"

namespace moka {

/// @brief One node's share of a compiled TaskGroup.
struct NodePlanDef {
  std::string node;                  ///< node name ("local", "trainer_0", ...)
  PlanDef plan;                      ///< what the node runs, in its own workspace
  std::vector<std::string> outputs;  ///< blobs pre-created in the node workspace and fetched after the run

  bool operator==(const NodePlanDef&) const = default;
};

/// @brief A compiled TaskGroup: its nodes run concurrently, each in its own workspace (moka's
/// decision 1), and the group finishes when the last node does. This is what LocalSession runs
/// and what `moka run` accepts besides a plain plan.
struct TaskGroupDef {
  std::string name;
  std::vector<NodePlanDef> nodes;

  bool operator==(const TaskGroupDef&) const = default;
};

}  // namespace moka
