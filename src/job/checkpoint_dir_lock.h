// CheckpointDirLock: one job run at a time per checkpoint directory (flock on DIR/moka.lock), and the
// removal of temporary files that a killed writer left there.
#pragma once

#include <string>
#include <vector>

namespace moka::detail {

/// @brief Holds the checkpoint directory for one job run.
///
/// The constructor creates `dir` (and its parents, durably) if missing, takes an exclusive `flock`
/// on `dir/moka.lock` without waiting, writes this process's id into it, and then removes the
/// regular files of `dir` whose names hold ".tmp-": minidb files and manifests that were still
/// being written when their writer died (no live writer can own one while the lock is held). The
/// kernel drops the lock when the process dies, SIGKILL included, so a resumed run never finds
/// a stale lock.
///
/// A directory that exists but cannot be written (a read-only mount, or no write permission) is held
/// read-only: a shared flock on an existing `moka.lock` (none when the file cannot be opened), no
/// sweep. Such a run can resume a finished checkpoint and read it, not save: writable() is false.
///
/// Errors: RuntimeError naming the directory when it cannot be created ("cannot create checkpoint
/// directory 'D': ...") or opened, and when another
/// run (in this or another process) holds it: "checkpoint directory 'D' is in use by another job
/// run (process P holds D/moka.lock)".
class CheckpointDirLock {
 public:
  /// `remove_temporaries` false leaves the `.tmp-` files alone (JobRunner: its directory may hold
  /// files that are not moka's).
  explicit CheckpointDirLock(const std::string& dir, bool remove_temporaries = true);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  /// @brief The temporary files the constructor removed (file names, in directory order).
  const std::vector<std::string>& removed_temporaries() const noexcept { return removed_; }
  /// @brief False when the directory is held read-only (see above).
  bool writable() const noexcept { return writable_; }
  /// @brief Why the directory is read-only ("" when writable).
  const std::string& read_only_reason() const noexcept { return read_only_reason_; }

 private:
  void lock(int operation, const std::string& dir, const std::string& lock_path);

  int fd_ = -1;
  bool writable_ = true;
  std::string read_only_reason_;
  std::vector<std::string> removed_;
};

}  // namespace moka::detail
