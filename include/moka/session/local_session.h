// LocalSession: runs Tasks, TaskGroups, steps, plans and nets in this process, a workspace per node (decision 1).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moka/builder/plan.h"
#include "moka/builder/task_group.h"
#include "moka/defs/task_group_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/session/node_workspaces.h"
#include "moka/session/run_task_group.h"
#include "moka/session/session.h"

namespace moka {

namespace detail {
class CompiledRunnables;
struct CompiledRunnable;
}  // namespace detail

/// Options of a LocalSession.
struct LocalSessionOptions {
  /// Every node in one workspace, as Caffe2's LocalSession did (for code ported from Caffe2).
  bool shared_workspace = false;
  /// Options of every run (cancellation, exception timeout).
  RunOptions run{};
  /// Keep each compiled runnable's instantiated nets between runs (PreparedPlan; decision 11).
  /// false: every run instantiates afresh, as Caffe2 did.
  bool reuse_nets = true;
};

/// @brief Runs runnables in this process (Caffe2's LocalSession, with moka's decision 1).
///
/// A TaskGroup is compiled once per session (decision 2) into one plan per node
/// (tasks_by_node); the nodes run concurrently, each in its own workspace, which lives as long
/// as the session — blobs of GLOBAL tasks persist between runs, PRIVATE tasks run in child
/// workspaces. A Task, ExecutionStep, Plan or Net is run as a GLOBAL TaskGroup holding it.
/// Runs after the first reuse its instantiated nets while the node workspaces keep the same
/// blobs and nets (PreparedTaskGroup; options.reuse_nets). TaskOutputs are set when a run starts
/// (the first one, and any after another session set them) and fetched from the node that
/// produced them; they keep the node workspaces alive, so they may be fetched after the session is
/// gone. The same Task or TaskGroup may run in any number of sessions: each compiles it from the
/// runnable's memoized grouped form (Task::tasks_by_node, TaskGroup::tasks_by_node).
/// @code
///   moka::LocalSession session;
///   session.run(task);
///   int64_t v = out.fetch<int64_t>();
/// @endcode
/// Thread-safety: one run at a time per session.
class LocalSession final : public Session {
 public:
  explicit LocalSession(LocalSessionOptions options = {});
  /// A session over existing node workspaces (options.shared_workspace is theirs: ignored).
  LocalSession(std::shared_ptr<NodeWorkspaces> workspaces, LocalSessionOptions options);
  ~LocalSession() override;

  void run(TaskGroup& group) override;
  void run(const Task& task) override;
  void run(const ExecutionStep& step) override;
  void run(const Plan& plan) override;
  void run(const Net& net) override;
  void run(const TaskGroupDef& group) override;

  /// The per-node definition this session runs for group (compiling it if needed); it
  /// serialises with to_json() and runs with `moka run`. The reference is valid while group is
  /// (the session drops what it compiled for a runnable once nobody holds it).
  const TaskGroupDef& compile(TaskGroup& group) override;

  /// A node's workspace ("local" by default), for inspection.
  Workspace& workspace(const std::string& node = "local") override { return workspaces_->node(node); }
  NodeWorkspaces& workspaces() { return *workspaces_; }
  /// The value of blob on node (a copy of its tensor).
  Tensor fetch(const std::string& node, const std::string& blob) override;
  bool hosts(const std::string& /*node*/) const override { return true; }

  RunOptions& run_options() noexcept override { return options_.run; }
  /// How many compiled runnables the session holds (for tests and benchmarks).
  std::size_t num_compiled() const noexcept;

  void close() override { closed_ = true; }
  bool is_closed() const override { return closed_; }

 private:
  void run_compiled(detail::CompiledRunnable& c);
  void check_open() const;

  LocalSessionOptions options_;
  // Shared with the fetch functions of TaskOutputs, which may outlive the session (as in Python,
  // where the output's closure keeps the session alive).
  std::shared_ptr<NodeWorkspaces> workspaces_;
  std::unique_ptr<detail::CompiledRunnables> compiled_;  // what this session compiled, per runnable
  bool closed_ = false;
};

}  // namespace moka
