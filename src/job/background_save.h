// BackgroundSave: a checkpoint save in two halves — a snapshot of the nodes' blobs in memory at the
// epoch boundary, then the writing and committing of it on a thread of its own while the next epoch
// runs. Shared by run_job and JobRunner.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace moka {
class Workspace;
}

namespace moka::detail {

/// @brief One save in flight at most: snapshot() each node, start() the writer, wait() for it.
///
/// snapshot() serializes blobs exactly as Save does (same records, so the same DB digests) into
/// buffers kept from the previous snapshot: a snapshot copies every checkpointed byte each epoch,
/// and into fresh memory that copy is mostly page faults. start() writes every snapshot to its DB
/// (New mode, one commit, close) and then runs `then` (the commit) on a thread of its own.
/// Thread-safety: one thread calls every method; only start()'s writer and `then` run elsewhere,
/// and they touch nothing but the snapshots and what `then` captures. The destructor waits for a
/// save in flight (ignoring its error).
class BackgroundSave {
 public:
  BackgroundSave();
  ~BackgroundSave();
  BackgroundSave(const BackgroundSave&) = delete;
  BackgroundSave& operator=(const BackgroundSave&) = delete;

  /// @brief Snapshots `blobs` of `ws` for the DB at `db_path`; returns the bytes captured.
  /// NotFound naming `node` and the blob when one no longer exists; serialization errors propagate.
  /// Call for every node, then start(); a snapshot that throws is dropped by the next start() or
  /// discard().
  uint64_t snapshot(const std::string& node, const std::string& db_path, const Workspace& ws,
                    const std::vector<std::string>& blobs);
  /// @brief Writes the snapshots taken since the last start() with `db_type`, then runs `then`, on a
  /// thread of its own, with the error the writing met (null when every DB was written): `then` runs
  /// either way (across processes it must tell the others), and what it throws is the save's error.
  /// Requires no save in flight (wait() first).
  void start(int64_t epoch, const std::string& db_type, std::function<void(std::exception_ptr)> then);
  /// @brief Drops the snapshots taken since the last start() (after a failed snapshot()).
  void discard();
  bool in_flight() const noexcept;
  /// @brief The epoch of the save in flight (or of the last one started).
  int64_t epoch() const noexcept { return epoch_; }
  /// @brief Waits for the save in flight, if any, and rethrows its error. Its buffers go to the
  /// next snapshot either way.
  void wait();
  /// @brief wait() that drops the save's error (after another failure, or in a destructor).
  void settle() noexcept;
  /// @brief How long the last save that wait() found successful took to write each DB (DB path →
  /// ns, open to close, as the foreground save's timed task measures Save); empty after a failure.
  const std::vector<std::pair<std::string, int64_t>>& write_ns() const noexcept { return write_ns_; }

 private:
  struct Node;
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
  std::shared_ptr<std::vector<Node>> taking_;   // snapshots taken since the last start()
  std::shared_ptr<std::vector<Node>> writing_;  // the snapshots the save in flight writes
  std::future<void> pending_;
  int64_t epoch_ = 0;
  std::vector<std::pair<std::string, int64_t>> write_ns_;
};

}  // namespace moka::detail
