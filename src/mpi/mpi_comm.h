// MpiComm: moka's own duplicate of MPI_COMM_WORLD and the few collectives the sessions need, with every
// MPI error turned into a moka RuntimeError (the only file pair that includes <mpi.h>, with mpi_ops.cpp).
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moka/exec/cancel_token.h"

namespace moka::detail {

/// @brief Initializes MPI for this process once (MPI_THREAD_MULTIPLE: operators on worker threads call
/// it), and finalizes it at exit when moka was the one that initialized it.
/// RuntimeError when the MPI library cannot give MPI_THREAD_MULTIPLE.
void ensure_mpi_initialized();

/// @brief Finalizes MPI now if ensure_mpi_initialized() initialized it and it is not finalized yet, after
/// running every before_finalize() function.
void finalize_mpi_now();

/// @brief Registers `stop`, which finalize_mpi_now() runs before it finalizes MPI: a helper thread that
/// polls MPI must stop first when its session is still alive at exit (Python may never destroy one).
/// Returns the id forget_before_finalize() takes. Thread-safe.
uint64_t before_finalize(std::function<void()> stop);
void forget_before_finalize(uint64_t id);

/// @brief Whether this process was started by an MPI launcher (mpirun, srun) with more than one rank
/// or at all: the launchers' environment variables, without initializing MPI.
bool launched_by_mpi();

/// @brief MPI_Bcast of `bytes` bytes of any size from `root` into every process's `data` on comm.
void broadcast_bytes(MPI_Comm comm, void* data, std::size_t bytes, int root);

/// @brief A communicator of every rank (MPI_Comm_dup of MPI_COMM_WORLD, errors returned, not fatal).
/// Construction and every method are collective over all ranks unless said otherwise.
/// Thread-safety: one thread at a time per object (MPI itself runs with MPI_THREAD_MULTIPLE).
class MpiComm {
 public:
  MpiComm();
  ~MpiComm();
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const noexcept { return rank_; }  ///< not collective
  int size() const noexcept { return size_; }  ///< not collective
  /// Every rank's value, by rank.
  std::vector<uint64_t> allgather(uint64_t value) const;
  /// Every rank's two values, by rank: {a0, b0, a1, b1, ...}.
  std::vector<uint64_t> allgather(uint64_t a, uint64_t b) const;
  /// Every rank's string, by rank (strings of any length).
  std::vector<std::string> allgather(const std::string& value) const;
  /// The same when every rank knows every rank's length already (`sizes`, by rank).
  std::vector<std::string> allgather(const std::string& value, const std::vector<uint64_t>& sizes) const;
  /// `root`'s value on every rank (the argument is ignored elsewhere).
  std::string broadcast(std::string value, int root) const;
  /// `root`'s `bytes` bytes into every rank's `data` (any size: MPI_Bcast in pieces under 2 GiB).
  void broadcast_bytes(void* data, std::size_t bytes, int root) const {
    detail::broadcast_bytes(comm_, data, bytes, root);
  }
  /// A new communicator of the ranks that pass member = true, ordered by rank (MPI_COMM_NULL on the
  /// others); errors returned. The caller frees it.
  MPI_Comm split(bool member) const;

 private:
  friend class FailureNotices;
  friend class MpiQueueExchange;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm notices_ = MPI_COMM_NULL;  // FailureNotices' own traffic, apart from the collectives
  int rank_ = 0;
  int size_ = 1;
};

/// @brief While a run is in progress on every rank: a rank whose share failed (or was cancelled from
/// outside) tells the others at once, and their runs are cancelled (fail-stop without waiting for the
/// slowest rank). Point to point messages on the communicator's notice channel, watched by a thread of
/// its own that polls a posted receive every millisecond while a run is in progress (one thread for the
/// session's life: starting one per run cost ~100 µs of every run).
///
/// Per run: begin(the run's token) (posts the receive), notify_others() if this rank's share failed and
/// received() is false, end(), then — once every rank has told the others whether it sent notices —
/// drain(the number of other ranks that sent them), which leaves the channel empty for the next run.
/// Not collective itself. Thread-safety: one thread calls the methods.
class FailureNotices {
 public:
  explicit FailureNotices(const MpiComm& comm);
  ~FailureNotices();
  FailureNotices(const FailureNotices&) = delete;
  FailureNotices& operator=(const FailureNotices&) = delete;

  /// A run starts: a notice from now on cancels `cancel` (which must outlive end()).
  void begin(CancelToken& cancel);
  /// Whether a notice arrived since begin() (and cancelled the run).
  bool received() const;
  /// Sends a notice to every other rank.
  void notify_others();
  /// The run is over on this rank: the watcher no longer touches the token.
  void end();
  /// Receives every notice the other ranks sent this run (`expected` in all) and completes this
  /// rank's own sends.
  void drain(int expected);

 private:
  void watch();

  const MpiComm& comm_;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  int payload_ = 0;
  std::vector<MPI_Request> sends_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  CancelToken* cancel_ = nullptr;  // while a run is in progress
  bool shutdown_ = false;
  bool asleep_ = false;  // the watcher waits for begin() to wake it
  bool received_ = false;
  std::thread watcher_;  // started by the first begin()
};

/// @brief Throws RuntimeError "MPI: <what> failed: <MPI's message>" unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* what);

}  // namespace moka::detail
