// Job: the init, epoch, download and exit TaskGroups of a training job, and its stop conditions (docs/jobs.md §1).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/builder/context.h"
#include "moka/builder/task_group.h"
#include "moka/builder/task_output.h"
#include "moka/defs/job_def.h"

namespace moka {

class Session;

/// Optional arguments of Job (Caffe2's keyword arguments); missing groups are created.
struct JobOptions {
  std::optional<TaskGroup> init_group{};      ///< default: a GLOBAL TaskGroup
  std::optional<TaskGroup> epoch_group{};     ///< default: TaskGroup() (tasks PRIVATE)
  std::optional<TaskGroup> download_group{};  ///< default: TaskGroup()
  std::optional<TaskGroup> exit_group{};      ///< default: TaskGroup()
  std::vector<TaskOutput> stop_conditions{};
  std::optional<std::vector<std::string>> nodes_to_checkpoint{};  ///< default: the init group's nodes
};

/// @brief A training job (Caffe2's Job): an init group run once, an epoch group run until a stop
/// condition holds, then a download and an exit group. JobRunner runs it.
///
/// A **handle**: copies share one job. The body form is Python's `with Job() as job:` — inside
/// it the job is Job::current() and its epoch group is the active TaskGroup, so bare Tasks and
/// pipes join the epoch group; `j.init_group(body)` is `with job.init_group:`.
/// @code
///   moka::Job job([&](moka::Job& j) {
///     j.init_group([&] { moka::Task([&] { total = moka::ops::Const(0, {.blob_out = "total"}); }); });
///     moka::Task([&] { moka::ops::Add({total, moka::ops::Const(1)}, {total}); });   // epoch group
///     moka::epoch_limiter(j, 3);
///   });
///   moka::JobRunner(job).train(session);   // 3
/// @endcode
/// Thread-safety: built by one thread; run by one JobRunner at a time.
class Job {
 public:
  Job() : Job(JobOptions{}) {}
  explicit Job(JobOptions options);
  /// Runs body with this job and its epoch group active.
  explicit Job(const std::function<void(Job&)>& body) : Job(JobOptions{}, body) {}
  Job(JobOptions options, const std::function<void(Job&)>& body);

  /// The innermost Job whose body runs on this thread ("Context Job is required but none is active.").
  static Job* current(bool required = true) { return Context<Job>::current(required); }

  /// @brief Runs body with this job and its epoch group active (another `with job:` block).
  void build(const std::function<void(Job&)>& body);

  TaskGroup& init_group();
  TaskGroup& epoch_group();
  TaskGroup& download_group();
  TaskGroup& exit_group();
  /// @brief Runs body with the group active (`with job.init_group:`); InvalidInput once compiled.
  void init_group(const std::function<void()>& body);
  void epoch_group(const std::function<void()>& body);
  void download_group(const std::function<void()>& body);
  void exit_group(const std::function<void()>& body);

  /// @brief Stops the epoch loop once output is true after an epoch. A blob becomes the output of
  /// a step-less Task of the epoch group on the current node (Caffe2's add_stop_condition).
  TaskOutput add_stop_condition(const BlobRef& blob);
  TaskOutput add_stop_condition(const TaskOutput& output);
  /// The 2018 name of add_stop_condition.
  TaskOutput add_stop_signal(const BlobRef& blob) { return add_stop_condition(blob); }
  const std::vector<TaskOutput>& stop_conditions() const;

  /// @brief The nodes to checkpoint: the explicit list, else the init group's nodes (frozen by compile()).
  std::vector<std::string> nodes_to_checkpoint() const;

  /// @brief Freezes the job (Caffe2's `job.compile(session_class)`): fixes nodes_to_checkpoint
  /// and compiles every group's tasks; afterwards no task can join a group. Running the groups
  /// compiles them per session anyway (decision 2), so this only freezes.
  void compile();
  /// @brief compile(), then compiles every group for session (its plans are ready before train()), and
  /// returns the job as plain data: the four compiled TaskGroups, each stop condition as the node and blob
  /// of the epoch-group task that outputs it, and nodes_to_checkpoint. `moka job run` runs that JobDef
  /// (written with to_json) as JobRunner::train runs the Job (docs/jobs.md §1). InvalidInput when a stop
  /// condition is not the output of a task of the epoch group (it could not be read after an epoch).
  JobDef compile(Session& session);
  bool is_compiled() const;

  bool operator==(const Job& o) const { return state_ == o.state_; }

 private:
  struct State;
  void with_group(TaskGroup& group, const char* which, const std::function<void()>& body);
  std::shared_ptr<State> state_;
};

}  // namespace moka
