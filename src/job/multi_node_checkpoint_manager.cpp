// MultiNodeCheckpointManager: per-node CheckpointManagers driven as GLOBAL TaskGroups (docs/jobs.md §4.3; decision 9).
#include "moka/job/multi_node_checkpoint_manager.h"

#include <fmt/format.h>

#include <algorithm>

#include "moka/builder/cluster.h"
#include "moka/core/error.h"
#include "moka/session/session.h"

namespace moka {

MultiNodeCheckpointManager::MultiNodeCheckpointManager(std::string db_prefix, std::string db_type,
                                                       std::shared_ptr<CheckpointMetadataHandler> metadata_handler)
    : db_prefix_(std::move(db_prefix)), db_type_(std::move(db_type)), metadata_handler_(std::move(metadata_handler)) {
  if (db_type_.empty()) throw InvalidInput("MultiNodeCheckpointManager: db_type must not be empty");
}

void MultiNodeCheckpointManager::create_node_managers(const std::vector<std::string>& nodes) {
  NodeManagers managers;
  for (const std::string& node : nodes) {
    if (std::any_of(managers.begin(), managers.end(), [&](const auto& p) { return p.first == node; }))
      throw InvalidInput(
          fmt::format("MultiNodeCheckpointManager: node \"{}\" is listed twice in {}", node, repr_list(nodes)));
    // Each node keeps its list in its own blob (decision 9), so nodes sharing a workspace
    // (LocalSessionOptions::shared_workspace) do not overwrite one another's list.
    CheckpointManager::Flavor flavor;
    flavor.blob_names = node + "/" + CheckpointManager::BLOB_NAMES;
    auto m = std::shared_ptr<CheckpointManager>(new CheckpointManager(flavor, db_prefix_, node, db_type_, nullptr));
    m->run_node_ = node;
    managers.emplace_back(node, std::move(m));
  }
  node_managers_ = std::move(managers);
  sync_paths();
}

void MultiNodeCheckpointManager::sync_paths() {
  for (auto& [node, m] : node_managers_) {
    if (path_prefix_) m->path_prefix_ = path_prefix_;
    if (path_type_) m->path_type_ = path_type_;
  }
}

void MultiNodeCheckpointManager::check_same_nodes(const std::vector<std::string>& nodes) const {
  const std::vector<std::string> have = node_names();
  if (have != nodes)
    throw InvalidInput(fmt::format("MultiNodeCheckpointManager was initialised for nodes {}, not {}", repr_list(have),
                                   repr_list(nodes)));
}

TaskGroup MultiNodeCheckpointManager::task_group(const std::function<void(CheckpointManager&)>& fn) {
  if (!initialized_) throw InvalidInput("MultiNodeCheckpointManager: init must be called first.");
  return TaskGroup(WorkspaceType::Global, [&] {
    // Not a structured binding: clang before 16 cannot capture one in a lambda (the fuzz preset's clang 14).
    for (auto& entry : node_managers_) {
      CheckpointManager& m = *entry.second;
      Node(entry.first, [&] { fn(m); });
    }
  });
}

TaskGroup MultiNodeCheckpointManager::init(const std::vector<std::string>& nodes,
                                           std::optional<int64_t> retrieve_from_epoch,
                                           const std::optional<std::string>& path_prefix,
                                           const std::optional<std::string>& path_type) {
  if (path_prefix && !path_prefix->empty()) path_prefix_ = path_prefix;
  if (path_type && !path_type->empty()) path_type_ = path_type;
  if (initialized_) {
    // Reuse (Caffe2): same nodes, first blob lists kept, nothing to run.
    check_same_nodes(nodes);
    sync_paths();
    return TaskGroup(WorkspaceType::Global);
  }
  if (node_managers_.empty() || node_names() != nodes) create_node_managers(nodes);
  sync_paths();
  initialized_ = true;
  // Each manager is told its own node (Caffe2 passed the last node to all of them; decision 9).
  return task_group([&](CheckpointManager& m) {
    m.init(std::vector<std::string>{m.node_name()}, retrieve_from_epoch, std::nullopt, std::nullopt);
  });
}

TaskGroup MultiNodeCheckpointManager::load(int64_t epoch, const std::optional<std::string>& path_prefix,
                                           const std::optional<std::string>& path_type) {
  return task_group([&](CheckpointManager& m) { m.load(epoch, path_prefix, path_type); });
}

TaskGroup MultiNodeCheckpointManager::save(int64_t epoch) {
  return task_group([&](CheckpointManager& m) { m.save(epoch); });
}

bool MultiNodeCheckpointManager::load_blobs_locally(const std::vector<std::string>& nodes,
                                                    const std::vector<std::string>& blob_names, int64_t epoch,
                                                    Session& session) {
  if (node_managers_.empty()) {
    create_node_managers(nodes);
  } else {
    check_same_nodes(nodes);
  }
  for (auto& [node, m] : node_managers_) {
    Task exists = m->check_db_exists(epoch);
    session.run(exists);
    if (!exists.outputs().front().fetch<bool>()) return false;  // Caffe2: 'DB %s does not exist!'
    Task load = m->load_blobs_from_checkpoint(blob_names, epoch);
    session.run(load);
  }
  return true;
}

void MultiNodeCheckpointManager::set_params(const std::vector<std::string>& nodes,
                                            const std::optional<std::string>& path_prefix,
                                            const std::optional<std::string>& path_type) {
  if (!nodes.empty()) param_nodes_ = nodes;
  if (path_prefix && !path_prefix->empty()) path_prefix_ = path_prefix;
  if (path_type && !path_type->empty()) path_type_ = path_type;
  sync_paths();
  if (metadata_handler_) metadata_handler_->set_params(db_prefix_, db_type_, nodes, path_prefix_, path_type_);
}

std::optional<int64_t> MultiNodeCheckpointManager::get_resume_from_epoch_id(std::optional<int64_t> user_epoch) {
  return metadata_handler_ ? metadata_handler_->last_epoch(user_epoch) : user_epoch;
}

void MultiNodeCheckpointManager::report_checkpoint_stats(const std::string& action_name) {
  CheckpointStats stats;
  for (const auto& [node, m] : node_managers_) m->collect_checkpoint_stats(stats);
  report_stats(action_name, stats);
}

void MultiNodeCheckpointManager::report_stats(const std::string& action_name, const CheckpointStats& stats) {
  if (metadata_handler_) metadata_handler_->report(action_name, stats);
}

void MultiNodeCheckpointManager::write_checkpoint_metadata(int64_t epoch) {
  if (metadata_handler_) metadata_handler_->write(epoch);
}

bool MultiNodeCheckpointManager::cp_accessible(std::optional<int64_t> epoch) {
  return metadata_handler_ ? metadata_handler_->cp_accessible(epoch) : true;
}

std::vector<std::string> MultiNodeCheckpointManager::node_names() const {
  if (node_managers_.empty()) return param_nodes_;
  std::vector<std::string> names;
  for (const auto& [node, m] : node_managers_) names.push_back(node);
  return names;
}

std::vector<std::string> MultiNodeCheckpointManager::blob_names_of(const std::string& node) const {
  for (const auto& [n, m] : node_managers_)
    if (n == node) return m->blob_list();
  throw InvalidInput(
      fmt::format("MultiNodeCheckpointManager: node \"{}\" is not checkpointed (init must have run "
                  "for it)",
                  node));
}

std::optional<std::string> MultiNodeCheckpointManager::get_ckpt_db_name(const std::string& node, int64_t epoch) const {
  for (const auto& [n, m] : node_managers_)
    if (n == node) return m->db_path(epoch);
  if (node_managers_.empty() && std::find(param_nodes_.begin(), param_nodes_.end(), node) != param_nodes_.end())
    return db_name(epoch, node, db_prefix_, path_prefix_);
  return std::nullopt;
}

}  // namespace moka
