// SnapshotManager: a CheckpointManager with its own file names and an optional fixed blob list (decision 10).
#include "moka/job/snapshot_manager.h"

namespace moka {

SnapshotManager::SnapshotManager(std::string db_prefix, std::string node_name, std::string db_type,
                                 SnapshotManagerOptions options)
    : CheckpointManager(
          Flavor{.class_name = "SnapshotManager",
                 .file_infix = ".snapshot",
                 // Not BLOB_NAMES: a CheckpointManager on the same node keeps its own list.
                 .blob_names = "snapshot_blob_names",
                 .chosen_blobs = std::move(options.blob_names)},
          std::move(db_prefix), std::move(node_name), std::move(db_type), std::move(options.metadata_handler)) {}

}  // namespace moka
