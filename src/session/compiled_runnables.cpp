// CompiledRunnables: compile each runnable once per session into per-node plans (src/session/compiled_runnables.h).
#include "session/compiled_runnables.h"

#include <fmt/format.h>

#include <atomic>

#include "moka/core/error.h"

namespace moka::detail {

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

CompiledRunnable& CompiledRunnables::compiled_for(const Key& key, const std::function<TaskGroup()>& make_grouped) {
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
  auto c = std::make_unique<CompiledRunnable>();
  c->def = compile_group(make_grouped(), c->outputs);
  c->serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  cache_.emplace_back(key, std::move(c));
  return *cache_.back().second;
}

CompiledRunnable& CompiledRunnables::get(TaskGroup& group) {
  return compiled_for(group.identity(), [&] { return group.tasks_by_node(); });
}

CompiledRunnable& CompiledRunnables::get(const Task& task) {
  // Caffe2 wrapped the task in a new GLOBAL TaskGroup per compilation; the task memoizes that
  // grouped form, so a second session compiles what the first did (its setup blocks included).
  return compiled_for(task.identity(), [&] { return Task(task).tasks_by_node(); });
}

// Steps, plans and nets run as a new Task per session: see "Runnables in several sessions" in
// docs/sessions.md for what that means for setup blocks in their nets.
CompiledRunnable& CompiledRunnables::get(const ExecutionStep& step) {
  return compiled_for(step.identity(),
                      [&] { return TaskGroup(WorkspaceType::Global, [&] { Task({}, step); }).tasks_by_node(); });
}

CompiledRunnable& CompiledRunnables::get(const Plan& plan, std::string_view session_name) {
  return compiled_for(plan.identity(), [&] {
    const std::vector<ExecutionStep> steps = plan.steps();
    if (steps.empty()) throw InvalidInput(fmt::format("{}: the plan has no steps", session_name));
    return TaskGroup(WorkspaceType::Global,
                     [&] {
                       if (steps.size() == 1) {
                         Task({}, steps.front());
                       } else {
                         Task({}, steps);
                       }
                     })
        .tasks_by_node();
  });
}

CompiledRunnable& CompiledRunnables::get(const Net& net) {
  return compiled_for(net.identity(), [&] {
    return TaskGroup(WorkspaceType::Global, [&] { Task({}, execution_step("runnable", net)); }).tasks_by_node();
  });
}

CompiledRunnable& CompiledRunnables::get(const TaskGroupDef& def) {
  for (auto& c : defs_)
    if (c->def == def) return *c;
  defs_.push_back(std::make_unique<CompiledRunnable>());
  defs_.back()->def = def;
  return *defs_.back();
}

}  // namespace moka::detail
