// JobRunner: runs a Job with Caffe2's flow (docs/jobs.md §2) — init or resume, epochs until a stop
// condition, a checkpoint after every epoch, upload, download, exit; save failures per decision 8.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moka/job/checkpoint_manager.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/job/job.h"
#include "moka/job/upload_task_group_builder.h"

namespace moka {

class LocalSession;
class Session;

/// Optional arguments of JobRunner (Caffe2's keyword arguments, and moka's save policy).
struct JobRunnerOptions {
  /// Resume after this epoch's checkpoint instead of running the init group (needs a manager).
  std::optional<int64_t> resume_from_epoch{};
  /// Builds a TaskGroup run after the last epoch (before the download group).
  std::shared_ptr<UploadTaskGroupBuilder> upload_task_group_builder{};
  /// false (default, decision 8): a failed checkpoint save is logged, counted and rethrown.
  /// true: logged, counted, and training continues, as in Caffe2.
  bool tolerate_save_failures = false;
  /// Where warnings and errors go (default: one line on stderr).
  std::function<void(std::string_view)> log{};
  /// Without resume_from_epoch: resume from the newest committed epoch whose files verify (each
  /// newer epoch skipped is logged with the reason); from scratch when nothing is committed.
  bool resume_latest = false;
  /// Which committed checkpoints to keep, applied after every commit (default: all).
  RetentionPolicy retention{};
  /// What a training from scratch (or a resume_latest that finds nothing that verifies) does with
  /// the committed checkpoints of its directory. Default overwrite: Caffe2's JobRunner wrote over
  /// them, and its tests train several jobs into one directory. refuse or discard as in run_job.
  ExistingCheckpoints existing = ExistingCheckpoints::overwrite;
  /// Snapshot the checkpointed blobs in memory at the end of each epoch and write and commit them
  /// on a thread of their own while the next epoch runs (one save in flight at most; train() waits
  /// for it before the upload group). Needs every node in this process (InvalidInput for a session
  /// spanning processes). A failed background save is reported
  /// under its own epoch when the next save or the end of training waits for it. The metadata
  /// handler gets write(epoch) and report("checkpoint_save", DB path → ns the writer took) once the
  /// save is done, on train()'s thread, as the log is.
  bool background_save = false;
};

/// @brief Runs a Job in a Session, checkpointing after every epoch (Caffe2's JobRunner).
///
/// train(): from scratch, runs the init group, computes the blob lists and saves checkpoint 0;
/// when resuming, skips the init group and loads the blob lists and blobs of resume_from_epoch.
/// Then runs the epoch group, fetches the stop conditions, saves a checkpoint, and stops after
/// the first epoch where any stop condition is true; finally the upload, download and exit groups.
/// @code
///   auto cm = std::make_shared<moka::MultiNodeCheckpointManager>(dir, "minidb");
///   int64_t last = moka::JobRunner(job, cm).train(session);
///   moka::JobRunner(job, cm, {.resume_from_epoch = 2}).train(other_session);  // epochs 3..last
/// @endcode
/// Every checkpoint is committed (docs/architecture.md §6): after the save task group ran, the node DBs are read
/// back and a manifest is written atomically in their directory (moka/job/checkpoint_manifest.h);
/// resuming requires a committed epoch that verifies.
/// The flow is run_job's: both are front ends of one job engine, which makes the start decision,
/// commits, applies retention, saves in the background and handles failed saves; JobRunner runs
/// the groups in its Session and writes and reads the node DBs with the manager's task groups.
/// Differences from Caffe2: a failed save (or commit) ends the training with RuntimeError "Unable
/// to write checkpoint for epoch E. Error=..." unless tolerate_save_failures (decision 8); a job without stop
/// conditions is refused (Caffe2 looped forever); resuming from the epoch whose stop condition ended the job runs no
/// further epoch (decision 13; Caffe2 ran one more). Before anything runs, the directory is checked as run_job checks
/// it (prepare_checkpoint_start): the resumed epoch must verify, have a file for every checkpointed node and the
/// manager's db_type; resume_latest over committed epochs of which none verifies is refused unless `existing` is
/// discard. Node names that cannot be file names and nodes_to_checkpoint naming a node that has no
/// task in any of the job's groups are InvalidInput.
/// One training per checkpoint directory: train() holds `DIR/moka.lock` (the directory of the node
/// DBs) as run_job does, so a second training there, in this process or another, fails at once with
/// RuntimeError "checkpoint directory 'D' is in use by another job run (process P holds ...)". A
/// directory that cannot be made is not locked (its saves fail, decision 8). Unlike run_job, train()
/// leaves the `.tmp-` files of killed writers alone (a db_prefix may be a directory shared with others).
/// Thread-safety: one train() at a time per runner.
class JobRunner {
 public:
  explicit JobRunner(Job job, std::shared_ptr<CheckpointManagerBase> checkpoint_manager = nullptr,
                     JobRunnerOptions options = {});
  JobRunner(Job job, JobRunnerOptions options) : JobRunner(std::move(job), nullptr, std::move(options)) {}
  ~JobRunner();
  JobRunner(JobRunner&&) noexcept;  // not while train() runs
  JobRunner& operator=(JobRunner&&) noexcept;

  /// @brief Runs the job; returns the number of the last epoch run.
  /// InvalidInput: resume_from_epoch without a checkpoint manager, no stop condition. TypeError: a
  /// stop condition that is not a single bool or number (run_job's rule). Errors of the runs propagate.
  int64_t train(Session& session);

  /// @brief Loads the named blobs of epoch's checkpoint into the nodes' workspaces (those each
  /// node's DB has); false when some node's DB for epoch does not exist.
  /// InvalidInput "Checkpoint manager is None ..." without a manager.
  bool load_blobs_from_checkpoints(const std::vector<std::string>& blob_names, int64_t epoch, Session& session);

  /// Number of checkpoint saves that failed (in every train() of this runner).
  int64_t save_failures() const { return save_failures_; }
  /// The message of the last failed save ("" if none).
  const std::string& last_save_error() const { return last_save_error_; }
  const Job& job() const { return job_; }
  const std::shared_ptr<CheckpointManagerBase>& checkpoint_manager() const { return checkpoint_manager_; }
  const std::optional<int64_t>& resume_from_epoch() const { return options_.resume_from_epoch; }

 private:
  // InvalidInput for a node that cannot name a file or has no task in any group of the job.
  void check_nodes_to_checkpoint(const std::vector<std::string>& nodes);
  // In a LocalSession: compiles each group of the job (the session keeps what it compiled) and
  // checks it (check_task_group), so that an unknown operator in a later group fails before the
  // init group runs.
  void check_groups(Session& session);
  // The directory of the node DBs (and manifests) of the manager.
  std::string checkpoint_dir() const;
  void log(std::string_view message) const;

  Job job_;
  std::shared_ptr<CheckpointManagerBase> checkpoint_manager_;
  JobRunnerOptions options_;
  int64_t save_failures_ = 0;
  std::string last_save_error_;
};

}  // namespace moka
