// TaskGroup: lazy task registration, workspace types, report steps, per-node compilation (docs/tasks.md §5.2), to_task.
#include "moka/builder/task_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "builder/task_state.h"
#include "moka/core/error.h"

namespace moka {

TaskGroup::TaskGroup(std::optional<WorkspaceType> workspace_type) : state_(std::make_shared<detail::TaskGroupState>()) {
  state_->workspace_type = workspace_type;
}

TaskGroup::TaskGroup(std::optional<WorkspaceType> workspace_type, const std::function<void()>& body)
    : TaskGroup(workspace_type) {
  with_context(*this, body);
}

void TaskGroup::add(Task task) {
  if (state_->already_used) throw InvalidInput("Cannot add Task to an already used TaskGroup.");
  const auto task_type = task.workspace_type();
  if (state_->workspace_type && task_type && *state_->workspace_type != *task_type)
    throw InvalidInput(fmt::format("Task {} has workspace type {}, but its TaskGroup has {}", task.name(),
                                   workspace_type_name(*task_type), workspace_type_name(*state_->workspace_type)));
  if (!task_type) task.set_workspace_type(state_->workspace_type.value_or(WorkspaceType::Private));
  if (!state_->workspace_type) state_->workspace_type = task.workspace_type();
  task.notify_used();
  state_->task_names.insert(task.name());
  state_->tasks.push_back(std::move(task));
}

const std::vector<Task>& TaskGroup::tasks() {
  std::vector<Task> pending = std::move(state_->tasks_to_add);
  state_->tasks_to_add.clear();
  for (auto& t : pending) add(t);
  state_->already_used = true;
  return state_->tasks;
}

std::size_t TaskGroup::num_registered_tasks() const { return state_->tasks.size() + state_->tasks_to_add.size(); }

std::vector<std::string> TaskGroup::used_nodes() const {
  std::vector<std::string> nodes;
  for (const auto* list : {&state_->tasks, &state_->tasks_to_add})
    for (const auto& t : *list)
      if (std::find(nodes.begin(), nodes.end(), t.node()) == nodes.end()) nodes.push_back(t.node());
  return nodes;
}

void TaskGroup::report_step(const StepsOrNets& step, const std::optional<std::string>& node, int64_t interval_ms) {
  ExecutionStep s = to_execution_step(step);
  s.run_every_millis(interval_ms);
  state_->report_steps.emplace_back(node ? Node(*node).name() : Node::current_name(), s);
}

void TaskGroup::report_net(const std::optional<Net>& net, const std::optional<std::string>& node,
                           int32_t report_interval) {
  const std::string n = node ? Node(*node).name() : Node::current_name();
  for (const auto& [existing, _] : state_->report_nets)
    if (existing == n) throw InvalidInput(fmt::format("Only one report net allowed per node ({})", n));
  state_->report_nets.emplace_back(n, net ? *net : Net(n + "/reporter"));
  state_->report_net_intervals.emplace_back(report_interval, state_->report_nets.back().second);
}

TaskGroup TaskGroup::tasks_by_node(const std::function<std::string(const std::string&)>& node_remap) {
  const std::vector<Task> all = tasks();
  std::map<std::string, std::string> node_map;
  for (const auto& t : all) node_map[t.node()] = node_remap ? node_remap(t.node()) : t.node();
  if (state_->by_node) {
    if (*state_->by_node_map != node_map) throw InvalidInput("Cannot call tasks_by_node multiple times.");
    TaskGroup memo;
    memo.state_ = state_->by_node;
    return memo;
  }
  auto remap = [&](const std::string& n) {
    auto it = node_map.find(n);
    return it == node_map.end() ? (node_remap ? node_remap(n) : n) : it->second;
  };
  // Deprecated report nets become report steps.
  for (std::size_t i = 0; i < state_->report_nets.size(); ++i)
    report_step(state_->report_nets[i].second, state_->report_nets[i].first,
                int64_t{state_->report_net_intervals[i].first} * 1000);
  state_->report_nets.clear();
  state_->report_net_intervals.clear();

  std::vector<std::pair<std::string, std::vector<Task>>> by_node;  // insertion order
  std::unordered_map<std::string, std::size_t> node_index;         // node -> its entry in by_node
  for (const auto& t : all) {
    const std::string n = remap(t.node());
    auto [it, fresh] = node_index.try_emplace(n, by_node.size());
    if (fresh) by_node.emplace_back(n, std::vector<Task>{});
    by_node[it->second].second.push_back(t);
  }
  TaskGroup grouped;
  for (auto& [node, tasks] : by_node) {
    std::vector<ExecutionStep> steps;
    for (const auto& [rnode, rs] : state_->report_steps)
      if (remap(rnode) == node) steps.push_back(rs);
    std::vector<ExecutionStep> sources;
    for (auto& t : tasks) sources.push_back(t.get_step());
    sources.insert(sources.end(), steps.begin(), steps.end());
    auto [node_inits, node_exits] = get_setup_nets(kLocalSetup, sources, state_.get(), &node);
    std::vector<TaskOutput> outputs;
    WorkspaceType gtype = WorkspaceType::Private;
    for (auto& t : tasks) {
      steps.push_back(t.group_step());
      outputs.insert(outputs.end(), t.outputs().begin(), t.outputs().end());
      if (t.workspace_type() == WorkspaceType::Global) gtype = WorkspaceType::Global;
    }
    if (steps.empty()) steps.push_back(execution_step("empty", {}));
    ExecutionStep step = steps.size() == 1
                             ? steps[0]
                             : execution_step(node + ":body", std::vector<StepOrNet>(steps.begin(), steps.end()),
                                              {.concurrent_substeps = true});
    step = add_setup_steps(step, node_inits, node_exits, node);
    Task({.name = "grouped_by_node", .node = node, .workspace_type = gtype, .group = &grouped, .outputs = outputs},
         step);
  }
  state_->by_node_map = node_map;
  state_->by_node = grouped.state_;
  return grouped;
}

Task TaskGroup::to_task(const std::optional<std::string>& node) {
  const std::string n = node ? Node(*node).name() : Node::current_name();
  TaskGroup grouped = tasks_by_node([n](const std::string&) { return n; });
  const auto& ts = grouped.tasks();
  return ts.empty() ? Task() : ts.front();
}

std::optional<WorkspaceType> TaskGroup::workspace_type() const { return state_->workspace_type; }
void TaskGroup::add_remote_net(const Net& net) { state_->remote_nets.push_back(net); }
const std::vector<Net>& TaskGroup::remote_nets() const { return state_->remote_nets; }

std::string TaskGroup::repr() const {
  std::string tasks;
  for (const auto* list : {&state_->tasks, &state_->tasks_to_add})
    for (const auto& t : *list) tasks += (tasks.empty() ? "" : ", ") + t.repr();
  std::vector<std::string> nets;
  for (const auto& n : state_->remote_nets) nets.push_back(n.name());
  return fmt::format("TaskGroup(tasks=[{}], workspace_type={}, remote_nets={})", tasks,
                     state_->workspace_type ? workspace_type_name(*state_->workspace_type) : "None", repr_list(nets));
}

namespace ops {

ExecutionStep local_reporter(int64_t interval_ms, const std::function<void()>& body, const ReporterOptions& options) {
  TaskGroup* group = TaskGroup::current(/*required=*/false);
  if (!group) throw InvalidInput("ops::local_reporter needs an active TaskGroup");
  NetBuilder reporter({.name = options.name});
  reporter.build(body);
  ExecutionStep step = to_execution_step(reporter);
  group->report_step(step, std::nullopt, interval_ms);
  return step;
}

}  // namespace ops
}  // namespace moka
