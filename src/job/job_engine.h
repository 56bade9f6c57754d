// JobEngine: the one flow that runs a job (docs/jobs.md §2) for both front ends — run_job (a JobDef
// over NodeWorkspaces) and JobRunner (a Job in a Session through its checkpoint manager).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "moka/job/checkpoint_manager.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/job/run_job.h"

namespace moka {
class Tensor;
class Workspace;
}  // namespace moka

namespace moka::detail {

class ProcessAgreement;

/// The groups of a job, in the order the engine runs them.
enum class JobGroup { init, epoch, download, exit };

/// @brief How a front end runs the groups of its job and reads its stop conditions.
class JobGroupRunner {
 public:
  virtual ~JobGroupRunner() = default;
  /// Runs one group (nothing for an empty one); `epoch` is the epoch run (epoch group only).
  /// Errors name the group; a cancelled run throws Cancelled.
  virtual void run(JobGroup group, int64_t epoch) = 0;
  /// After an epoch: whether any stop condition holds (each read with stop_condition_holds()).
  virtual bool stop_requested() = 0;
  /// After the last epoch's checkpoint is written, before the download group (JobRunner's upload group).
  virtual void before_download(int64_t /*last_epoch*/) {}
};

/// @brief How a front end writes and reads the node DBs of one epoch. The engine does everything
/// else a checkpoint needs: the start decision, uncommit before overwrite, the commit (read back,
/// digest, manifest), retention, the background save and the failure policy (decision 8).
class JobCheckpointStore {
 public:
  virtual ~JobCheckpointStore() = default;
  /// The checkpointed nodes, in checkpoint order, each with the path of its DB for `epoch`.
  virtual std::vector<std::pair<std::string, std::string>> files(int64_t epoch) = 0;
  /// Whether this process writes and reads `node`'s DB (a job whose nodes span processes: the node's
  /// process; the other methods touch only those nodes).
  virtual bool hosts(const std::string& /*node*/) { return true; }
  /// The resume epoch once the request is known (JobRunner: its metadata handler's last_epoch).
  virtual std::optional<int64_t> resume_epoch(std::optional<int64_t> asked) { return asked; }
  /// After the init group of a run from scratch: fixes the blobs each node checkpoints.
  virtual void capture_blob_lists() = 0;
  /// Loads every node DB of the verified `manifest` into the nodes, with what each checkpoints.
  virtual void read(const CheckpointManifest& manifest) = 0;
  /// Writes every node DB of `epoch` with `db_type` in the foreground; returns the serialized bytes
  /// (0 when the store cannot tell).
  virtual uint64_t write(int64_t epoch, const std::string& db_type) = 0;
  /// Whether epoch's checkpoint can be written now (JobRunner: its metadata handler's cp_accessible).
  virtual bool accessible() { return true; }
  /// For a background save: the workspace of a checkpointed node and the blobs it checkpoints.
  virtual const Workspace& workspace(const std::string& node) = 0;
  virtual std::vector<std::string> blob_names(const std::string& node) = 0;
  /// After epoch's checkpoint is committed, on the engine's thread: `background` holds the writer's
  /// time per DB for a background save, nullptr for a foreground one.
  virtual void saved(int64_t /*epoch*/, const CheckpointStats* /*background*/) {}
  /// A save failed (`message` is the line the engine logs and, unless tolerated, throws).
  virtual void save_failed(int64_t /*epoch*/, const std::string& /*what*/, const std::string& /*message*/) {}
};

/// What differs between the front ends beyond JobRunOptions.
struct JobEngineSettings {
  /// Recorded in every manifest and compared when resuming (run_job's JobDef digest); empty: none.
  std::string job_digest{};
  /// true (run_job): the checkpoint directory is locked or the run fails, killed writers' temporary
  /// files are removed, and a read-only directory only resumes a finished epoch. false (JobRunner):
  /// a directory that cannot be made is not locked (its saves fail, decision 8), temporary files
  /// stay (the directory may be shared), and a read-only one fails at its first save.
  bool own_directory = true;
  /// The processes of a session that spans several (JobEngineSettings::processes is then set), with
  /// own_directory: process 0 holds the directory (lock, temporary files, manifests, retention), each
  /// process writes and verifies the DBs of the nodes it hosts, and every decision — where to start,
  /// whether an epoch is committed — is the same on every process (docs/distributed.md §6.2). Null:
  /// one process.
  ProcessAgreement* processes = nullptr;
  /// With processes and background_save: the background writer's agreement, over a ProcessChannel of
  /// its own (the writer agrees while the next epoch's runs use the session).
  ProcessAgreement* background_processes = nullptr;
  /// Where warnings go (skipped epochs, retention, failed saves, inaccessible checkpoints); none: silent.
  std::function<void(std::string_view)> log{};
};

/// @brief Runs a job: the start decision (resume or scratch), init group or checkpoint load,
/// checkpoint 0, then epoch group, stop conditions and checkpoint E until a stop condition holds
/// (decision 13 when resuming a finished epoch), then before_download, download and exit groups.
/// `store` null (or options.checkpoint_dir empty): no checkpoints. Validation of the job and options
/// is the front end's; the engine checks only what the directory says.
JobRunResult run_job_engine(JobGroupRunner& groups, JobCheckpointStore* store, const JobRunOptions& options,
                            const JobEngineSettings& settings);

/// @brief Python's truth of a fetched stop condition: one element, bool or number. TypeError
/// naming `what` (e.g. `"stop" on node "trainer"`) for any other tensor.
bool stop_condition_holds(const Tensor& value, std::string_view what);

}  // namespace moka::detail
