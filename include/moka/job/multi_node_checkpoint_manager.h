// MultiNodeCheckpointManager: one CheckpointManager per node, driven together (docs/jobs.md §4.3; decision 9).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moka/job/checkpoint_manager.h"

namespace moka {

/// @brief Checkpoints every node of a job: `<db_prefix>/<node>.<epoch>` per node (Caffe2's
/// MultiNodeCheckpointManager).
///
/// init() creates one CheckpointManager per node; save()/load() return GLOBAL TaskGroups with one
/// task per node, run on that node. Calling init() again with the same nodes returns an empty
/// TaskGroup and keeps the first blob lists, so one manager can serve several JobRunners.
///
/// Differences from Caffe2 (decision 9): every node has its own blob list (its own workspace's
/// blobs, in a blob `<node>/blob_names`) — Caffe2 merged all nodes into one workspace and one list
/// and passed the last node to every manager — and path_prefix/path_type apply to every operation.
/// @code
///   auto cm = std::make_shared<moka::MultiNodeCheckpointManager>("/ckpt", "minidb");
///   moka::JobRunner(job, cm).train(session);          // writes /ckpt/<node>.<epoch>
///   moka::TaskGroup load = cm->load(2);
///   session.run(load);                                // every node back to epoch 2
/// @endcode
/// Thread-safety: one thread builds and runs with a manager at a time.
class MultiNodeCheckpointManager : public CheckpointManagerBase {
 public:
  using NodeManagers = std::vector<std::pair<std::string, std::shared_ptr<CheckpointManager>>>;

  MultiNodeCheckpointManager(std::string db_prefix, std::string db_type,
                             std::shared_ptr<CheckpointMetadataHandler> metadata_handler = nullptr);

  /// @brief One init task per node; an empty group when already initialised with the same nodes
  /// (InvalidInput naming both lists when they differ).
  TaskGroup init(const std::vector<std::string>& nodes, std::optional<int64_t> retrieve_from_epoch = std::nullopt,
                 const std::optional<std::string>& path_prefix = std::nullopt,
                 const std::optional<std::string>& path_type = std::nullopt);
  /// @brief One load task per node (InvalidInput "init must be called first." before init()).
  TaskGroup load(int64_t epoch, const std::optional<std::string>& path_prefix = std::nullopt,
                 const std::optional<std::string>& path_type = std::nullopt);
  /// @brief One save task per node (InvalidInput "init must be called first." before init()).
  TaskGroup save(int64_t epoch);
  /// @brief The per-node managers, in node order (empty before init()).
  const NodeManagers& node_managers() const { return node_managers_; }
  const std::string& db_prefix() const { return db_prefix_; }

  // CheckpointManagerBase
  void set_params(const std::vector<std::string>& nodes, const std::optional<std::string>& path_prefix = {},
                  const std::optional<std::string>& path_type = {}) override;
  std::optional<int64_t> get_resume_from_epoch_id(std::optional<int64_t> user_epoch) override;
  TaskGroup init_task_group(const std::vector<std::string>& nodes, std::optional<int64_t> retrieve_from_epoch,
                            const std::optional<std::string>& path_prefix,
                            const std::optional<std::string>& path_type) override {
    return init(nodes, retrieve_from_epoch, path_prefix, path_type);
  }
  TaskGroup save_task_group(int64_t epoch) override { return save(epoch); }
  TaskGroup load_task_group(int64_t epoch, const std::optional<std::string>& path_prefix,
                            const std::optional<std::string>& path_type) override {
    return load(epoch, path_prefix, path_type);
  }
  /// Creates the node managers when needed (InvalidInput when initialised with other nodes).
  bool load_blobs_locally(const std::vector<std::string>& nodes, const std::vector<std::string>& blob_names,
                          int64_t epoch, Session& session) override;
  void report_checkpoint_stats(const std::string& action_name) override;
  void report_stats(const std::string& action_name, const CheckpointStats& stats) override;
  void write_checkpoint_metadata(int64_t epoch) override;
  bool cp_accessible(std::optional<int64_t> epoch = std::nullopt) override;
  std::vector<std::string> node_names() const override;
  std::optional<std::string> get_ckpt_db_name(const std::string& node, int64_t epoch) const override;
  std::vector<std::string> blob_names_of(const std::string& node) const override;
  std::string db_type() const override { return path_type_.value_or(db_type_); }

 private:
  void create_node_managers(const std::vector<std::string>& nodes);
  void check_same_nodes(const std::vector<std::string>& nodes) const;
  void sync_paths();
  TaskGroup task_group(const std::function<void(CheckpointManager&)>& fn);

  std::string db_prefix_, db_type_;
  std::shared_ptr<CheckpointMetadataHandler> metadata_handler_;
  NodeManagers node_managers_;
  bool initialized_ = false;              // init() was called (Caffe2: _node_managers is not None)
  std::vector<std::string> param_nodes_;  // from set_params(), before init()
  std::optional<std::string> path_prefix_, path_type_;
};

}  // namespace moka
