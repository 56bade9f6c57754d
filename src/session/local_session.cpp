// LocalSession: runs compiled runnables (session/compiled_runnables.h) in this process's node workspaces and
// wires their TaskOutputs to them.
#include "moka/session/local_session.h"

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/session/run_task_group.h"
#include "session/compiled_runnables.h"

namespace moka {

LocalSession::LocalSession(LocalSessionOptions options)
    : options_(std::move(options)),
      workspaces_(std::make_shared<NodeWorkspaces>(options_.shared_workspace)),
      compiled_(std::make_unique<detail::CompiledRunnables>()) {}

LocalSession::LocalSession(std::shared_ptr<NodeWorkspaces> workspaces, LocalSessionOptions options)
    : options_(std::move(options)),
      workspaces_(std::move(workspaces)),
      compiled_(std::make_unique<detail::CompiledRunnables>()) {
  if (!workspaces_) throw InvalidInput("LocalSession: no node workspaces given");
  options_.shared_workspace = workspaces_->shared();
}

LocalSession::~LocalSession() = default;

std::size_t LocalSession::num_compiled() const noexcept { return compiled_->size(); }

void LocalSession::check_open() const {
  if (closed_) throw InvalidInput("Session is closed.");
}

const TaskGroupDef& LocalSession::compile(TaskGroup& group) { return compiled_->get(group).def; }

void LocalSession::run(TaskGroup& group) {
  check_open();
  run_compiled(compiled_->get(group));
}

void LocalSession::run(const Task& task) {
  check_open();
  run_compiled(compiled_->get(task));
}

void LocalSession::run(const ExecutionStep& step) {
  check_open();
  run_compiled(compiled_->get(step));
}

void LocalSession::run(const Plan& plan) {
  check_open();
  run_compiled(compiled_->get(plan, "LocalSession"));
}

void LocalSession::run(const Net& net) {
  check_open();
  run_compiled(compiled_->get(net));
}

void LocalSession::run(const TaskGroupDef& group) {
  check_open();
  run_compiled(compiled_->get(group));
}

Tensor LocalSession::fetch(const std::string& node, const std::string& blob) {
  return workspaces_->tensor_blob(node, blob).get<Tensor>();
}

void LocalSession::run_compiled(detail::CompiledRunnable& c) {
  // Outputs read this session's node workspaces: set them on the first run, and again when another
  // session (or another runnable sharing a TaskOutput) has set them since — they follow the latest run.
  for (auto& [node, outs] : c.outputs) {
    if (outs.set_by(c.serial)) continue;
    outs.set_values(
        outs.names(),
        [nodes = workspaces_, node = node](const std::string& blob) {
          return nodes->tensor_blob(node, blob).get<Tensor>();
        },
        c.serial);
  }
  if (!options_.reuse_nets) {
    run_task_group(c.def, *workspaces_, options_.run);
    return;
  }
  if (!c.prepared) c.prepared = std::make_unique<PreparedTaskGroup>(c.def, *workspaces_);
  c.prepared->run(options_.run);
}

}  // namespace moka
