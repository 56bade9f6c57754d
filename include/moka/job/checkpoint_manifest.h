// Committed checkpoints: the per-epoch manifest that makes an epoch's node files one atomic checkpoint,
// verification of committed epochs, choosing the epoch to resume from, and retention
// (docs/checkpoint-format.md). A checkpoint directory is self-contained: manifests name their files
// relative to it, and nothing here reads or deletes anything outside it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moka {

/// @brief What a DB holds, independent of its backend: entry count, key+value bytes and an XXH3-64
/// digest over every (key, value) in key order. Two DBs with the same entries give the same digest
/// whatever their db_type or on-disk layout (LevelDB and LMDB rewrite files when opened, so a file
/// checksum could not be re-checked).
struct DbDigest {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
  bool operator==(const DbDigest&) const = default;
};

/// @brief One node's DB in a committed checkpoint.
struct CheckpointFile {
  std::string node;  ///< node name
  /// The DB's name inside the checkpoint directory (`<node>.<epoch>`): one path component, never
  /// absolute, so a copied or moved directory resumes from its own files (checkpoint_db_path).
  std::string db;
  DbDigest digest;
  bool operator==(const CheckpointFile&) const = default;
};

/// @brief The manifest of one committed epoch (format: docs/checkpoint-format.md §10).
struct CheckpointManifest {
  int64_t epoch = 0;
  std::string db_type;
  std::vector<CheckpointFile> files;  ///< one per checkpointed node, in node order
  /// A stop condition held after this epoch: the job's epoch loop was finished, so resuming from
  /// here runs no further epoch (moka's decision 13; Caffe2 would run one more).
  bool stop = false;
  /// A digest of the definition of the job that wrote this epoch (run_job: its JobDef); empty when
  /// the writer did not record one. Resuming with another job is refused (ResumeRequest).
  std::string job{};
  bool operator==(const CheckpointManifest&) const = default;
};

/// @brief `dir/moka-manifest.<epoch>.json`: where the manifest of `epoch` lives.
std::string manifest_path(const std::string& dir, int64_t epoch);

/// @brief Where a manifest's file lies: `dir/<file.db>`.
std::string checkpoint_db_path(const std::string& dir, const CheckpointFile& file);

/// @brief Checks that a node name can become part of a file name in a checkpoint directory: not
/// empty, not "." or "..", no '/', '\\', NUL or other control character. InvalidInput naming the
/// node otherwise (a node "../x" would write and delete outside the directory).
void check_checkpoint_node_name(std::string_view node);

/// @brief The manifest as JSON (stable field order; the format docs/checkpoint-format.md specifies).
std::string to_json(const CheckpointManifest& manifest);
/// @brief Parses a manifest; CorruptData naming `where` when it is not a valid version-1 manifest.
CheckpointManifest manifest_from_json(std::string_view text, std::string_view where);

/// @brief Reads every entry of the DB (verifying every checksum the backend has) and digests it.
/// Throws NotFound when there is no DB at path, CorruptData/RuntimeError naming the file otherwise.
DbDigest digest_db(const std::string& db_type, const std::string& path);

/// @brief Writes bytes to `path` so that a crash at any instant leaves either the old file or the
/// complete new one: temporary file in the same directory, write, fsync, rename, directory fsync.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// @brief Commits epoch `epoch`: digests each node's DB (read back after Save, so a file that did
/// not reach the disk intact is caught before it is trusted), then writes the manifest atomically.
/// Before this returns the epoch does not exist for resume; after it, it does.
/// node_dbs: (node, db path) pairs; every DB must lie directly in `dir` (InvalidInput otherwise: the
/// checkpoint would not be self-contained). Throws (naming the node and file) when a DB cannot be
/// read. `job`: CheckpointManifest::job.
/// Thread-safety: one commit per directory at a time.
CheckpointManifest commit_checkpoint(const std::string& dir, int64_t epoch, const std::string& db_type,
                                     const std::vector<std::pair<std::string, std::string>>& node_dbs,
                                     bool stop = false, const std::string& job = {});

/// @brief The first half of commit_checkpoint: the file entries of `node_dbs` (each DB read back and
/// digested, each checked to lie in `dir`), in the order given. A process of a job that spans
/// processes digests the DBs it wrote; one of them then writes the manifest of all (write_manifest).
std::vector<CheckpointFile> digest_checkpoint_files(const std::string& dir, int64_t epoch, const std::string& db_type,
                                                    const std::vector<std::pair<std::string, std::string>>& node_dbs);
/// @brief The second half: writes `manifest` atomically as `manifest_path(dir, manifest.epoch)`
/// (creating `dir` if needed). InvalidInput for a manifest without files or db_type.
void write_manifest(const std::string& dir, const CheckpointManifest& manifest);
/// @brief Uncommits epoch `epoch` if an earlier run committed it: removes its manifest and fsyncs
/// `dir`, so that the epoch stops counting before its DBs are overwritten. Does nothing when there
/// is no manifest. Throws RuntimeError naming the manifest when it exists and cannot be removed.
void uncommit_checkpoint(const std::string& dir, int64_t epoch);

/// @brief Epochs that have a manifest in `dir`, ascending (not verified). Empty when dir is missing.
std::vector<int64_t> committed_epochs(const std::string& dir);

/// @brief The committed epoch `epoch` of `dir`, or the newest committed one: its manifest, read
/// (not verified). NotFound when there is none.
CheckpointManifest read_checkpoint_manifest(const std::string& dir, std::optional<int64_t> epoch = std::nullopt);

/// @brief Reads the manifest of `epoch` and checks every node DB against it, and that it has a file
/// for each of `nodes` (when given). Throws NotFound when the epoch has no manifest, CorruptData
/// naming the manifest, node and file otherwise. `digested`: only the files of these nodes are read
/// and digested (a process that checks the files of the nodes it hosts); none: every file.
CheckpointManifest verify_checkpoint(const std::string& dir, int64_t epoch, const std::vector<std::string>& nodes = {},
                                     const std::optional<std::vector<std::string>>& digested = std::nullopt);

/// @brief The result of looking for the epoch to resume from.
struct ResumeChoice {
  std::optional<int64_t> epoch;                          ///< newest committed epoch that verifies
  std::vector<std::pair<int64_t, std::string>> skipped;  ///< newer committed epochs that did not, and why
  std::optional<CheckpointManifest> manifest;            ///< the manifest of `epoch`, as verified
};

/// @brief The newest committed epoch in `dir` whose files all verify (and that has a file for each of
/// `nodes`, when given); newer epochs that fail are listed with the reason. No epoch when nothing
/// usable is committed.
ResumeChoice find_resume_epoch(const std::string& dir, const std::vector<std::string>& nodes = {});

/// What a run does with the committed checkpoints it finds when it starts without resuming.
enum class ExistingCheckpoints {
  /// Refuse to start (InvalidInput naming the newest committed epoch): a run from scratch would
  /// overwrite them. run_job's default.
  refuse,
  /// Start; each epoch's save overwrites that epoch (Caffe2's JobRunner, whose tests train several
  /// jobs into one directory). JobRunner's default.
  overwrite,
  /// Delete every committed checkpoint first (manifest, then files), then start: `--start-over`.
  discard,
};

/// @brief How a run wants to start: the one decision both job runners (run_job, JobRunner) make
/// before anything runs.
struct ResumeRequest {
  std::optional<int64_t> epoch{};                              ///< resume from exactly this epoch (it must verify)
  bool latest = false;                                         ///< resume from the newest epoch that verifies
  ExistingCheckpoints existing = ExistingCheckpoints::refuse;  ///< when not resuming, or nothing verifies
  std::vector<std::string> nodes{};  ///< the nodes the run checkpoints: the epoch must have each
  std::string db_type{};             ///< the backend asked for; empty: whatever the checkpoint has
  std::string job{};                 ///< CheckpointManifest::job of this run; empty: not checked
  bool accept_changed_job = false;   ///< resume even when the checkpoint's job digest differs
};

/// @brief How prepare_checkpoint_start reaches the directory when several processes take one start
/// decision together (the job engine under a session that spans processes); empty members are one
/// process's own: committed_epochs(dir), verify_checkpoint(dir, epoch, request.nodes), deleting.
struct CheckpointStartHooks {
  /// The committed epochs, ascending, that every process considers.
  std::function<std::vector<int64_t>()> committed{};
  /// Verifies one committed epoch (throws an Error when it does not verify); returns its manifest.
  std::function<CheckpointManifest(int64_t epoch)> verify{};
  /// Whether this process deletes what ExistingCheckpoints::discard discards.
  bool deletes = true;
};

/// @brief Decides where a run starts and prepares the directory for it.
///
/// Resuming (epoch or latest): the chosen manifest, verified, after checking that its db_type is
/// `db_type` (when given) and its job `job` (when both recorded). `latest` with committed epochs of
/// which none verifies is refused unless `existing` is discard (each epoch's reason is in the
/// message). Not resuming: per `existing`. Nothing is changed on disk before every check passed;
/// with discard the old checkpoints are deleted last. Errors: InvalidInput (exit 2 in the CLI) for a
/// refused start, a mismatched db_type or job; NotFound/CorruptData for an `epoch` that is not
/// committed or does not verify.
ResumeChoice prepare_checkpoint_start(const std::string& dir, const ResumeRequest& request,
                                      const CheckpointStartHooks& hooks = {});

/// @brief Deletes every committed checkpoint of `dir` (manifest first, then its DBs; manifests that
/// cannot be read are deleted alone). Returns the epochs deleted, ascending.
std::vector<int64_t> discard_checkpoints(const std::string& dir);

/// @brief Which committed checkpoints retention keeps.
struct RetentionPolicy {
  int64_t keep_last = 0;   ///< keep the newest N committed epochs; 0 keeps all
  int64_t keep_every = 0;  ///< also keep every epoch divisible by K; 0 = none
};

/// @brief The epochs of `committed` (ascending) that the policy does not keep: all but the newest
/// keep_last, less those divisible by keep_every, never the newest. InvalidInput for a negative policy.
std::vector<int64_t> retention_drops(const std::vector<int64_t>& committed, const RetentionPolicy& policy);

/// @brief Deletes committed checkpoints the policy does not keep (retention_drops): the manifest first (so the epoch
/// stops existing atomically), then its node DBs. Never deletes the newest committed epoch, nor an
/// epoch whose manifest cannot be read (it is left for a person to inspect). Returns the deleted epochs, ascending.
std::vector<int64_t> apply_retention(const std::string& dir, const RetentionPolicy& policy);

}  // namespace moka
