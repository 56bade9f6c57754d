// run_task_group: runs a compiled TaskGroup — every node's plan concurrently, each in its node's workspace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "moka/defs/task_group_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/exec/prepared_plan.h"
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

/// @brief A compiled TaskGroup bound to its node workspaces, to be run many times (what
/// LocalSession keeps per runnable).
///
/// Construction checks every node's plan (InvalidInput naming the node) and the shared-workspace
/// net-name rule once; each node then runs as a PreparedPlan, so repeated runs reuse the
/// instantiated nets while the node's workspace is unchanged. run() behaves as run_task_group, and first
/// tells the workspaces' CollectiveService the group's nodes (a common world that names no nodes is over
/// them): `group_nodes` when given — the whole group, when `group` is one process's share of it — else
/// the nodes of `group`.
/// @code
///   moka::PreparedTaskGroup prepared(def, workspaces);
///   for (int i = 0; i < 100; ++i) prepared.run();
/// @endcode
/// Thread-safety: one run at a time; workspaces must outlive it.
class PreparedTaskGroup {
 public:
  PreparedTaskGroup(TaskGroupDef group, NodeWorkspaces& workspaces, std::vector<std::string> group_nodes = {});
  ~PreparedTaskGroup();
  PreparedTaskGroup(const PreparedTaskGroup&) = delete;
  PreparedTaskGroup& operator=(const PreparedTaskGroup&) = delete;

  void run(const RunOptions& options = {});
  const TaskGroupDef& def() const noexcept { return group_; }
  /// PreparedPlan::unregister_nets on every node's plan.
  void unregister_nets();

 private:
  TaskGroupDef group_;
  NodeWorkspaces& workspaces_;
  std::vector<std::string> group_nodes_;
  std::vector<std::unique_ptr<PreparedPlan>> plans_;  // per node of group_
};

}  // namespace moka
