// LocalSession: compile runnables to per-node plans (cached per session), run them, wire TaskOutputs to node
// workspaces.
#include "moka/session/local_session.h"

#include <fmt/format.h>

#include <atomic>

#include "moka/core/error.h"
#include "moka/session/run_task_group.h"

namespace moka {

namespace {

// The definitions of a grouped TaskGroup (one task per node). Grouping is memoized on the
// runnable, and making a Plan of a compiled step changes nothing that a second Plan depends on, so
// every session compiles the same definitions.
TaskGroupDef compile_group(TaskGroup grouped, std::vector<std::pair<std::string, TaskOutputList>>& outputs) {
  TaskGroupDef def;
  for (Task task : grouped.tasks()) {
    NodePlanDef node;
    node.node = task.node();
    Plan plan("task_group_plan");
    plan.add_step(task.get_step());
    node.plan = plan.proto();
    TaskOutputList outs = task.output_list();
    node.outputs = outs.names();
    def.nodes.push_back(std::move(node));
    outputs.emplace_back(task.node(), std::move(outs));
  }
  return def;
}

}  // namespace

LocalSession::LocalSession(LocalSessionOptions options)
    : options_(std::move(options)), workspaces_(std::make_shared<NodeWorkspaces>(options_.shared_workspace)) {}

void LocalSession::check_open() const {
  if (closed_) throw InvalidInput("Session is closed.");
}

LocalSession::Compiled& LocalSession::compiled_for(const Key& key, const std::function<TaskGroup()>& make_grouped) {
  // Runnables nobody holds any more cannot be run again: drop them (a job makes a new checkpoint
  // TaskGroup every epoch; kept, they grew the session and its workspaces without bound).
  // Comparing owners (control blocks), not addresses: an expired entry keeps its control block,
  // so a new runnable never matches an old one.
  std::erase_if(cache_, [](auto& entry) {
    if (!entry.first.expired()) return false;
    if (entry.second->prepared) entry.second->prepared->unregister_nets();
    return true;
  });
  for (auto& [k, c] : cache_)
    if (!k.owner_before(key) && !key.owner_before(k)) return *c;
  static std::atomic<uint64_t> next_serial{1};
  auto c = std::make_unique<Compiled>();
  c->def = compile_group(make_grouped(), c->outputs);
  c->serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  cache_.emplace_back(key, std::move(c));
  return *cache_.back().second;
}

const TaskGroupDef& LocalSession::compile(TaskGroup& group) {
  return compiled_for(group.identity(), [&] { return group.tasks_by_node(); }).def;
}

void LocalSession::run(TaskGroup& group) {
  check_open();
  run_compiled(compiled_for(group.identity(), [&] { return group.tasks_by_node(); }));
}

void LocalSession::run(const Task& task) {
  check_open();
  // Caffe2 wrapped the task in a new GLOBAL TaskGroup per compilation; the task memoizes that
  // grouped form, so a second session compiles what the first did (its setup blocks included).
  run_compiled(compiled_for(task.identity(), [&] { return Task(task).tasks_by_node(); }));
}

// Steps, plans and nets run as a new Task per session: see "Runnables in several sessions" in
// docs/sessions.md for what that means for setup blocks in their nets.
void LocalSession::run(const ExecutionStep& step) {
  check_open();
  run_compiled(compiled_for(step.identity(),
                            [&] { return TaskGroup(WorkspaceType::Global, [&] { Task({}, step); }).tasks_by_node(); }));
}

void LocalSession::run(const Plan& plan) {
  check_open();
  run_compiled(compiled_for(plan.identity(), [&] {
    const std::vector<ExecutionStep> steps = plan.steps();
    if (steps.empty()) throw InvalidInput("LocalSession: the plan has no steps");
    return TaskGroup(WorkspaceType::Global,
                     [&] {
                       if (steps.size() == 1) {
                         Task({}, steps.front());
                       } else {
                         Task({}, steps);
                       }
                     })
        .tasks_by_node();
  }));
}

void LocalSession::run(const Net& net) {
  check_open();
  run_compiled(compiled_for(net.identity(), [&] {
    return TaskGroup(WorkspaceType::Global, [&] { Task({}, execution_step("runnable", net)); }).tasks_by_node();
  }));
}

namespace {
Tensor fetch_from(const NodeWorkspaces& nodes, const std::string& node, const std::string& blob) {
  const Workspace* ws = nodes.find(node);
  if (!ws) throw NotFound(fmt::format("node \"{}\" has no workspace in this session", node));
  const Blob* b = ws->get_blob(blob);
  if (!b) throw NotFound(fmt::format("blob \"{}\" does not exist on node \"{}\"", blob, node));
  const Tensor* t = b->tensor_or_null();
  if (!t || !t->defined())
    throw TypeError(fmt::format("blob \"{}\" on node \"{}\" holds {}, not a filled tensor", blob, node,
                                t ? "an empty tensor" : std::string(b->type_name())));
  return *t;
}
}  // namespace

Tensor LocalSession::fetch(const std::string& node, const std::string& blob) const {
  return fetch_from(*workspaces_, node, blob);
}

void LocalSession::run_compiled(Compiled& c) {
  // Outputs read this session's node workspaces: set them on the first run, and again when another
  // session (or another runnable sharing a TaskOutput) has set them since — they follow the latest run.
  for (auto& [node, outs] : c.outputs) {
    if (outs.set_by(c.serial)) continue;
    outs.set_values(
        outs.names(),
        [nodes = workspaces_, node = node](const std::string& blob) { return fetch_from(*nodes, node, blob); },
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
