// Cluster and Node: node registration, kwargs merging, reprs.
#include "moka/builder/cluster.h"

#include <fmt/format.h>

#include <algorithm>

namespace moka {

std::string repr_kwargs(const NodeKwargs& kwargs) {
  std::string out = "{";
  for (const auto& [k, v] : kwargs) out += fmt::format("{}'{}': '{}'", out.size() > 1 ? ", " : "", k, v);
  return out + "}";
}

void Cluster::add_node(const std::string& name, const NodeKwargs& kwargs) {
  if (std::find(nodes_.begin(), nodes_.end(), name) == nodes_.end()) nodes_.push_back(name);
  // Caffe2's merge(a=new, b=previous): previously registered values win.
  NodeKwargs merged = kwargs;
  if (auto it = node_kwargs_.find(name); it != node_kwargs_.end())
    for (const auto& [k, v] : it->second) merged[k] = v;
  node_kwargs_[name] = std::move(merged);
}

std::string Cluster::repr() const {
  std::string nodes;
  for (const auto& n : nodes_) nodes += fmt::format("{}'{}'", nodes.empty() ? "" : ", ", n);
  std::string kwargs;
  for (const auto& [n, kw] : node_kwargs_)
    kwargs += fmt::format("{}'{}': {}", kwargs.empty() ? "" : ", ", n, repr_kwargs(kw));
  return fmt::format("Cluster(nodes=[{}], node_kwargs={{{}}})", nodes, kwargs);
}

Node::Node(std::string name, NodeKwargs kwargs) : name_(std::move(name)), kwargs_(std::move(kwargs)) {
  Context<Cluster>::current()->add_node(name_, kwargs_);
}

Node::Node(std::string name, const std::function<void()>& body) : Node(std::move(name), NodeKwargs{}, body) {}

Node::Node(std::string name, NodeKwargs kwargs, const std::function<void()>& body)
    : Node(std::move(name), std::move(kwargs)) {
  with_context(*this, body);
}

std::string Node::repr() const { return fmt::format("Node(name={}, kwargs={})", name_, repr_kwargs(kwargs_)); }

std::string Node::current_name() { return Context<Node>::current()->name(); }

const char* workspace_type_name(WorkspaceType t) { return t == WorkspaceType::Global ? "global" : "private"; }

}  // namespace moka
