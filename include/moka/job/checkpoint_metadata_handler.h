// CheckpointMetadataHandler: the hook checkpoint managers call to record, report and choose checkpoints
// (Caffe2's duck-typed `metadata_handler`, docs/jobs.md §4.2), as an abstract class.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moka {

/// Checkpoint operation durations by DB path, in nanoseconds (Caffe2's `stats` dict).
using CheckpointStats = std::map<std::string, int64_t>;

/// @brief What a checkpoint manager tells a metadata store, and asks it (Caffe2's metadata handler).
///
/// Caffe2 duck-types this object; moka makes it an interface. A manager calls set_params() when
/// JobRunner configures it, last_epoch() to choose the epoch to resume from, cp_accessible()
/// before every save, write() after a successful save and report() with the durations of each
/// save/load.
/// @code
///   struct MyHandler : moka::CheckpointMetadataHandler { ... };
///   auto cm = std::make_shared<moka::MultiNodeCheckpointManager>(dir, "minidb", std::make_shared<MyHandler>());
/// @endcode
/// Thread-safety: called from the thread that runs JobRunner::train.
class CheckpointMetadataHandler {
 public:
  virtual ~CheckpointMetadataHandler() = default;
  /// @brief Where and for which nodes checkpoints are written.
  virtual void set_params(const std::string& db_prefix, const std::string& db_type,
                          const std::vector<std::string>& node_names, const std::optional<std::string>& path_prefix,
                          const std::optional<std::string>& path_type) = 0;
  /// @brief The epoch to resume from, given the user's choice (nullopt: from scratch).
  virtual std::optional<int64_t> last_epoch(std::optional<int64_t> user_epoch) = 0;
  /// @brief Records that the checkpoint of epoch was written.
  virtual void write(int64_t epoch) = 0;
  /// @brief Receives the durations of one action ("checkpoint_save", "checkpoint_load", "checkpoint_partial_load").
  virtual void report(const std::string& action_name, const CheckpointStats& stats) = 0;
  /// @brief Whether checkpoint files can be written now (nullopt: any epoch); false skips the save with a warning.
  virtual bool cp_accessible(std::optional<int64_t> epoch) = 0;
};

}  // namespace moka
