// run_task_group: runs a compiled TaskGroup — every node's plan concurrently, each in its node's workspace.
#pragma once

#include "moka/defs/task_group_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/session/node_workspaces.h"

namespace moka {

/// @brief Runs every node of group concurrently in `workspaces.node(name)`.
///
/// Before anything runs, every node's plan is checked (InvalidInput naming the node) and each
/// node's output blobs are created in its workspace, so tasks in child workspaces write them in
/// place. The first node to fail cancels the others (their runs stop early and blocked operators
/// wake); when all have returned the first error is rethrown with `node "n"` in its context.
/// A node with no steps does nothing. `options.cancel`, when given, also stops every node. With a
/// shared workspace, two nodes defining a net of the same name is an InvalidInput.
/// Thread-safety: concurrent calls must use different NodeWorkspaces or touch different blobs.
void run_task_group(const TaskGroupDef& group, NodeWorkspaces& workspaces, const RunOptions& options = {});

}  // namespace moka
