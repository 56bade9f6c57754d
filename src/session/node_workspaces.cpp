// NodeWorkspaces: lazily created per-node (or one shared) workspaces.
#include "moka/session/node_workspaces.h"

namespace moka {

Workspace& NodeWorkspaces::node(const std::string& name) {
  std::lock_guard lk(mu_);
  if (shared_) {
    if (!shared_ws_) shared_ws_ = std::make_unique<Workspace>();
    by_node_.emplace(name, nullptr);  // remembered for nodes()
    return *shared_ws_;
  }
  auto& ws = by_node_[name];
  if (!ws) ws = std::make_unique<Workspace>();
  return *ws;
}

Workspace* NodeWorkspaces::find(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = by_node_.find(name);
  if (it == by_node_.end()) return nullptr;
  return shared_ ? shared_ws_.get() : it->second.get();
}

std::vector<std::string> NodeWorkspaces::nodes() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  for (const auto& [name, ws] : by_node_) out.push_back(name);
  return out;
}

}  // namespace moka
