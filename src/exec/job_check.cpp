// check_task_group and check_job: every node's plan through check_plan, then the job's own fields
// (stop conditions, checkpointed nodes) against the nodes its groups define.
#include "moka/exec/job_check.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/exec/plan_executor.h"

namespace moka {

namespace {

// At most this many node names in a message listing the job's nodes.
constexpr std::size_t kListedNodes = 8;

std::string quoted(const std::string& s) { return fmt::format("\"{}\"", s); }

// `"a", "b", "c"`, or the first kListedNodes and how many more.
std::string node_list(const std::vector<std::string>& nodes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size() && i < kListedNodes; ++i) out += (i ? ", " : "") + quoted(nodes[i]);
  if (nodes.size() > kListedNodes) out += fmt::format(" and {} more", nodes.size() - kListedNodes);
  return nodes.empty() ? std::string("none") : out;
}

// The job's nodes in the order the groups first name them.
std::vector<std::string> job_nodes(const JobDef& job) {
  std::vector<std::string> nodes;
  std::set<std::string> seen;
  for (const TaskGroupDef* g : {&job.init_group, &job.epoch_group, &job.download_group, &job.exit_group})
    for (const auto& n : g->nodes)
      if (seen.insert(n.node).second) nodes.push_back(n.node);
  return nodes;
}

}  // namespace

void check_task_group(const TaskGroupDef& group) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < group.nodes.size(); ++i) {
    const NodePlanDef& n = group.nodes[i];
    if (n.node.empty()) throw InvalidInput(fmt::format("nodes[{}]: a node needs a name", i));
    if (!seen.insert(n.node).second) throw InvalidInput(fmt::format("nodes[{}]: duplicate node {}", i, quoted(n.node)));
    try {
      check_plan(n.plan);
    } catch (Error& e) {
      e.add_context(fmt::format("node {}", quoted(n.node)));
      throw;
    }
  }
}

void check_job(const JobDef& job) {
  const std::pair<const char*, const TaskGroupDef*> groups[] = {{"init_group", &job.init_group},
                                                                {"epoch_group", &job.epoch_group},
                                                                {"download_group", &job.download_group},
                                                                {"exit_group", &job.exit_group}};
  for (const auto& [name, group] : groups) {
    try {
      check_task_group(*group);
    } catch (Error& e) {
      e.add_context(name);
      throw;
    }
  }
  const std::vector<std::string> nodes = job_nodes(job);
  const std::set<std::string> known(nodes.begin(), nodes.end());
  auto check_node = [&](const std::string& node, const std::string& where) {
    if (node.empty()) throw InvalidInput(fmt::format("{}: the node name is empty", where));
    if (!known.count(node))
      throw InvalidInput(
          fmt::format("{}: node {} is in no group of the job (its nodes: {})", where, quoted(node), node_list(nodes)));
  };
  if (job.stop_conditions.empty())
    throw InvalidInput("stop_conditions: the job has none, so its epoch loop would never end");
  for (std::size_t k = 0; k < job.stop_conditions.size(); ++k) {
    const StopConditionDef& c = job.stop_conditions[k];
    const std::string where = fmt::format("stop_conditions[{}]", k);
    check_node(c.node, where);
    if (c.blob.empty()) throw InvalidInput(fmt::format("{}: the blob name is empty", where));
  }
  std::set<std::string> listed;
  for (std::size_t k = 0; k < job.nodes_to_checkpoint.size(); ++k) {
    const std::string& node = job.nodes_to_checkpoint[k];
    const std::string where = fmt::format("nodes_to_checkpoint[{}]", k);
    check_node(node, where);
    if (!listed.insert(node).second)
      throw InvalidInput(fmt::format("{}: node {} is listed twice", where, quoted(node)));
  }
}

}  // namespace moka
