// moka::Plan: top-level steps and the nets they use, collected in order of first use.
#include "moka/builder/plan.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {
namespace detail {

struct PlanState {
  std::string name;
  std::vector<ExecutionStep> steps;
  std::vector<Net> nets;
  std::unordered_map<std::string, std::size_t> net_index;
};

}  // namespace detail

namespace {

// Caffe2's add_nets_in_order: substeps depth-first, then the step's nets, then its report net.
// `seen` holds the names already in `names` (a search of `names` per net made a plan of n nets
// quadratic).
void add_nets_in_order(const ExecutionStep& step, std::vector<std::string>& names,
                       std::unordered_set<std::string>& seen) {
  auto add = [&](const std::string& n) {
    if (seen.insert(n).second) names.push_back(n);
  };
  for (const ExecutionStep& sub : step.substeps()) add_nets_in_order(sub, names, seen);
  const ExecutionStepDef def = step.proto();
  for (const std::string& n : def.network) add(n);
  if (def.report_net && !def.report_net->empty()) add(*def.report_net);
}

}  // namespace

Plan::Plan(std::string name) : state_(std::make_shared<detail::PlanState>()) { state_->name = std::move(name); }

Plan::Plan(const ExecutionStep& step) : Plan(step.name()) { add_step(step); }

const std::string& Plan::name() const noexcept { return state_->name; }

Plan& Plan::add_step(const ExecutionStep& step) {
  step.mark_used();
  // Caffe2 drops a step that would do nothing rather than failing on it.
  if (!step.has_nets() && !step.has_substeps()) return *this;

  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  add_nets_in_order(step, names, seen);
  std::vector<Net> fresh;
  for (const std::string& n : names) {
    Net net = step.get_net(n);
    auto it = state_->net_index.find(n);
    if (it == state_->net_index.end()) {
      fresh.push_back(net);
    } else if (!(state_->nets[it->second] == net)) {
      throw InvalidInput(fmt::format("Different nets with same name: {}", n));
    }
  }
  for (Net& net : fresh) {
    // The plan's definition holds the net as it is now; a later change would silently not run.
    net.freeze();
    state_->net_index.emplace(net.name(), state_->nets.size());
    state_->nets.push_back(std::move(net));
  }
  state_->steps.push_back(step);
  return *this;
}

std::vector<Net> Plan::nets() const { return state_->nets; }
std::vector<ExecutionStep> Plan::steps() const { return state_->steps; }

std::vector<std::shared_ptr<NetAttribute>> Plan::get_all_attributes(const std::string& key) const {
  std::vector<std::shared_ptr<NetAttribute>> out;
  for (const Net& net : state_->nets) {
    const auto& attrs = net.get_attributes(key);
    out.insert(out.end(), attrs.begin(), attrs.end());
  }
  return out;
}

PlanDef Plan::proto() const {
  PlanDef def;
  def.name = state_->name;
  def.network.reserve(state_->nets.size());
  for (const Net& net : state_->nets) def.network.push_back(net.proto());
  def.execution_step.reserve(state_->steps.size());
  for (const ExecutionStep& s : state_->steps) def.execution_step.push_back(s.proto());
  return def;
}

}  // namespace moka
