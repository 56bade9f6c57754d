// NodeWorkspaces: the workspace of each node of a session — one per node (moka's decision 1), or one shared by all.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "moka/core/workspace.h"
#include "moka/operators/collectives.h"

namespace moka {

/// @brief Maps node names to workspaces, creating them on first use.
///
/// By default every node gets its own root workspace, so tasks on different nodes cannot see each
/// other's blobs — a local run behaves like a multi-process one. With `shared = true` every node
/// maps to one workspace, as in Caffe2's LocalSession (for code ported from Caffe2 that relies on it).
/// Each node's own workspace is bound to the node and to `collectives` (an in-process CollectiveService
/// when null), so the collective operators of its nets find their common worlds; a shared workspace
/// is bound to the service but to no node (""): collectives there are an InvalidInput, and queues
/// shared by nodes find each other through operator arguments naming the node (docs/queues.md §5).
/// Thread-safety: node() may be called concurrently; workspaces live as long as this object.
class NodeWorkspaces {
 public:
  explicit NodeWorkspaces(bool shared = false, std::shared_ptr<CollectiveService> collectives = nullptr);
  ~NodeWorkspaces();
  NodeWorkspaces(const NodeWorkspaces&) = delete;
  NodeWorkspaces& operator=(const NodeWorkspaces&) = delete;

  /// The node's workspace (created on first use).
  Workspace& node(const std::string& name);
  /// The node's workspace if it exists, else nullptr.
  Workspace* find(const std::string& name) const;
  /// The blob `blob` of `node`, which must hold a filled tensor (what a fetch reads): NotFound for a
  /// node without workspace or a missing blob, TypeError for anything else.
  const Blob& tensor_blob(const std::string& node, const std::string& blob) const;
  /// Nodes that have a workspace, sorted.
  std::vector<std::string> nodes() const;
  bool shared() const { return shared_; }
  /// The service the nodes' collective operators meet in.
  CollectiveService& collectives() const { return *collectives_; }

 private:
  const bool shared_;
  const std::shared_ptr<CollectiveService> collectives_;
  mutable std::mutex mu_;
  std::unique_ptr<Workspace> shared_ws_;
  std::map<std::string, std::unique_ptr<Workspace>> by_node_;
};

}  // namespace moka
