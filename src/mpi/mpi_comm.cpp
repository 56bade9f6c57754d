// MpiComm: MPI initialization, the session communicator and its collectives (src/mpi/mpi_comm.h).
#include "mpi/mpi_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "moka/core/error.h"
#include "mpi/mpi_helper_thread.h"

namespace moka::detail {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw RuntimeError(fmt::format("MPI: {} failed: {}", what, len > 0 ? std::string(text, len) : "unknown error"));
}

namespace {

bool initialized_here = false;

struct FinalizeHooks {
  std::mutex mu;
  uint64_t next = 0;
  std::map<uint64_t, std::function<void()>> stops;
};
FinalizeHooks& finalize_hooks() {
  static auto* hooks = new FinalizeHooks;  // never destroyed: exit handlers may still use it
  return *hooks;
}

void finalize_at_exit() { finalize_mpi_now(); }

}  // namespace

uint64_t before_finalize(std::function<void()> stop) {
  FinalizeHooks& h = finalize_hooks();
  std::lock_guard lock(h.mu);
  h.stops.emplace(h.next, std::move(stop));
  return h.next++;
}

void forget_before_finalize(uint64_t id) {
  FinalizeHooks& h = finalize_hooks();
  std::lock_guard lock(h.mu);
  h.stops.erase(id);
}

void finalize_mpi_now() {
  if (!initialized_here) return;
  {
    FinalizeHooks& h = finalize_hooks();
    std::lock_guard lock(h.mu);  // a destructor that forgets its hook meanwhile waits until it has run
    for (auto& [id, stop] : h.stops) stop();
    h.stops.clear();
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_mpi_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
    int provided = 0;
    if (!initialized) {
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      initialized_here = true;
      std::atexit(finalize_at_exit);
    } else {
      check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
    }
    if (provided < MPI_THREAD_MULTIPLE)
      throw RuntimeError(
          fmt::format("MPI: moka needs MPI_THREAD_MULTIPLE (operators call MPI from worker threads); this MPI "
                      "library gives level {}",
                      provided));
  });
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var)) return true;
  return false;
}

MpiComm::MpiComm() {
  ensure_mpi_initialized();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &notices_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(notices_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MPI_Comm MpiComm::split(bool member) const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &out), "MPI_Comm_split");
  if (out != MPI_COMM_NULL) check_mpi(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return out;
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (notices_ != MPI_COMM_NULL) MPI_Comm_free(&notices_);
}

std::vector<uint64_t> MpiComm::allgather(uint64_t value) const {
  std::vector<uint64_t> all(static_cast<size_t>(size_));
  check_mpi(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
  return all;
}

std::vector<uint64_t> MpiComm::allgather(uint64_t a, uint64_t b) const {
  const uint64_t mine[2] = {a, b};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size_));
  check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm_), "MPI_Allgather");
  return all;
}

namespace {
int as_count(size_t n) {
  if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw RuntimeError(fmt::format("MPI: a message of {} bytes is larger than one MPI call carries (2 GiB)", n));
  return static_cast<int>(n);
}
}  // namespace

std::vector<std::string> MpiComm::allgather(const std::string& value) const {
  return allgather(value, allgather(static_cast<uint64_t>(value.size())));
}

std::vector<std::string> MpiComm::allgather(const std::string& value, const std::vector<uint64_t>& sizes) const {
  std::vector<int> counts(sizes.size());
  std::vector<int> displs(sizes.size());
  size_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    counts[r] = as_count(sizes[r]);
    displs[r] = as_count(total);
    total += sizes[r];
  }
  std::string all(total, '\0');
  check_mpi(MPI_Allgatherv(value.data(), as_count(value.size()), MPI_CHAR, all.data(), counts.data(), displs.data(),
                           MPI_CHAR, comm_),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  out.reserve(sizes.size());
  for (size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(displs[r], sizes[r]));
  return out;
}

std::string MpiComm::broadcast(std::string value, int root) const {
  uint64_t size = value.size();
  check_mpi(MPI_Bcast(&size, 1, MPI_UINT64_T, root, comm_), "MPI_Bcast");
  value.resize(size);
  check_mpi(MPI_Bcast(value.data(), as_count(size), MPI_CHAR, root, comm_), "MPI_Bcast");
  return value;
}

void broadcast_bytes(MPI_Comm comm, void* data, std::size_t bytes, int root) {
  auto* p = static_cast<std::byte*>(data);
  while (bytes > 0) {
    const std::size_t n = std::min<std::size_t>(bytes, std::numeric_limits<int>::max());
    check_mpi(MPI_Bcast(p, static_cast<int>(n), MPI_BYTE, root, comm), "MPI_Bcast");
    p += n;
    bytes -= n;
  }
}

namespace {
constexpr int kNoticeTag = 1;
// What a notice carries. Static: a send that a destructor frees unfinished may still read it.
constexpr int kNoticePayload = 1;
}  // namespace

FailureNotices::FailureNotices(const MpiComm& comm) : comm_(comm) {}

FailureNotices::~FailureNotices() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Left early (an exception between begin and drain): nothing may stay posted.
  if (receive_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&receive_);
    MPI_Wait(&receive_, MPI_STATUS_IGNORE);
  }
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

void FailureNotices::begin(CancelToken& cancel) {
  if (comm_.size() == 1) return;  // nobody to hear from
  std::lock_guard lock(mu_);
  received_ = false;
  if (receive_ == MPI_REQUEST_NULL)
    check_mpi(MPI_Irecv(&payload_, 1, MPI_INT, MPI_ANY_SOURCE, kNoticeTag, comm_.notices_, &receive_), "MPI_Irecv");
  cancel_ = &cancel;
  if (!watcher_.joinable()) watcher_ = std::thread([this] { watch(); });
  if (asleep_) wake_.notify_all();
}

void FailureNotices::watch() {
  // Between runs it naps a millisecond at a time for a while (a next run needs no wake-up: waking it
  // cost a run ~9 µs), then sleeps until begin() wakes it.
  constexpr auto kNapsFor = std::chrono::milliseconds(100);
  auto idle_since = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!shutdown_) {
    if (cancel_ == nullptr) {
      if (std::chrono::steady_clock::now() - idle_since < kNapsFor) {
        wake_.wait_for(lock, std::chrono::milliseconds(1));
      } else {
        asleep_ = true;
        wake_.wait(lock, [&] { return cancel_ != nullptr || shutdown_; });
        asleep_ = false;
      }
      continue;
    }
    idle_since = std::chrono::steady_clock::now();
    int done = 0;
    mpi_call([&] { return MPI_Test(&receive_, &done, MPI_STATUS_IGNORE); });
    if (done) {
      received_ = true;
      receive_ = MPI_REQUEST_NULL;
      // Under the lock: end() waits for it, so the token outlives the call.
      cancel_->cancel();
      cancel_ = nullptr;
      continue;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(1));
  }
}

bool FailureNotices::received() const {
  std::lock_guard lock(mu_);
  return received_;
}

void FailureNotices::end() {
  std::lock_guard lock(mu_);
  cancel_ = nullptr;
}

void FailureNotices::notify_others() {
  for (int r = 0; r < comm_.size(); ++r) {
    if (r == comm_.rank()) continue;
    sends_.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(&kNoticePayload, 1, MPI_INT, r, kNoticeTag, comm_.notices_, &sends_.back()), "MPI_Isend");
  }
}

void FailureNotices::drain(int expected) {
  if (comm_.size() == 1) return;
  std::lock_guard lock(mu_);  // the watcher is idle (end() came first); this keeps it so
  if (received_) {
    --expected;  // the posted receive completed (MPI_Test freed it)
  } else if (expected > 0) {
    check_mpi(MPI_Wait(&receive_, MPI_STATUS_IGNORE), "MPI_Wait");
    --expected;
  } else {
    check_mpi(MPI_Cancel(&receive_), "MPI_Cancel");
    check_mpi(MPI_Wait(&receive_, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  receive_ = MPI_REQUEST_NULL;
  received_ = false;
  for (; expected > 0; --expected) {
    int payload = 0;
    check_mpi(MPI_Recv(&payload, 1, MPI_INT, MPI_ANY_SOURCE, kNoticeTag, comm_.notices_, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  if (!sends_.empty())
    check_mpi(MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  sends_.clear();
}

}  // namespace moka::detail
