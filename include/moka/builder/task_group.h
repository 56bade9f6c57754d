// TaskGroup: tasks that run concurrently, possibly on several nodes; compiled per node (docs/tasks.md §5).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/builder/ops_setup.h"
#include "moka/builder/task.h"

namespace moka {

/// @brief Tasks that start together and finish when the last one does, grouped by node (Caffe2's TaskGroup).
///
/// A **handle**. Tasks created while the group's body runs join it (lazily: they are compiled and
/// frozen when the group is first compiled, e.g. by a session). Tasks on the same node share that
/// node's workspace; tasks on different nodes cannot see each other's blobs.
/// @code
///   moka::TaskGroup tg([&] {
///     moka::Task({}, s1);                              // node "local"
///     moka::Node("n2", [&] { moka::Task({}, s3); });   // node "n2"
///   });
///   moka::LocalSession session;
///   session.run(tg);
/// @endcode
/// Thread-safety: built and compiled by one thread.
class TaskGroup {
 public:
  static constexpr const char* LOCAL_SETUP = kLocalSetup;

  explicit TaskGroup(std::optional<WorkspaceType> workspace_type = std::nullopt);
  /// Runs body with this group active (a Python `with TaskGroup() as tg:` block).
  explicit TaskGroup(const std::function<void()>& body) : TaskGroup(std::nullopt, body) {}
  TaskGroup(std::optional<WorkspaceType> workspace_type, const std::function<void()>& body);

  static TaskGroup* current(bool required = true) { return Context<TaskGroup>::current(required); }

  /// Adds (and compiles) a task ('Cannot add Task to an already used TaskGroup.').
  void add(Task task);
  /// Every task; adds the pending ones first and marks the group used.
  const std::vector<Task>& tasks();
  std::size_t num_registered_tasks() const;
  /// Nodes of all tasks, in first-use order.
  std::vector<std::string> used_nodes() const;
  /// A step run every interval_ms on `node` while the group runs there, and once after its tasks.
  void report_step(const StepsOrNets& step, const std::optional<std::string>& node = std::nullopt,
                   int64_t interval_ms = 1000);
  /// Deprecated form: one reporter net per node, every report_interval seconds.
  void report_net(const std::optional<Net>& net = std::nullopt, const std::optional<std::string>& node = std::nullopt,
                  int32_t report_interval = 5);
  /// One grouped task per node (Caffe2's tasks_by_node; memoized).
  TaskGroup tasks_by_node(const std::function<std::string(const std::string&)>& node_remap = {});
  /// Everything as one task on one node (Caffe2's to_task).
  Task to_task(const std::optional<std::string>& node = std::nullopt);
  std::optional<WorkspaceType> workspace_type() const;
  void add_remote_net(const Net& net);
  const std::vector<Net>& remote_nets() const;
  /// "TaskGroup(tasks=[], workspace_type=None, remote_nets=[])"
  std::string repr() const;
  bool operator==(const TaskGroup& o) const { return state_ == o.state_; }
  /// An identity that expires when the last handle to this group is gone (a session keys its
  /// compiled runnables by it, and drops them once nobody can run them again).
  std::weak_ptr<const void> identity() const noexcept { return state_; }

 private:
  friend class Task;
  std::shared_ptr<detail::TaskGroupState> state_;
};

namespace ops {

/// @brief A report step of the active TaskGroup on the current node (Caffe2's
/// `ops.local_reporter`): body becomes a step run every interval_ms while the group's tasks run
/// on this node, and once after they finished. Requires an active TaskGroup.
ExecutionStep local_reporter(int64_t interval_ms, const std::function<void()>& body,
                             const ReporterOptions& options = {});

}  // namespace ops
}  // namespace moka
