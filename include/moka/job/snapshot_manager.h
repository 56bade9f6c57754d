// SnapshotManager: exports of chosen blobs for evaluation or serving, with CheckpointManager's
// interface, under its own prefix, never used for resume (decision 10).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/job/checkpoint_manager.h"

namespace moka {

/// Optional arguments of SnapshotManager.
struct SnapshotManagerOptions {
  /// Blobs to export; empty: every local blob of the node's workspace (as a checkpoint would).
  std::vector<std::string> blob_names{};
  std::shared_ptr<CheckpointMetadataHandler> metadata_handler{};
  /// Snapshot retention (its own, separate from checkpoints'): apply_retention() keeps the newest
  /// N snapshots of this node; 0 keeps all.
  int64_t keep_last = 0;
};

/// @brief Writes **snapshots**: immutable exports of chosen blobs of one node, as
/// `<db_prefix>/<node_name>.snapshot.<epoch>` (the seeds' SnapshotManager; decision 10).
///
/// It has CheckpointManager's interface (init, blob_list, save, load, check_db_exists,
/// load_blobs_from_checkpoint) but is not a CheckpointManagerBase: JobRunner cannot take it, so a
/// snapshot is never consulted for resume, and its file names differ from checkpoints' so that
/// a snapshot directory shared with checkpoints cannot be mistaken for one.
/// @code
///   moka::SnapshotManager snap("/exports", "trainer_0", "minidb", {.blob_names = {"w", "b"}});
///   session.run(snap.init());
///   session.run(snap.save(epoch));     // /exports/trainer_0.snapshot.<epoch> holds w and b
/// @endcode
/// Thread-safety: one thread builds and runs with a manager at a time.
class SnapshotManager : private CheckpointManager {
 public:
  SnapshotManager(std::string db_prefix, std::string node_name, std::string db_type,
                  SnapshotManagerOptions options = {});

  /// @brief The task that computes the blob list (InvalidInput "SnapshotManager only supports
  /// single node." for more than one node).
  using CheckpointManager::blob_list;
  using CheckpointManager::check_db_exists;
  using CheckpointManager::collect_checkpoint_stats;
  using CheckpointManager::db_path;
  using CheckpointManager::db_prefix;
  using CheckpointManager::db_type;
  using CheckpointManager::init;
  using CheckpointManager::load;
  using CheckpointManager::load_blobs_from_checkpoint;
  using CheckpointManager::node_name;
  using CheckpointManager::report_checkpoint_stats;
  using CheckpointManager::run_node;
  using CheckpointManager::save;

  /// @brief Epochs that have a snapshot of this node in db_prefix, ascending.
  std::vector<int64_t> snapshot_epochs() const;
  /// @brief Deletes this node's snapshots beyond the newest `keep_last` (call it after running
  /// save(epoch)); returns the deleted epochs. Never deletes the newest. No-op when keep_last is 0.
  /// RuntimeError naming the file when one cannot be deleted.
  std::vector<int64_t> apply_retention();

 private:
  int64_t keep_last_ = 0;
};

}  // namespace moka
