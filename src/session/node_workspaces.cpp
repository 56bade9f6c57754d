// NodeWorkspaces: lazily created per-node (or one shared) workspaces.
#include "moka/session/node_workspaces.h"

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {

NodeWorkspaces::NodeWorkspaces(bool shared, std::shared_ptr<CollectiveService> collectives)
    : shared_(shared), collectives_(collectives ? std::move(collectives) : std::make_shared<CollectiveService>()) {}

NodeWorkspaces::~NodeWorkspaces() {
  for (const auto& [name, ws] : by_node_)
    if (ws) detail::bind_collectives(ws.get(), name, nullptr);
  if (shared_ws_) detail::bind_collectives(shared_ws_.get(), "", nullptr);
}

Workspace& NodeWorkspaces::node(const std::string& name) {
  std::lock_guard lk(mu_);
  if (shared_) {
    if (!shared_ws_) {
      shared_ws_ = std::make_unique<Workspace>();
      // Bound to no node (""): collectives refuse it, queues shared by nodes name their node themselves.
      detail::bind_collectives(shared_ws_.get(), "", collectives_);
    }
    by_node_.emplace(name, nullptr);  // remembered for nodes()
    return *shared_ws_;
  }
  auto& ws = by_node_[name];
  if (!ws) {
    ws = std::make_unique<Workspace>();
    detail::bind_collectives(ws.get(), name, collectives_);
  }
  return *ws;
}

Workspace* NodeWorkspaces::find(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = by_node_.find(name);
  if (it == by_node_.end()) return nullptr;
  return shared_ ? shared_ws_.get() : it->second.get();
}

const Blob& NodeWorkspaces::tensor_blob(const std::string& node, const std::string& blob) const {
  const Workspace* ws = find(node);
  if (!ws) throw NotFound(fmt::format("node \"{}\" has no workspace in this session", node));
  const Blob* b = ws->get_blob(blob);
  if (!b) throw NotFound(fmt::format("blob \"{}\" does not exist on node \"{}\"", blob, node));
  const Tensor* t = b->tensor_or_null();
  if (!t || !t->defined())
    throw TypeError(fmt::format("blob \"{}\" on node \"{}\" holds {}, not a filled tensor", blob, node,
                                t ? "an empty tensor" : std::string(b->type_name())));
  return *b;
}

std::vector<std::string> NodeWorkspaces::nodes() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  for (const auto& [name, ws] : by_node_) out.push_back(name);
  return out;
}

}  // namespace moka
