// Job: its four TaskGroups, stop conditions, nodes to checkpoint and compile (freeze).
#include "moka/job/job.h"

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/session/session.h"

namespace moka {

struct Job::State {
  TaskGroup init_group{WorkspaceType::Global};
  TaskGroup epoch_group;
  TaskGroup download_group;
  TaskGroup exit_group;
  std::vector<TaskOutput> stop_conditions;
  std::optional<std::vector<std::string>> nodes_to_checkpoint;
  bool compiled = false;
};

Job::Job(JobOptions options) : state_(std::make_shared<State>()) {
  if (options.init_group) state_->init_group = *options.init_group;
  if (options.epoch_group) state_->epoch_group = *options.epoch_group;
  if (options.download_group) state_->download_group = *options.download_group;
  if (options.exit_group) state_->exit_group = *options.exit_group;
  state_->stop_conditions = std::move(options.stop_conditions);
  state_->nodes_to_checkpoint = std::move(options.nodes_to_checkpoint);
}

Job::Job(JobOptions options, const std::function<void(Job&)>& body) : Job(std::move(options)) { build(body); }

void Job::build(const std::function<void(Job&)>& body) {
  with_context(*this, [&] { with_group(state_->epoch_group, "epoch_group", [&] { body(*this); }); });
}

TaskGroup& Job::init_group() { return state_->init_group; }
TaskGroup& Job::epoch_group() { return state_->epoch_group; }
TaskGroup& Job::download_group() { return state_->download_group; }
TaskGroup& Job::exit_group() { return state_->exit_group; }

void Job::with_group(TaskGroup& group, const char* which, const std::function<void()>& body) {
  if (state_->compiled)
    throw InvalidInput(
        fmt::format("Job is compiled: its {} cannot take more tasks (compile() froze every group)", which));
  with_context(group, body);
}

void Job::init_group(const std::function<void()>& body) { with_group(state_->init_group, "init_group", body); }
void Job::epoch_group(const std::function<void()>& body) { with_group(state_->epoch_group, "epoch_group", body); }
void Job::download_group(const std::function<void()>& body) {
  with_group(state_->download_group, "download_group", body);
}
void Job::exit_group(const std::function<void()>& body) { with_group(state_->exit_group, "exit_group", body); }

TaskOutput Job::add_stop_condition(const BlobRef& blob) {
  if (blob.empty()) throw InvalidInput("Job.add_stop_condition: the stop condition blob has no name");
  if (state_->compiled)
    throw InvalidInput(
        fmt::format("Job is compiled: cannot add stop condition \"{}\" to its epoch_group", blob.name()));
  Task t({.group = &state_->epoch_group, .outputs = {TaskOutput(blob)}});
  TaskOutput out = t.outputs().front();
  state_->stop_conditions.push_back(out);
  return out;
}

TaskOutput Job::add_stop_condition(const TaskOutput& output) {
  if (!output.is_scalar())
    throw InvalidInput(fmt::format("Job.add_stop_condition: a stop condition is one blob, got {}", output.repr()));
  state_->stop_conditions.push_back(output);
  return output;
}

const std::vector<TaskOutput>& Job::stop_conditions() const { return state_->stop_conditions; }

std::vector<std::string> Job::nodes_to_checkpoint() const {
  if (state_->nodes_to_checkpoint) return *state_->nodes_to_checkpoint;
  return state_->init_group.used_nodes();
}

void Job::compile() {
  if (state_->compiled) return;
  state_->nodes_to_checkpoint = nodes_to_checkpoint();
  for (TaskGroup* g : {&state_->init_group, &state_->epoch_group, &state_->download_group, &state_->exit_group})
    g->tasks();  // compiles every task and marks the group used: no task can join later
  state_->compiled = true;
}

JobDef Job::compile(Session& session) {
  compile();
  JobDef def;
  def.init_group = session.compile(state_->init_group);
  def.epoch_group = session.compile(state_->epoch_group);
  def.download_group = session.compile(state_->download_group);
  def.exit_group = session.compile(state_->exit_group);
  for (const TaskOutput& condition : state_->stop_conditions) {
    const Task* owner = nullptr;
    for (const Task& task : state_->epoch_group.tasks())
      for (const TaskOutput& output : task.outputs())
        if (output.same_as(condition)) owner = &task;
    if (!owner)
      throw InvalidInput(
          fmt::format("Job: stop condition {} is not an output of a task of the epoch group, so it "
                      "cannot be read after an epoch",
                      condition.repr()));
    def.stop_conditions.push_back({owner->node(), condition.names().front()});
  }
  def.nodes_to_checkpoint = *state_->nodes_to_checkpoint;
  return def;
}

bool Job::is_compiled() const { return state_->compiled; }

}  // namespace moka
