// Task, SetupNets and final_output: a step placed on a node, with setup/exit work and outputs (docs/tasks.md §3, §4).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/builder/cluster.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/net_builder.h"
#include "moka/builder/task_output.h"

namespace moka {

class TaskGroup;
namespace detail {
struct TaskState;
struct TaskGroupState;
}  // namespace detail

/// Optional arguments of Task (Caffe2's keyword arguments).
struct TaskOptions {
  std::string name{};                             ///< default: the step's name, else "task"
  std::optional<std::string> node{};              ///< default: the active Node ("local")
  std::optional<WorkspaceType> workspace_type{};  ///< default: the group's, else PRIVATE
  TaskGroup* group = nullptr;                     ///< default: the active TaskGroup, if any
  int32_t num_instances = 0;                      ///< > 1: instances run concurrently, each in its own child workspace
  std::vector<TaskOutput> outputs{};
};

/// @brief An execution step placed on a node, with task/instance setup and outputs (Caffe2's Task).
///
/// A **handle**: copies share one task. Its name is `<node>/<name>`, unique within its group
/// (`task`, `task:1`, ...; moka's decision 3). Three shapes:
/// @code
///   moka::Task t1({}, step_or_net);                   // Task(step=...)
///   moka::Task t2({.name = "t", .num_instances = 8}, [&] {  // `with Task(...):` — the body is a NetBuilder
///     moka::ops::task_init([&] { one = moka::ops::Const(1); });
///     total = moka::ops::Add({total, one});
///   });
///   moka::Task t3;                                    // no step: only outputs (pre-created blobs)
/// @endcode
/// get_step() compiles the task once (docs/tasks.md §3.3): report steps, task and instance setup collected from
/// net attributes, a default output when there is none, instances in `<name>:parallel`. Compiling
/// marks what it used, so its results are kept: a task compiles the same way in every group and
/// session (its setup blocks belong to the first group — or run alone — that compiled it).
/// Thread-safety: built and compiled by one thread.
class Task {
 public:
  Task() : Task(TaskOptions{}) {}
  explicit Task(const TaskOptions& options);
  Task(const TaskOptions& options, const StepsOrNets& step);
  /// Runs body now, inside this task's NetBuilder (named after the task); its ops form the step.
  Task(const TaskOptions& options, const std::function<void()>& body);
  explicit Task(const std::function<void()>& body) : Task(TaskOptions{}, body) {}

  static constexpr const char* TASK_SETUP = kTaskSetup;
  static constexpr const char* TASK_INSTANCE_SETUP = kTaskInstanceSetup;
  static constexpr const char* REPORT_STEP = kReportStep;

  /// The innermost Task whose body is being built on this thread.
  static Task* current(bool required = true) { return Context<Task>::current(required); }

  const std::string& name() const;
  const std::string& node() const;
  int32_t num_instances() const;
  /// The explicit or inherited type, or nullopt when neither the task nor its group set one.
  std::optional<WorkspaceType> workspace_type() const;
  /// InvalidInput ('Cannot modify task since it is already been used.') when a used task has
  /// another type: its compiled step runs as that type in every group and session.
  void set_workspace_type(WorkspaceType t);
  bool has_step() const;

  /// Adds an output ('Cannot modify task since it is already been used.' after compilation).
  TaskOutput add_output(const TaskOutput& output);
  void add_outputs(const std::vector<TaskOutput>& outputs);
  const std::vector<TaskOutput>& outputs() const;
  TaskOutputList output_list() const { return TaskOutputList(outputs()); }

  /// The compiled step (memoized; marks nothing as used — TaskGroup::add does).
  ExecutionStep get_step();
  bool is_used() const;
  /// Compiles and freezes the task (called when it joins a used TaskGroup).
  void notify_used();

  /// @brief This task alone in a GLOBAL TaskGroup, grouped by node (TaskGroup::tasks_by_node):
  /// what a session runs for `session.run(task)` (Caffe2's Session.compile wraps the task so).
  ///
  /// Memoized, as TaskGroup::tasks_by_node is: grouping collects the setup blocks of the task's
  /// nets and marks them used, so a second grouping would lose them; every session that runs the
  /// task compiles this same grouped form. InvalidInput when the task is PRIVATE.
  TaskGroup tasks_by_node();

  /// "Task(name=local/task, node=local, outputs=[])"
  std::string repr() const;
  bool operator==(const Task& o) const { return state_ == o.state_; }
  /// An identity that expires when the last handle to this task is gone (a session keys its
  /// compiled runnables by it, and drops them once nobody can run them again).
  std::weak_ptr<const void> identity() const noexcept { return state_; }

  /// @brief Runs body with this task active, in a NetBuilder named after the task, and makes the
  /// builder the task's step (Caffe2's `with Task(...):`; the constructor with a body calls it).
  /// InvalidInput when the task already has a step or was used.
  void build(const std::function<void()>& body);

 private:
  friend class TaskGroup;
  /// get_step() with create_workspace set for the workspace type: the step TaskGroup::tasks_by_node
  /// runs (memoized; Caffe2 set the flag in every tasks_by_node, which fails once a plan has used
  /// the step).
  ExecutionStep group_step();
  void set_step(const StepsOrNets& step);
  std::shared_ptr<detail::TaskState> state_;
};

/// @brief Init and exit nets attached to a net as a setup attribute (Caffe2's SetupNets).
/// @code
///   net.add_attribute(moka::Task::TASK_SETUP, std::make_shared<moka::SetupNets>(init_nets, exit_nets));
/// @endcode
class SetupNets final : public SetupAttribute {
 public:
  SetupNets(std::optional<std::vector<Net>> init_nets = std::nullopt,
            std::optional<std::vector<Net>> exit_nets = std::nullopt)
      : init_nets_(std::move(init_nets)), exit_nets_(std::move(exit_nets)) {}
  std::vector<StepOrNet> setup(Net& init_net) override;
  std::vector<StepOrNet> exit(Net& exit_net) override;
  /// "SetupNets(init_nets=None, exit_nets=None)"
  std::string repr() const;

 private:
  std::optional<std::vector<Net>> init_nets_, exit_nets_;
};

/// @brief Marks blob (or record) as an output of the active Task (or of a new Task when none is
/// active) and returns its TaskOutput, whose value is available after the session run.
TaskOutput final_output(const TaskOutput& output);

/// @brief Caffe2's get_setup_nets(key, steps_or_nets, target): the init and exit work of every
/// unused setup attribute under `key` of the given steps, each attribute then marked used. With `node`
/// (a node's LOCAL_SETUP), attributes used already by an earlier node get SetupAttribute::setup_on_node.
std::pair<std::vector<StepOrNet>, std::vector<StepOrNet>> get_setup_nets(const std::string& key,
                                                                         const std::vector<ExecutionStep>& steps,
                                                                         const void* target,
                                                                         const std::string* node = nullptr);

/// Caffe2's add_setup_steps: `step` alone, or `name` [name:init?, step, name:exit?].
ExecutionStep add_setup_steps(const ExecutionStep& step, const std::vector<StepOrNet>& inits,
                              const std::vector<StepOrNet>& exits, const std::string& name);

}  // namespace moka
