// Session: what every session (LocalSession, MpiSession) offers: run runnables, reach node blobs, close
// (docs/sessions.md §8).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "moka/builder/plan.h"
#include "moka/builder/task_group.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/task_group_def.h"
#include "moka/exec/plan_executor.h"

namespace moka {

/// @brief A channel of its own between the processes of a session, for agreeing from a thread other
/// than the one that runs (the job engine's background checkpoint writer): its allgather never
/// mixes with the session's runs. Made collectively (Session::open_channel). Thread-safety: one
/// thread at a time per channel.
class ProcessChannel {
 public:
  virtual ~ProcessChannel() = default;
  virtual int process() const noexcept = 0;
  virtual int processes() const noexcept = 0;
  /// Collective over the channel: every process's `value`, by process.
  virtual std::vector<std::string> allgather(const std::string& value) = 0;
};

/// @brief Runs Tasks, TaskGroups, steps, plans and nets somewhere (Caffe2's `Session`).
///
/// A TaskGroup is compiled once per session (decision 2); anything else runs as a GLOBAL
/// TaskGroup holding it. After close(), run() throws InvalidInput ("Session is closed.").
/// A session may span processes (MpiSession): then every run and every fetch() is collective —
/// each process makes the same calls in the same order — and a node's workspace lives in the one
/// process that hosts() it. This interface is what the job engine runs a JobDef through.
/// Thread-safety: one run at a time per session.
class Session {
 public:
  virtual ~Session() = default;
  virtual void run(TaskGroup& group) = 0;
  virtual void run(const Task& task) = 0;
  virtual void run(const ExecutionStep& step) = 0;
  virtual void run(const Plan& plan) = 0;
  virtual void run(const Net& net) = 0;
  /// A compiled TaskGroup as it is (a JobDef's groups, `moka run GROUP.json`): no TaskOutputs; a
  /// definition equal to one run before reuses what that run prepared.
  virtual void run(const TaskGroupDef& group) = 0;
  /// The per-node definition the session runs for group (compiling it if needed; not collective).
  virtual const TaskGroupDef& compile(TaskGroup& group) = 0;
  /// The value of blob on node (a copy of its tensor): NotFound for a missing node or blob, TypeError
  /// for a blob that is not a filled tensor — the same value or error in every process.
  virtual Tensor fetch(const std::string& node, const std::string& blob) = 0;
  /// Whether this process holds node's workspace (every node, for a session in one process).
  virtual bool hosts(const std::string& node) const = 0;
  /// A node's workspace in this process (created on first use); InvalidInput where another process hosts it.
  virtual Workspace& workspace(const std::string& node) = 0;
  /// How many processes the session's nodes live in.
  virtual int processes() const noexcept { return 1; }
  /// Gives every node of `group` its process now, as a first run of it would (MpiSession's default
  /// rule); not collective, and nothing in a session of one process. A job that resumes places its
  /// groups' nodes before it loads them, so each lands where a run from scratch put it.
  virtual void place(const TaskGroupDef& /*group*/) {}
  /// This process's index among processes() (MpiSession: its rank).
  virtual int process() const noexcept { return 0; }
  /// @brief Collective over the session's processes: every process's `value`, by process (one
  /// process: just `value`). What the job engine agrees with across processes (docs/distributed.md §6.2).
  virtual std::vector<std::string> allgather(const std::string& value) { return {value}; }
  /// @brief A new ProcessChannel between the session's processes (collective: every process opens
  /// its channels in the same order). One process: a channel to itself.
  virtual std::unique_ptr<ProcessChannel> open_channel();
  /// The options of later runs (cancellation, exception timeout): a caller that cancels a run replaces its
  /// token before the next one, as the Python front end does for Ctrl-C.
  virtual RunOptions& run_options() noexcept = 0;
  virtual void close() = 0;
  virtual bool is_closed() const = 0;
};

}  // namespace moka
