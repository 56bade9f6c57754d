// moka::ExecutionStep, execution_step() and to_execution_step(): Caffe2's step builders with
// their assertions, automatic step names and net dicts.
#include "moka/builder/execution_step.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "unique_names.h"

namespace moka {
namespace detail {

struct StepState {
  ExecutionStepDef def;  // everything but `substep`, which proto() composes from `substeps`
  std::vector<ExecutionStep> substeps;
  std::vector<Net> nets;  // the net dict, in insertion order
  std::unordered_map<std::string, std::size_t> net_index;
  bool used = false;
};

UniqueNames& step_names() {
  // ExecutionStep._step_names_used: only automatic names go through it.
  static UniqueNames names;
  return names;
}

}  // namespace detail

namespace {

[[noreturn]] void throw_both() { throw InvalidInput("Cannot have both network and substeps."); }

// Caffe2's _add_net_to_dict check, without adding.
bool needs_adding(const detail::StepState& s, const Net& net) {
  auto it = s.net_index.find(net.name());
  if (it == s.net_index.end()) return true;
  if (!(s.nets[it->second] == net)) throw InvalidInput(fmt::format("Different nets with same name: {}", net.name()));
  return false;
}

}  // namespace

ExecutionStep::ExecutionStep(std::string name) : state_(std::make_shared<detail::StepState>()) {
  state_->def.name = name.empty() ? detail::step_names().unique("step") : std::move(name);
}

ExecutionStep::ExecutionStep(std::string name, const std::vector<Net>& nets, std::optional<int64_t> num_iter)
    : ExecutionStep(std::move(name)) {
  for (const Net& net : nets) {
    // Unlike add_net, the constructor lists each net once (Caffe2 appends only newly added nets).
    if (needs_adding(*state_, net)) {
      add_to_net_dict(net);
      state_->def.network.push_back(net.name());
    }
  }
  if (num_iter) state_->def.num_iter = *num_iter;
}

const std::string& ExecutionStep::name() const noexcept { return state_->def.name; }
bool ExecutionStep::has_nets() const noexcept { return !state_->def.network.empty(); }
bool ExecutionStep::has_substeps() const noexcept { return !state_->substeps.empty(); }
bool ExecutionStep::is_used() const noexcept { return state_->used; }
void ExecutionStep::mark_used() const noexcept { state_->used = true; }

void ExecutionStep::check_mutable() const {
  if (state_->used) throw InvalidInput("Cannot mutate a step that has already been added to a plan/step.");
}

void ExecutionStep::add_to_net_dict(const Net& net) {
  if (!needs_adding(*state_, net)) return;
  state_->net_index.emplace(net.name(), state_->nets.size());
  state_->nets.push_back(net);
}

ExecutionStep& ExecutionStep::set_iter(int64_t num_iter) {
  check_mutable();
  state_->def.num_iter = num_iter;
  return *this;
}

ExecutionStep& ExecutionStep::set_create_workspace(bool create_workspace) {
  check_mutable();
  state_->def.create_workspace = create_workspace;
  return *this;
}

ExecutionStep& ExecutionStep::set_stats_key(std::string key) {
  check_mutable();
  if (key.empty()) throw InvalidInput(fmt::format("ExecutionStep \"{}\": the stats key must not be empty", name()));
  state_->def.stats_key = std::move(key);
  return *this;
}

ExecutionStep& ExecutionStep::set_num_concurrent_instances(int32_t n) {
  check_mutable();
  state_->def.num_concurrent_instances = n;
  return *this;
}

ExecutionStep& ExecutionStep::set_only_once(bool only_once) {
  check_mutable();
  state_->def.only_once = only_once;
  return *this;
}

ExecutionStep& ExecutionStep::set_should_stop_blob(const BlobRef& blob) {
  if (blob.empty())
    throw InvalidInput(
        fmt::format("step \"{}\": set_should_stop_blob expects BlobReference here, got an empty BlobRef", name()));
  check_mutable();
  state_->def.should_stop_blob = blob.name();
  return *this;
}

ExecutionStep& ExecutionStep::set_report_net(const Net& report_net, int32_t report_interval) {
  check_mutable();
  add_to_net_dict(report_net);
  state_->def.report_net = report_net.name();
  state_->def.report_interval = report_interval;
  return *this;
}

ExecutionStep& ExecutionStep::set_concurrent_substeps(bool concurrent_substeps) {
  check_mutable();
  if (has_nets()) throw_both();
  state_->def.concurrent_substeps = concurrent_substeps;
  return *this;
}

ExecutionStep& ExecutionStep::run_every_millis(int64_t ms) {
  // Deliberately no check_mutable(): Caffe2 lets a used step be made periodic.
  state_->def.run_every_ms = ms;
  return *this;
}

ExecutionStep& ExecutionStep::add_substep(const ExecutionStep& substep) {
  check_mutable();
  if (has_nets()) throw_both();
  if (substep == *this) throw InvalidInput(fmt::format("step \"{}\" cannot be its own substep", name()));
  substep.state_->used = true;
  if (!substep.has_nets() && !substep.has_substeps()) return *this;
  // Check every net before adding any, so a refused substep leaves this step unchanged.
  for (const Net& net : substep.state_->nets) needs_adding(*state_, net);
  for (const Net& net : substep.state_->nets) add_to_net_dict(net);
  state_->substeps.push_back(substep);
  return *this;
}

ExecutionStep& ExecutionStep::add_net(const Net& net) {
  check_mutable();
  if (has_substeps()) throw_both();
  add_to_net_dict(net);
  state_->def.network.push_back(net.name());
  return *this;
}

std::vector<Net> ExecutionStep::nets() const { return state_->nets; }

Net ExecutionStep::get_net(const std::string& net_name) const {
  auto it = state_->net_index.find(net_name);
  if (it == state_->net_index.end())
    throw NotFound(fmt::format("step \"{}\" uses no net named \"{}\"", name(), net_name));
  return state_->nets[it->second];
}

std::vector<ExecutionStep> ExecutionStep::substeps() const { return state_->substeps; }

std::vector<std::shared_ptr<NetAttribute>> ExecutionStep::get_all_attributes(const std::string& key) const {
  std::vector<std::shared_ptr<NetAttribute>> out;
  for (const Net& net : state_->nets) {
    const auto& attrs = net.get_attributes(key);
    out.insert(out.end(), attrs.begin(), attrs.end());
  }
  return out;
}

ExecutionStepDef ExecutionStep::proto() const {
  ExecutionStepDef def = state_->def;
  def.substep.reserve(state_->substeps.size());
  for (const ExecutionStep& s : state_->substeps) def.substep.push_back(s.proto());
  return def;
}

// ---- StepOrNet, execution_step, to_execution_step ----

ExecutionStep StepOrNet::to_step(const std::string& default_name) const {
  if (const auto* step = std::get_if<ExecutionStep>(&v_)) return *step;
  if (const auto* net = std::get_if<Net>(&v_)) return execution_step(default_name, *net);
  return std::get<Converter>(v_)(default_name);
}

ExecutionStep execution_step(const std::string& default_name, const StepsOrNets& steps_or_nets,
                             const StepOptions& options) {
  if (options.should_stop_blob && options.num_iter)
    throw InvalidInput("Cannot set both should_stop_blob and num_iter.");
  std::optional<int64_t> num_iter = options.num_iter;
  // Every step Caffe2's Python builds has num_iter or should_stop_blob.
  if (!options.should_stop_blob && !num_iter) num_iter = 1;

  ExecutionStep step(default_name);
  if (options.should_stop_blob) step.set_should_stop_blob(*options.should_stop_blob);
  if (num_iter) step.set_iter(*num_iter);
  if (options.only_once) step.set_only_once(*options.only_once);
  if (options.concurrent_substeps) step.set_concurrent_substeps(*options.concurrent_substeps);
  if (options.report_net) {
    if (!options.report_interval)
      throw InvalidInput(fmt::format("execution_step \"{}\": report_net needs report_interval.", step.name()));
    step.set_report_net(*options.report_net, *options.report_interval);
  }
  if (options.num_concurrent_instances) step.set_num_concurrent_instances(*options.num_concurrent_instances);
  if (options.create_workspace) step.set_create_workspace(true);
  if (options.run_every_ms != 0) step.run_every_millis(options.run_every_ms);

  if (const auto& one = steps_or_nets.single()) {
    if (const Net* net = one->net()) {
      step.add_net(*net);
    } else {
      step.add_substep(one->to_step());
    }
    return step;
  }
  const auto& list = steps_or_nets.list();
  if (std::all_of(list.begin(), list.end(), [](const StepOrNet& x) { return x.net() != nullptr; })) {
    for (const StepOrNet& x : list) step.add_net(*x.net());
  } else {
    // A net in a mixed list becomes its own substep (named step, step_1, ...).
    for (const StepOrNet& x : list) step.add_substep(x.to_step());
  }
  return step;
}

ExecutionStep to_execution_step(const StepsOrNets& x, const std::string& default_name) {
  if (const auto& one = x.single(); one && !one->net()) return one->to_step(default_name);
  return execution_step(default_name, x);
}

}  // namespace moka
