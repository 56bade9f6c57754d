// CollectiveService: how the nodes of a session meet in common worlds; and the binding of node workspaces to
// their node and service that the collective operators look up (docs/collectives.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <shared_mutex>
#include <unordered_map>

#include "moka/core/error.h"
#include "moka/operators/collectives.h"

namespace moka {

void CollectiveService::begin_run(std::vector<std::string> nodes) {
  queues().begin_run(nodes);
  std::lock_guard lk(mu_);
  group_nodes_ = std::move(nodes);
  joins_.clear();
  pending_.clear();
  finished_nodes_.clear();
  run_worlds_.clear();
}

void CollectiveService::node_finished(const std::string& node) {
  queues().node_finished(node);
  std::vector<std::shared_ptr<CommonWorld>> worlds;
  {
    std::lock_guard lk(mu_);
    finished_nodes_.push_back(node);
    for (const auto& w : run_worlds_)
      if (auto world = w.lock()) worlds.push_back(std::move(world));
  }
  for (const auto& world : worlds) world->member_finished(world->index_of(node));
}

std::vector<std::string> CollectiveService::group_nodes() const {
  std::lock_guard lk(mu_);
  return group_nodes_;
}

CommonWorldHandle CollectiveService::join(const std::string& node, const std::string& name,
                                          const std::vector<std::string>& nodes) {
  const auto member = std::find(nodes.begin(), nodes.end(), node);
  if (member == nodes.end())
    throw InvalidInput(fmt::format("CreateCommonWorld \"{}\": node \"{}\" is not one of its nodes [{}]", name, node,
                                   fmt::join(nodes, ", ")));
  std::vector<std::string> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw InvalidInput(
        fmt::format("CreateCommonWorld \"{}\": nodes [{}] name a node twice", name, fmt::join(nodes, ", ")));
  std::lock_guard lk(mu_);
  const int64_t k = joins_[{name, nodes}][node]++;
  auto key = std::make_tuple(name, nodes, k);
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    std::vector<int> process_of(nodes.size(), 0);
    auto transport = transport_for(name, nodes, process_of);
    Pending p;
    p.world = std::make_shared<CommonWorld>(name, nodes, std::move(process_of), std::move(transport));
    p.remaining = static_cast<int>(p.world->local_members().size());
    for (const std::string& done : finished_nodes_) p.world->member_finished(p.world->index_of(done));
    run_worlds_.push_back(p.world);
    it = pending_.emplace(key, std::move(p)).first;
  }
  CommonWorldHandle handle{it->second.world, static_cast<int>(member - nodes.begin())};
  const auto& local = handle.world->local_members();
  if (std::find(local.begin(), local.end(), handle.member) == local.end())
    throw InvalidInput(fmt::format("CreateCommonWorld \"{}\": node \"{}\" does not live in this process", name, node));
  if (--it->second.remaining == 0) pending_.erase(it);  // every node of this process has it now
  return handle;
}

std::shared_ptr<CollectiveTransport> CollectiveService::transport_for(const std::string&,
                                                                      const std::vector<std::string>&,
                                                                      std::vector<int>& process_of) {
  std::fill(process_of.begin(), process_of.end(), 0);
  return nullptr;
}

namespace {
struct Bindings {
  std::shared_mutex mu;
  std::unordered_map<const Workspace*, CollectiveBinding> by_root;
};
Bindings& bindings() {
  static Bindings* b = new Bindings;  // never destroyed: workspaces may unbind during static destruction
  return *b;
}
}  // namespace

namespace detail {
void bind_collectives(const Workspace* root, std::string node, std::shared_ptr<CollectiveService> service) {
  Bindings& b = bindings();
  std::unique_lock lk(b.mu);
  if (service)
    b.by_root[root] = CollectiveBinding{std::move(node), std::move(service)};
  else
    b.by_root.erase(root);
}
}  // namespace detail

std::optional<CollectiveBinding> find_collective_binding(const Workspace& ws) {
  Bindings& b = bindings();
  std::shared_lock lk(b.mu);
  for (const Workspace* w = &ws; w != nullptr; w = w->parent()) {
    auto it = b.by_root.find(w);
    if (it != b.by_root.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace moka
