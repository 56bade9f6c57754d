// CheckpointDirLock: the exclusive flock on a checkpoint directory and the sweep of dead writers'
// temporary files (src/job/checkpoint_dir_lock.h).
#include "job/checkpoint_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/storage/db.h"

namespace moka::detail {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::strerror(err); }

// Creates `dir` and any missing parents, each made durable in its own parent; errors name `wanted`.
void create_durably(const fs::path& dir, const std::string& wanted) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  if (dir.has_parent_path() && dir.parent_path() != dir) create_durably(dir.parent_path(), wanted);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw RuntimeError(
        fmt::format("cannot create checkpoint directory '{}': {}: {}", wanted, dir.string(), errno_text(errno)));
  if (!fs::is_directory(dir, ec))
    throw RuntimeError(
        fmt::format("cannot create checkpoint directory '{}': {} exists and is not a directory", wanted, dir.string()));
  fsync_parent_dir(dir.string());
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(const std::string& dir, bool remove_temporaries) {
  create_durably(fs::path(dir), dir);
  const std::string lock_path = dir + "/moka.lock";
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
    // A finished checkpoint on a read-only mount (or one this user may only read) can still be
    // resumed and read: hold it shared, so that no writer starts while it is read.
    writable_ = false;
    read_only_reason_ = fmt::format("cannot open {} for writing: {}", lock_path, errno_text(errno));
    fd_ = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0) lock(LOCK_SH, dir, lock_path);
    return;
  }
  if (fd_ < 0)
    throw RuntimeError(fmt::format("checkpoint directory '{}': cannot open {}: {}", dir, lock_path, errno_text(errno)));
  lock(LOCK_EX, dir, lock_path);
  // The holder's pid, for the message a second run gets (not needed for the lock itself).
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // Harmless: only the message of a refused second run would lack the pid.
  }

  if (!remove_temporaries) return;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (name.find(".tmp-") == std::string::npos || !entry.is_regular_file(type_ec)) continue;
    if (::unlink(entry.path().c_str()) == 0) removed_.push_back(name);
  }
  if (ec) throw RuntimeError(fmt::format("checkpoint directory '{}': cannot list it: {}", dir, ec.message()));
}

void CheckpointDirLock::lock(int operation, const std::string& dir, const std::string& lock_path) {
  int rc = 0;
  do {
    rc = ::flock(fd_, operation | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return;
  const int err = errno;
  char holder[32] = {};
  const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
  ::close(fd_);
  fd_ = -1;
  if (err == EWOULDBLOCK) {
    std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : std::string("unknown");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    throw RuntimeError(fmt::format("checkpoint directory '{}' is in use by another job run (process {} holds {})", dir,
                                   pid, lock_path));
  }
  throw RuntimeError(fmt::format("checkpoint directory '{}': cannot lock {}: {}", dir, lock_path, errno_text(err)));
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace moka::detail
