// CompiledRunnables: what a session compiled for each runnable it ran (decision 2) — the per-node
// TaskGroupDef, the TaskOutputs of each node, and what the session prepared to run it — shared by
// LocalSession and MpiSession so that both compile every runnable the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moka/builder/plan.h"
#include "moka/builder/task_group.h"
#include "moka/defs/task_group_def.h"
#include "moka/session/run_task_group.h"

namespace moka::detail {

/// One compiled runnable.
struct CompiledRunnable {
  TaskGroupDef def;
  std::vector<std::pair<std::string, TaskOutputList>> outputs;  // per node, in def's order
  uint64_t serial = 0;                          // process-wide unique: the source its outputs are set with
  std::unique_ptr<PreparedTaskGroup> prepared;  // made by the session's first run
  bool checked = false;                         // the session's own checks before a first run passed
  uint64_t digest = 0;                          // of the definition, as those checks computed it (MpiSession)
  std::shared_ptr<void> session_data;           // what the session keeps with it (MpiSession: fetched outputs)
};

/// @brief The runnables a session compiled, keyed by the runnable's identity.
///
/// A Task, ExecutionStep, Plan or Net compiles as a GLOBAL TaskGroup holding it (Caffe2's
/// LocalSession did the same). An entry whose runnable nobody holds any more can never be asked
/// for again: the next lookup drops it and unregisters the nets its plans registered.
/// Thread-safety: one session thread.
class CompiledRunnables {
 public:
  CompiledRunnable& get(TaskGroup& group);
  CompiledRunnable& get(const Task& task);
  CompiledRunnable& get(const ExecutionStep& step);
  CompiledRunnable& get(const Plan& plan, std::string_view session_name);
  CompiledRunnable& get(const Net& net);
  /// A definition run as it is (`moka run GROUP.json`): no TaskOutputs; found again by value, and kept
  /// as long as the session.
  CompiledRunnable& get(const TaskGroupDef& def);
  std::size_t size() const noexcept { return cache_.size() + defs_.size(); }

 private:
  using Key = std::weak_ptr<const void>;
  // make_grouped: the runnable's tasks grouped by node (TaskGroup::tasks_by_node()).
  CompiledRunnable& compiled_for(const Key& key, const std::function<TaskGroup()>& make_grouped);

  std::vector<std::pair<Key, std::unique_ptr<CompiledRunnable>>> cache_;
  std::vector<std::unique_ptr<CompiledRunnable>> defs_;
};

}  // namespace moka::detail
