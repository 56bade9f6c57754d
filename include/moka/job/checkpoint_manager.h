// CheckpointManagerBase (what JobRunner needs from a checkpoint manager), db naming (docs/jobs.md §4.1)
// and CheckpointManager, the single-node manager (docs/jobs.md §4.2; decision 9 for path_prefix/path_type).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/builder/task.h"
#include "moka/builder/task_group.h"
#include "moka/job/checkpoint_metadata_handler.h"

namespace moka {

class Session;

/// @brief Caffe2's `get_ckpt_filename`: `<node_name>.<epoch>`. InvalidInput for a node name that
/// cannot be one file name (check_checkpoint_node_name: empty, "..", a '/', ...).
std::string get_ckpt_filename(const std::string& node_name, int64_t epoch);

/// @brief Caffe2's `db_name`: `path_prefix + filename` (plain concatenation) when path_prefix is
/// given and not empty, else `db_prefix` joined with the filename like `os.path.join`.
/// @code
///   moka::db_name(5, "trainer_0", "/tmp/x") == "/tmp/x/trainer_0.5"
///   moka::db_name(5, "trainer_0", "/tmp/x", "hdfs://y/") == "hdfs://y/trainer_0.5"
/// @endcode
std::string db_name(int64_t epoch, const std::string& node_name, const std::string& db_prefix,
                    const std::optional<std::string>& path_prefix = std::nullopt);

/// @brief What JobRunner needs from a checkpoint manager (CheckpointManager or
/// MultiNodeCheckpointManager), and what the durability layer builds on: the nodes, each node's DB
/// path per epoch, the DB type.
///
/// The *_task_group() methods build GLOBAL TaskGroups to run in the session: their tasks run in
/// the node workspaces, so what they save and load is each node's workspace.
/// Thread-safety: one thread builds and runs with a manager at a time.
class CheckpointManagerBase {
 public:
  virtual ~CheckpointManagerBase() = default;

  /// @brief Records the nodes (and optional path prefix/type) and tells the metadata handler.
  virtual void set_params(const std::vector<std::string>& nodes, const std::optional<std::string>& path_prefix = {},
                          const std::optional<std::string>& path_type = {}) = 0;
  /// @brief The epoch to resume from: the metadata handler's choice, else user_epoch.
  virtual std::optional<int64_t> get_resume_from_epoch_id(std::optional<int64_t> user_epoch) = 0;
  /// @brief Tasks that compute each node's blob list: all local blobs of the node workspace, or
  /// the list stored in the checkpoint of retrieve_from_epoch.
  virtual TaskGroup init_task_group(const std::vector<std::string>& nodes,
                                    std::optional<int64_t> retrieve_from_epoch = std::nullopt,
                                    const std::optional<std::string>& path_prefix = {},
                                    const std::optional<std::string>& path_type = {}) = 0;
  /// @brief Tasks that save each node's blob list into its DB for epoch (init must have run).
  virtual TaskGroup save_task_group(int64_t epoch) = 0;
  /// @brief Tasks that load each node's blob list from its DB for epoch (init must have run).
  virtual TaskGroup load_task_group(int64_t epoch, const std::optional<std::string>& path_prefix = {},
                                    const std::optional<std::string>& path_type = {}) = 0;
  /// @brief Loads the named blobs (those a node's DB has) into each node's workspace. Returns
  /// false as soon as a node's DB for epoch does not exist (nodes before it were loaded).
  virtual bool load_blobs_locally(const std::vector<std::string>& nodes, const std::vector<std::string>& blob_names,
                                  int64_t epoch, Session& session) = 0;
  /// @brief Collects the durations of the last save/load of each node and sends them to the handler.
  virtual void report_checkpoint_stats(const std::string& action_name) = 0;
  /// @brief Sends stats measured outside the manager's tasks (a background save's write durations,
  /// ns per DB path) to the handler as action_name.
  virtual void report_stats(const std::string& action_name, const CheckpointStats& stats) = 0;
  /// @brief Tells the metadata handler that epoch was saved.
  virtual void write_checkpoint_metadata(int64_t epoch) = 0;
  /// @brief The metadata handler's answer, true without one.
  virtual bool cp_accessible(std::optional<int64_t> epoch = std::nullopt) = 0;

  /// @brief The nodes whose workspaces are checkpointed, in order (empty before init/set_params).
  virtual std::vector<std::string> node_names() const = 0;
  /// @brief The DB path of node's checkpoint of epoch (path_prefix honoured); nullopt for an unknown node.
  virtual std::optional<std::string> get_ckpt_db_name(const std::string& node, int64_t epoch) const = 0;
  /// @brief The DB type used for reading and writing (path_type when set, else the db_type given).
  virtual std::string db_type() const = 0;
  /// @brief The blobs a save of `node` writes (its blob list; the init task must have run).
  /// InvalidInput for a node the manager does not checkpoint.
  virtual std::vector<std::string> blob_names_of(const std::string& node) const = 0;
};

/// @brief Saves and loads the blobs of one node's workspace (Caffe2's CheckpointManager, docs/jobs.md §4.2).
///
/// init() builds the task that lists the blobs to checkpoint (every local blob of the node's
/// workspace, or the list stored in an earlier checkpoint); save()/load() build tasks that
/// Save/Load exactly that list as `<db_prefix>/<node_name>.<epoch>`. Each save/load task is timed
/// (TimerBegin / TimerGetAndEnd) and its duration reported to the metadata handler.
///
/// Differences from Caffe2: the tasks run on the node given to init() (else the active Node),
/// because moka's LocalSession gives every node its own workspace; and path_prefix/path_type,
/// once given to set_params() or init(), apply to every operation — save, check_db_exists and
/// load_blobs_from_checkpoint included (decision 9; Caffe2 ignored them there).
/// @code
///   auto cm = std::make_shared<moka::CheckpointManager>("/ckpt", "trainer_0", "minidb");
///   moka::JobRunner runner(job, cm);
///   int64_t last_epoch = runner.train(session);
/// @endcode
/// Thread-safety: one thread builds and runs with a manager at a time.
class CheckpointManager : public CheckpointManagerBase {
 public:
  /// Name of the blob holding the blob list (Caffe2's BLOB_NAMES).
  static constexpr const char* BLOB_NAMES = "blob_names";

  CheckpointManager(std::string db_prefix, std::string node_name, std::string db_type,
                    std::shared_ptr<CheckpointMetadataHandler> metadata_handler = nullptr);

  /// @brief The task that computes the blob list (run it once after the job's init group).
  /// InvalidInput "CheckpointManager only supports single node." for more than one node.
  Task init(const std::optional<std::vector<std::string>>& nodes = std::nullopt,
            std::optional<int64_t> retrieve_from_epoch = std::nullopt,
            const std::optional<std::string>& path_prefix = std::nullopt,
            const std::optional<std::string>& path_type = std::nullopt);
  /// @brief The blobs to checkpoint, fetched from the init task's output (InvalidInput before it ran).
  std::vector<std::string> blob_list() const;
  /// @brief A timed task "checkpoint_load" that loads the blob list from epoch's DB.
  Task load(int64_t epoch, const std::optional<std::string>& path_prefix = std::nullopt,
            const std::optional<std::string>& path_type = std::nullopt);
  /// @brief A timed task "checkpoint_partial_load" that loads those of blob_names epoch's DB has.
  Task load_blobs_from_checkpoint(const std::vector<std::string>& blob_names, int64_t epoch);
  /// @brief A task whose single bool output says whether epoch's DB exists.
  Task check_db_exists(int64_t epoch);
  /// @brief A timed task "checkpoint_save" that saves the blob list into epoch's DB (replacing it).
  Task save(int64_t epoch);
  /// @brief Adds `db path -> duration (ns)` of the last timed task, when there was one.
  void collect_checkpoint_stats(CheckpointStats& stats) const;

  const std::string& node_name() const { return node_name_; }
  const std::string& db_prefix() const { return db_prefix_; }
  /// The node the tasks run on (set by init()).
  const std::string& run_node() const { return run_node_; }
  const std::optional<std::string>& path_prefix() const { return path_prefix_; }
  /// The DB path of epoch, honouring path_prefix.
  std::string db_path(int64_t epoch) const;

  // CheckpointManagerBase
  void set_params(const std::vector<std::string>& nodes, const std::optional<std::string>& path_prefix = {},
                  const std::optional<std::string>& path_type = {}) override;
  std::optional<int64_t> get_resume_from_epoch_id(std::optional<int64_t> user_epoch) override;
  TaskGroup init_task_group(const std::vector<std::string>& nodes, std::optional<int64_t> retrieve_from_epoch,
                            const std::optional<std::string>& path_prefix,
                            const std::optional<std::string>& path_type) override;
  TaskGroup save_task_group(int64_t epoch) override;
  TaskGroup load_task_group(int64_t epoch, const std::optional<std::string>& path_prefix,
                            const std::optional<std::string>& path_type) override;
  bool load_blobs_locally(const std::vector<std::string>& nodes, const std::vector<std::string>& blob_names,
                          int64_t epoch, Session& session) override;
  void report_checkpoint_stats(const std::string& action_name) override;
  void report_stats(const std::string& action_name, const CheckpointStats& stats) override;
  void write_checkpoint_metadata(int64_t epoch) override;
  bool cp_accessible(std::optional<int64_t> epoch = std::nullopt) override;
  std::vector<std::string> node_names() const override { return {node_name_}; }
  std::optional<std::string> get_ckpt_db_name(const std::string& node, int64_t epoch) const override;
  std::string db_type() const override { return path_type_.value_or(db_type_); }
  std::vector<std::string> blob_names_of(const std::string& node) const override;

 protected:
  /// How a subclass (SnapshotManager) names itself in messages and names its files.
  struct Flavor {
    std::string class_name = "CheckpointManager";
    std::string file_infix{};  ///< `<node><infix>.<epoch>`
    std::string blob_names = BLOB_NAMES;
    std::vector<std::string> chosen_blobs{};  ///< non-empty: the blob list is exactly these
  };
  CheckpointManager(Flavor flavor, std::string db_prefix, std::string node_name, std::string db_type,
                    std::shared_ptr<CheckpointMetadataHandler> metadata_handler);

 private:
  friend class MultiNodeCheckpointManager;
  Task timed_task(const std::string& cp_op_name, const std::function<void()>& add_op);
  std::string path_for(int64_t epoch, const std::optional<std::string>& path_prefix) const;
  std::string io_type(const std::optional<std::string>& path_type) const;
  void check_initialized(const char* what) const;

  Flavor flavor_;
  std::string db_prefix_, node_name_, db_type_;
  std::shared_ptr<CheckpointMetadataHandler> metadata_handler_;
  std::string run_node_;
  std::optional<TaskOutput> names_output_;
  std::optional<std::string> path_prefix_, path_type_;
  std::optional<std::string> current_db_name_;
  std::optional<TaskOutput> current_checkpoint_duration_;
};

}  // namespace moka
