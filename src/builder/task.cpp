// Task: naming, groups, the `with Task()` body, outputs and compilation (docs/tasks.md §3); SetupNets; final_output.
#include "moka/builder/task.h"

#include <fmt/format.h>

#include <algorithm>

#include "builder/task_state.h"
#include "moka/core/error.h"

namespace moka {

namespace {

// `<node>/<name>`, unique among the group's tasks (decision 3: pending and added ones alike):
// the first of base, base:1, base:2, ... not taken. Names are never given back, so the search for
// a base resumes where the previous one stopped.
std::string next_task_name(const std::string& node, detail::TaskGroupState* group, const std::string& name) {
  const std::string base = node + "/" + name;
  if (!group) return base;
  if (!group->task_names.contains(base)) return base;
  int& i = group->next_suffix[base];
  std::string candidate;
  do candidate = fmt::format("{}:{}", base, ++i);
  while (group->task_names.contains(candidate));
  return candidate;
}

void append_all(std::vector<StepOrNet>& out, std::vector<StepOrNet> more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

}  // namespace

Task::Task(const TaskOptions& options) : state_(std::make_shared<detail::TaskState>()) {
  // The node: the given one (registered with the active Cluster), else the active Node.
  state_->node = options.node ? Node(*options.node).name() : Node::current_name();
  TaskGroup* group = options.group ? options.group : TaskGroup::current(/*required=*/false);
  std::shared_ptr<detail::TaskGroupState> gs = group ? group->state_ : nullptr;
  state_->name = next_task_name(state_->node, gs.get(), options.name.empty() ? "task" : options.name);
  state_->group = gs;
  state_->workspace_type = options.workspace_type;
  state_->num_instances = options.num_instances;
  if (gs) {
    gs->task_names.insert(state_->name);
    gs->tasks_to_add.push_back(*this);
  }
  add_outputs(options.outputs);
}

Task::Task(const TaskOptions& options, const StepsOrNets& step)
    : Task([&] {
        TaskOptions o = options;
        // Caffe2: an unnamed Task takes the name of the step it is given.
        if (o.name.empty() && step.single() && step.single()->step()) o.name = step.single()->step()->name();
        return o;
      }()) {
  set_step(step);
}

Task::Task(const TaskOptions& options, const std::function<void()>& body) : Task(options) { build(body); }

void Task::build(const std::function<void()>& body) {
  if (state_->used) throw InvalidInput(fmt::format("Task {} has already been used.", name()));
  if (state_->step) throw InvalidInput("This Task already has an execution step.");
  // Caffe2 takes the task out of the group while its body runs, so tasks created inside keep
  // their creation order, and puts it back at the end.
  auto gs = state_->group.lock();
  if (gs) {
    auto& pending = gs->tasks_to_add;
    if (!pending.empty() && pending.back() == *this)
      pending.pop_back();  // the usual case: the constructor has just appended it
    else
      pending.erase(std::remove(pending.begin(), pending.end(), *this), pending.end());
  }
  NetBuilder builder(NetBuilderOptions{.fullname = state_->name});
  {
    ContextGuard<Task> guard(*this);
    builder.build(body);
  }
  set_step(to_execution_step(builder));
  if (gs) gs->tasks_to_add.push_back(*this);
}

const std::string& Task::name() const { return state_->name; }
const std::string& Task::node() const { return state_->node; }
int32_t Task::num_instances() const { return state_->num_instances; }
std::optional<WorkspaceType> Task::workspace_type() const { return state_->workspace_type; }
void Task::set_workspace_type(WorkspaceType t) {
  if (state_->used && state_->workspace_type && *state_->workspace_type != t)
    throw InvalidInput("Cannot modify task since it is already been used.");
  state_->workspace_type = t;
}
bool Task::has_step() const { return state_->step.has_value(); }
bool Task::is_used() const { return state_->used; }
const std::vector<TaskOutput>& Task::outputs() const { return state_->outputs; }

void Task::set_step(const StepsOrNets& step) {
  if (state_->step) throw InvalidInput("This Task already has an execution step.");
  if (step.empty()) return;
  state_->step = to_execution_step(step);
}

TaskOutput Task::add_output(const TaskOutput& output) {
  if (state_->used) throw InvalidInput("Cannot modify task since it is already been used.");
  state_->outputs.push_back(output);
  return output;
}

void Task::add_outputs(const std::vector<TaskOutput>& outputs) {
  for (const auto& o : outputs) add_output(o);
}

ExecutionStep Task::get_step() {
  if (state_->step_with_setup) return *state_->step_with_setup;
  const std::string& name = state_->name;
  if (!state_->step) return execution_step(name, {});  // empty: dropped by its parent; no output net
  ExecutionStep step = *state_->step;

  std::vector<ExecutionStep> report_steps;
  for (const auto& attr : step.get_all_attributes(kReportStep)) {
    auto* rs = dynamic_cast<ReportStep*>(attr.get());
    if (!rs || rs->used()) continue;
    rs->set_used();
    if (!rs->step().proto().run_every_ms) rs->step().run_every_millis(1000);
    report_steps.push_back(rs->step());
  }
  std::vector<ExecutionStep> sources{step};
  sources.insert(sources.end(), report_steps.begin(), report_steps.end());
  auto [task_init, task_exit] = get_setup_nets(kTaskSetup, sources, state_.get());
  auto [inst_init, inst_exit] = get_setup_nets(kTaskInstanceSetup, sources, state_.get());

  if (state_->outputs.empty()) {
    // Every task has an output, so its group knows when it is done (docs/tasks.md §3.3).
    Net output_net(name + ":output");
    BlobRef out = output_net.op("ConstantFill", {}, 1, {{"dtype", DType::Int32}, {"value", 0}}).single();
    add_output(TaskOutput(out));
    task_exit.push_back(output_net);
  }
  ExecutionStep body = step;
  if (!report_steps.empty()) {
    std::vector<StepOrNet> children(report_steps.begin(), report_steps.end());
    children.push_back(step);
    body = execution_step(name + ":body", children);
  }
  ExecutionStep s = add_setup_steps(body, inst_init, inst_exit, name + ":instance");
  if (state_->num_instances > 1) {
    s.set_create_workspace(true);
    s = execution_step(name + ":parallel", s, {.num_concurrent_instances = state_->num_instances});
  }
  state_->step_with_setup = add_setup_steps(s, task_init, task_exit, name);
  return *state_->step_with_setup;
}

void Task::notify_used() {
  if (state_->used) return;
  get_step();
  state_->used = true;
}

ExecutionStep Task::group_step() {
  if (!state_->group_step) {
    // The type is final by now (TaskGroup::add set it, and a used task keeps it), so the flag set
    // here holds for every group the task joins.
    ExecutionStep s = get_step();
    s.set_create_workspace(state_->workspace_type == WorkspaceType::Private);
    // The task's runs and busy time in the stat registry under "<node>/task/<name>" (decision 69); its name
    // starts with "<node>/" (next_task_name).
    s.set_stats_key(state_->node + "/task" + state_->name.substr(state_->node.size()));
    state_->group_step = s;
  }
  return *state_->group_step;
}

TaskGroup Task::tasks_by_node() {
  if (!state_->alone_by_node) {
    // The wrapping group lives only here: it holds this task, so keeping it would keep the task
    // alive through its own memo. The grouped form refers to the task's step and outputs only.
    TaskGroup alone(WorkspaceType::Global);
    alone.add(*this);
    state_->alone_by_node = alone.tasks_by_node().state_;
  }
  TaskGroup grouped;
  grouped.state_ = state_->alone_by_node;
  return grouped;
}

std::string Task::repr() const {
  std::string outs;
  for (const auto& o : state_->outputs) outs += (outs.empty() ? "" : ", ") + o.repr();
  return fmt::format("Task(name={}, node={}, outputs=[{}])", state_->name, state_->node, outs);
}

std::vector<StepOrNet> SetupNets::setup(Net&) {
  return init_nets_ ? std::vector<StepOrNet>(init_nets_->begin(), init_nets_->end()) : std::vector<StepOrNet>{};
}
std::vector<StepOrNet> SetupNets::exit(Net&) {
  return exit_nets_ ? std::vector<StepOrNet>(exit_nets_->begin(), exit_nets_->end()) : std::vector<StepOrNet>{};
}
std::string SetupNets::repr() const {
  auto names = [](const std::optional<std::vector<Net>>& nets) -> std::string {
    if (!nets) return "None";
    std::vector<std::string> n;
    for (const auto& net : *nets) n.push_back(net.name());
    return repr_list(n);
  };
  return fmt::format("SetupNets(init_nets={}, exit_nets={})", names(init_nets_), names(exit_nets_));
}

TaskOutput final_output(const TaskOutput& output) {
  if (Task* t = Task::current(/*required=*/false)) return t->add_output(output);
  return Task().add_output(output);
}

std::pair<std::vector<StepOrNet>, std::vector<StepOrNet>> get_setup_nets(const std::string& key,
                                                                         const std::vector<ExecutionStep>& steps,
                                                                         const void* target, const std::string* node) {
  Net init_net(key + "/init");
  Net exit_net(key + "/exit");
  std::vector<StepOrNet> inits, exits;
  std::vector<const SetupAttribute*> seen;  // this node's, each set up once
  for (const auto& s : steps) {
    for (const auto& attr : s.get_all_attributes(key)) {
      auto* setup = dynamic_cast<SetupAttribute*>(attr.get());
      if (!setup) continue;
      if (setup->setup_target() && setup->setup_target() != target) continue;
      if (std::find(seen.begin(), seen.end(), setup) != seen.end()) continue;
      seen.push_back(setup);
      if (setup->setup_used()) {
        if (node) append_all(inits, setup->setup_on_node(init_net, *node, false));
        continue;
      }
      append_all(inits, node ? setup->setup_on_node(init_net, *node, true) : setup->setup(init_net));
      append_all(exits, setup->exit(exit_net));
      setup->set_setup_used();
    }
  }
  if (!init_net.proto().op.empty()) inits.insert(inits.begin(), init_net);
  if (!exit_net.proto().op.empty()) exits.insert(exits.begin(), exit_net);
  return {std::move(inits), std::move(exits)};
}

ExecutionStep add_setup_steps(const ExecutionStep& step, const std::vector<StepOrNet>& inits,
                              const std::vector<StepOrNet>& exits, const std::string& name) {
  if (inits.empty() && exits.empty()) return step;
  std::vector<StepOrNet> children;
  if (!inits.empty()) children.push_back(execution_step(name + ":init", inits));
  children.push_back(step);
  if (!exits.empty()) children.push_back(execution_step(name + ":exit", exits));
  return execution_step(name, children);
}

}  // namespace moka
