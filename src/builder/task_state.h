// Internal: shared state behind the Task and TaskGroup handles.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "moka/builder/task_group.h"

namespace moka::detail {

struct TaskState {
  std::string name;
  std::string node;
  std::optional<ExecutionStep> step;
  std::vector<TaskOutput> outputs;
  std::optional<WorkspaceType> workspace_type;
  int32_t num_instances = 0;
  std::weak_ptr<TaskGroupState> group;
  bool used = false;
  std::optional<ExecutionStep> step_with_setup;
  // Memos that make compiling repeatable (a second session, another group): compiling marks the
  // step used and the setup blocks collected, so what it produced is kept rather than redone.
  std::optional<ExecutionStep> group_step;        // step_with_setup, create_workspace set by type
  std::shared_ptr<TaskGroupState> alone_by_node;  // Task::tasks_by_node(): alone in a GLOBAL group
};

struct TaskGroupState {
  std::optional<WorkspaceType> workspace_type;
  std::vector<Task> tasks_to_add;
  std::vector<Task> tasks;
  // Names of the tasks in tasks_to_add and tasks (names are never given back), and per base name
  // the next `:<i>` suffix to try: naming a task looks up a set instead of scanning every task of
  // the group per candidate name (which made a group of n tasks named alike cost O(n^3)).
  std::unordered_set<std::string> task_names;
  std::unordered_map<std::string, int> next_suffix;
  bool already_used = false;
  std::vector<std::pair<std::string, ExecutionStep>> report_steps;  // (node, step)
  std::vector<std::pair<std::string, Net>> report_nets;             // (node, net)
  std::vector<Net> remote_nets;
  std::vector<std::pair<int32_t, Net>> report_net_intervals;
  // tasks_by_node memo: the node map it was computed for, and the result.
  std::optional<std::map<std::string, std::string>> by_node_map;
  std::shared_ptr<TaskGroupState> by_node;
};

}  // namespace moka::detail
