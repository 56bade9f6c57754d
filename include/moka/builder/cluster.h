// Cluster, Node and WorkspaceType: where tasks run (docs/tasks.md §1, §2). Builders only; nothing runs here.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "moka/builder/context.h"

namespace moka {

/// Free-form node options (Caffe2's **kwargs), kept as strings.
using NodeKwargs = std::map<std::string, std::string>;

/// @brief The set of nodes seen while building (Caffe2's `Cluster`), a default-managed context.
///
/// @code
///   moka::Cluster cluster;
///   moka::with_context(cluster, [] { moka::Node n("trainer_0"); });
///   cluster.nodes();  // {"trainer_0"}
/// @endcode
/// Thread-safety: a Cluster belongs to the thread that builds with it.
class Cluster : public DefaultManaged {
 public:
  Cluster() = default;
  /// Runs body with this cluster active (a Python `with Cluster():` block).
  explicit Cluster(const std::function<void()>& body) { with_context(*this, body); }

  /// Registers a node name; kwargs registered earlier for the same name win (Caffe2's merge).
  void add_node(const std::string& name, const NodeKwargs& kwargs);
  const std::vector<std::string>& nodes() const { return nodes_; }
  const std::map<std::string, NodeKwargs>& node_kwargs() const { return node_kwargs_; }
  /// "Cluster(nodes=[a, b], node_kwargs={...})", as Caffe2's repr.
  std::string repr() const;

 private:
  std::vector<std::string> nodes_;
  std::map<std::string, NodeKwargs> node_kwargs_;
};

/// @brief A place tasks run on (Caffe2's `Node`), a default-managed context; only the name matters
/// for placement. Constructing one registers it with the current Cluster.
///
/// @code
///   moka::Node("n2", [&] { moka::Task t(step); });   // t runs on node "n2"
///   moka::Node::current_name();                      // "local" when no Node is active
/// @endcode
/// Thread-safety: a Node belongs to the thread that builds with it.
class Node : public DefaultManaged {
 public:
  explicit Node(std::string name = "local", NodeKwargs kwargs = {});
  /// Runs body with this node active (a Python `with Node(name):` block).
  Node(std::string name, const std::function<void()>& body);
  Node(std::string name, NodeKwargs kwargs, const std::function<void()>& body);

  const std::string& name() const { return name_; }
  const NodeKwargs& kwargs() const { return kwargs_; }
  /// "Node(name=local, kwargs={})"
  std::string repr() const;
  /// Name of the innermost active Node ("local" by default).
  static std::string current_name();

 private:
  std::string name_;
  NodeKwargs kwargs_;
};

/// Where a task's blobs live (Caffe2's WorkspaceType).
enum class WorkspaceType {
  Private,  ///< a child workspace per run, destroyed afterwards (blobs that already existed are written in place)
  Global,   ///< the node's workspace itself; blobs persist across runs
};
/// "private" / "global", as Caffe2's constants.
const char* workspace_type_name(WorkspaceType t);

/// Caffe2's repr of a string map: "{'a': 'b'}" ("{}" when empty).
std::string repr_kwargs(const NodeKwargs& kwargs);

}  // namespace moka
