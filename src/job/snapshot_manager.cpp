// SnapshotManager: a CheckpointManager with its own file names and an optional fixed blob list (decision 10).
#include "moka/job/snapshot_manager.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {

SnapshotManager::SnapshotManager(std::string db_prefix, std::string node_name, std::string db_type,
                                 SnapshotManagerOptions options)
    : CheckpointManager(Flavor{.class_name = "SnapshotManager",
                               .file_infix = ".snapshot",
                               // Not BLOB_NAMES: a CheckpointManager on the same node keeps its own list.
                               .blob_names = "snapshot_blob_names",
                               .chosen_blobs = std::move(options.blob_names)},
                        std::move(db_prefix), std::move(node_name), std::move(db_type),
                        std::move(options.metadata_handler)),
      keep_last_(options.keep_last) {
  if (keep_last_ < 0) throw InvalidInput(fmt::format("SnapshotManager: keep_last must be >= 0, got {}", keep_last_));
}

std::vector<int64_t> SnapshotManager::snapshot_epochs() const {
  namespace fs = std::filesystem;
  // The directory and file-name stem that db_path() writes (path_prefix honoured), so retention lists
  // and deletes in one directory: the one its snapshots are in.
  const fs::path first = db_path(0);
  const std::string stem = first.filename().string().substr(0, first.filename().string().size() - 1);
  const fs::path dir = first.has_parent_path() ? first.parent_path() : fs::path(".");
  std::vector<int64_t> epochs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(stem) || name.size() == stem.size()) continue;
    int64_t epoch = -1;
    const char* begin = name.data() + stem.size();
    const char* end = name.data() + name.size();
    auto [p, err] = std::from_chars(begin, end, epoch);
    if (err == std::errc() && p == end && epoch >= 0 && fmt::format("{}", epoch) == std::string_view(begin, end))
      epochs.push_back(epoch);
  }
  std::sort(epochs.begin(), epochs.end());
  return epochs;
}

std::vector<int64_t> SnapshotManager::apply_retention() {
  std::vector<int64_t> deleted;
  if (keep_last_ == 0) return deleted;
  const std::vector<int64_t> epochs = snapshot_epochs();
  const size_t keep = static_cast<size_t>(std::max<int64_t>(keep_last_, 1));
  for (size_t i = 0; i + keep < epochs.size(); ++i) {
    const std::string path = db_path(epochs[i]);
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) throw RuntimeError(fmt::format("SnapshotManager: cannot delete snapshot '{}': {}", path, ec.message()));
    deleted.push_back(epochs[i]);
  }
  return deleted;
}

}  // namespace moka
