// run_job: runs a JobDef (plain-data job) with Caffe2's JobRunner flow (docs/jobs.md §2) through a Session,
// checkpointing every epoch with atomic commit, resume from the newest committed epoch, retention and
// optional background save. This is what `moka job run` executes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moka/defs/job_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/session/node_workspaces.h"
#include "moka/session/session.h"

namespace moka {

/// What happened in one epoch, reported as soon as the epoch (and a foreground save) ends.
struct EpochReport {
  int64_t epoch = 0;              ///< 0 is the checkpoint right after init_group (no epoch ran)
  double seconds = 0;             ///< time in epoch_group
  bool checkpointed = false;      ///< a checkpoint of this epoch was written (or, in background, started)
  bool background = false;        ///< the checkpoint is being written in the background
  uint64_t checkpoint_bytes = 0;  ///< serialized bytes of all checkpointed nodes
  double checkpoint_seconds = 0;  ///< time the epoch loop spent on the checkpoint (snapshot only, in background)
  bool stop = false;              ///< a stop condition held
};

/// A background save that ended, reported on run_job's thread when run_job waits for it: before the
/// next epoch's save, or before download_group after the last epoch.
struct CheckpointWritten {
  int64_t epoch = 0;
  uint64_t bytes = 0;  ///< serialized bytes of all checkpointed nodes: the epoch's EpochReport::checkpoint_bytes
  /// The sum of node_write_seconds: the writer writes the node DBs one after another, so this is its
  /// time on them (each DB opened, written, committed, closed). Not counted: the commit that follows
  /// (read back and digest every DB, write the manifest) and retention.
  double write_seconds = 0;
  /// Each checkpointed node and the seconds its DB took, open to close, in checkpoint order; empty
  /// when !ok.
  std::vector<std::pair<std::string, double>> node_write_seconds{};
  /// False: the save failed and tolerate_save_failures let the job go on (an untolerated failure
  /// throws from run_job instead, and is not reported here).
  bool ok = true;
  std::string error{};  ///< when !ok: the message run_job also puts in JobRunResult::save_errors
};

/// How run_job runs and checkpoints a job.
struct JobRunOptions {
  /// Directory of node checkpoint DBs (`<dir>/<node>.<epoch>`, Caffe2's db_name) and manifests;
  /// empty: no checkpoints.
  std::string checkpoint_dir{};
  /// The checkpoint backend. Empty: the resumed checkpoint's own (it is recorded in its manifest),
  /// minidb for a run from scratch. Given and different from a resumed checkpoint's: InvalidInput.
  std::string db_type{};
  /// Resume from this committed epoch (it must verify); overrides resume_latest.
  std::optional<int64_t> resume_from_epoch{};
  /// Resume from the newest committed epoch that verifies; start from scratch when nothing is
  /// committed. Committed epochs of which none verifies are refused (see `existing`).
  bool resume_latest = false;
  /// What to do with committed checkpoints when not resuming (or when none verifies): refuse
  /// (default, InvalidInput naming the newest), discard them first (`--start-over`), or overwrite.
  ExistingCheckpoints existing = ExistingCheckpoints::refuse;
  /// Resume even when the checkpoint was written by a job with another definition (its manifest
  /// records a digest of the JobDef; a different one is refused by default).
  bool accept_changed_job = false;
  /// Which committed checkpoints to keep (applied after each commit).
  RetentionPolicy retention{};
  /// Snapshot blobs in memory at the epoch boundary and write them while the next epoch runs (at
  /// most one save in flight; the job waits for it before download_group).
  bool background_save = false;
  /// Decision 8: a failed save is fatal unless this is set (then it is counted and the job goes on).
  bool tolerate_save_failures = false;
  /// Passed to every group run (cancellation, exception timeout). A cancelled job throws Cancelled.
  RunOptions run{};
  /// Called after every epoch (and for the initial checkpoint, epoch 0).
  std::function<void(const EpochReport&)> on_epoch{};
  /// With background_save: called once for every background save started (every epoch whose
  /// EpochReport says `background`), in epoch order, on run_job's thread once the save has ended —
  /// written and committed, or failed and tolerated (`ok` false). An epoch's call comes after its
  /// own on_epoch and before the next epoch's, the last one before download_group runs. Not called
  /// for foreground saves (EpochReport::checkpoint_seconds is their whole save), nor for a save
  /// still in flight when the run fails or is cancelled.
  std::function<void(const CheckpointWritten&)> on_checkpoint_written{};
  /// Called once the resume epoch is chosen and verified, before anything loads or runs (only
  /// when resuming was asked for): the epoch (none: from scratch) and the newer epochs skipped.
  std::function<void(const ResumeChoice&)> on_resume{};
};

/// What run_job did.
struct JobRunResult {
  int64_t last_epoch = 0;                                ///< Caffe2's JobRunner.train return value
  std::optional<int64_t> resumed_from;                   ///< the epoch loaded, when resuming
  std::vector<std::pair<int64_t, std::string>> skipped;  ///< newer committed epochs that did not verify
  std::vector<std::string> save_errors;                  ///< tolerated save failures, in order
  std::vector<int64_t> deleted_epochs;                   ///< removed by retention
  /// Temporary files of killed writers removed from the checkpoint directory at the start.
  std::vector<std::string> removed_temporaries;
};

/// @brief Runs job in `nodes` with JobRunner's flow: init_group (unless resuming) → checkpoint 0 →
/// epoch_group, stop conditions, checkpoint E, … until a stop condition holds → download_group →
/// exit_group.
///
/// Checkpoints: each node in job.checkpoint_nodes() saves the local blobs its workspace held after
/// init_group (their names go into the blob `blob_names`, as Caffe2's CheckpointManager does) to
/// `<dir>/<node>.<epoch>`; then the epoch is committed with a manifest (commit_checkpoint). Resuming
/// loads the epoch's files into the node workspaces and continues with the next epoch, so a resumed
/// job ends with the same blobs as one that never stopped.
/// The run holds the checkpoint directory for itself (an flock on `<dir>/moka.lock`, released when
/// the run ends or its process dies): a second run on the same directory fails at once with
/// RuntimeError "checkpoint directory 'D' is in use by another job run (process P holds ...)".
/// Holding it, the run removes the `*.tmp-*` files that killed writers left there.
/// Before anything runs, the directory is checked (prepare_checkpoint_start): a run from scratch over
/// committed checkpoints, a resume with another db_type or another job, committed epochs of which none
/// verifies are refused with InvalidInput. A directory that cannot be written (a read-only mount) can
/// still be resumed from an epoch where the job had finished; a run that would save there is refused.
/// Errors: InvalidInput for a bad job or options (naming what is wrong), NotFound/CorruptData for a
/// requested resume epoch that is not committed or does not verify, Cancelled when options.run.cancel
/// fires, the group's error (with its node) when a group fails; failed saves per tolerate_save_failures.
/// The groups run through `session` (Session::run of each group's definition, stop conditions read
/// with Session::fetch), with the session's own RunOptions; options.run.cancel is also checked
/// between groups. A session whose nodes span processes (MpiSession) runs the job SPMD: every
/// process calls run_job with the same job and options and gets the same result or error; its
/// checkpoints are not supported yet (InvalidInput when options.checkpoint_dir is set).
/// Thread-safety: one run per session at a time.
JobRunResult run_job(const JobDef& job, Session& session, const JobRunOptions& options = {});

/// run_job in a LocalSession over `nodes` (with options.run): the blobs stay in `nodes` afterwards.
/// Thread-safety: one run per NodeWorkspaces at a time.
JobRunResult run_job(const JobDef& job, NodeWorkspaces& nodes, const JobRunOptions& options = {});

}  // namespace moka
