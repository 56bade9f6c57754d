// MpiCollectiveService and the CollectiveTransport over an MPI communicator (src/mpi/mpi_collectives.h).
#include "mpi/mpi_collectives.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "moka/core/blocking.h"
#include "moka/core/error.h"

namespace moka::detail {

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float:
      return MPI_FLOAT;
    case DType::Double:
      return MPI_DOUBLE;
    case DType::Int8:
      return MPI_INT8_T;
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int16:
      return MPI_INT16_T;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    default:
      throw TypeError(fmt::format("Allreduce: no MPI type for {}", dtype_name(t)));
  }
}

MPI_Op mpi_op(Reduction r) {
  switch (r) {
    case Reduction::sum:
      return MPI_SUM;
    case Reduction::max:
      return MPI_MAX;
    case Reduction::min:
      return MPI_MIN;
    case Reduction::product:
      return MPI_PROD;
  }
  return MPI_SUM;
}

// Agreements are point to point (MPI_Isend/MPI_Irecv with every other process of the world): over shared
// memory that takes a third of the time of Open MPI's MPI_Iallgather (an 8-byte Allreduce cost 3.6 times
// MPI_Allreduce with it), and the last message of a share (below) can stand in for a process's account.
// A process sends and receives processes() - 1 small messages per call.
constexpr int kAgreementTag = 1;  // the agreements and ends of shares: the only point to point traffic

// Before each account a process sends: what it is.
enum class Frame : uint64_t {
  account = 1,   // the process makes this call; its account follows
  finished = 2,  // the process's share of the run finished without making more calls
  stopped = 3,   // the process's share failed or was cancelled
};

}  // namespace

// The CollectiveTransport of one world's ranks. Every process sends one message per call of the run,
// and a last one when its share of the run ends (a frame saying how it ended), to every other process,
// in order; a waiting process therefore always gets an answer — the account, or the end of a share
// that will never make the call — and never has to abandon a wait that MPI cannot cancel. At the end of
// the run, drain() reads every message up to each process's last, so the channel is empty for the next.
// The data moves with MPI's blocking collectives: every process passed the same agreement, so all of
// them make the call.
class MpiTransport final : public CollectiveTransport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    ended_.assign(static_cast<std::size_t>(size_), Frame::account);
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Request& r : last_sends_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    MPI_Comm_free(&comm_);
  }

  int process() const noexcept override { return rank_; }
  int processes() const noexcept override { return size_; }

  void agree(const void* mine, std::size_t bytes, void* all) override {
    {
      std::lock_guard lk(mu_);
      if (last_ != Frame::account)
        throw Cancelled("collective: this process's share of the run is stopping (an error elsewhere, or a stop)");
      for (int r = 0; r < size_; ++r)
        if (ended_[static_cast<std::size_t>(r)] != Frame::account) throw_ended(r, ended_[static_cast<std::size_t>(r)]);
      busy_ = true;
    }
    try {
      exchange(mine, bytes, all);
    } catch (...) {
      end_call();
      throw;
    }
  }

  void end_call() noexcept override {
    std::lock_guard lk(mu_);
    busy_ = false;
    if (last_ != Frame::account && !last_posted_) post_last_locked();
  }

  // The run's share on this process ends (finished or stopped): the last message goes out now, or when
  // the call in progress ends. The first reason given counts.
  void end_share(Frame how) {
    std::lock_guard lk(mu_);
    if (last_ == Frame::account) last_ = how;
    if (!busy_ && !last_posted_) post_last_locked();
  }

  // Reads every message the other processes sent this run, up to each one's last; then the channel is
  // empty and the transport ready for the next run. After end_share(), with no call in progress.
  void drain() {
    std::vector<std::byte> buf;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || ended_[static_cast<std::size_t>(r)] != Frame::account) continue;  // its last came already
      for (;;) {
        MPI_Status st;
        check_mpi(MPI_Probe(r, kAgreementTag, comm_, &st), "MPI_Probe");
        int count = 0;
        check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count");
        buf.resize(std::max<std::size_t>(static_cast<std::size_t>(count), sizeof(Frame)));
        check_mpi(MPI_Recv(buf.data(), count, MPI_BYTE, r, kAgreementTag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
        Frame f{};
        std::memcpy(&f, buf.data(), sizeof f);
        if (f != Frame::account) break;
      }
    }
    std::lock_guard lk(mu_);
    if (!last_sends_.empty())
      check_mpi(MPI_Waitall(static_cast<int>(last_sends_.size()), last_sends_.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall");
    last_sends_.clear();
    last_ = Frame::account;
    last_posted_ = false;
    std::fill(ended_.begin(), ended_.end(), Frame::account);
  }

  void allreduce(void* data, std::size_t count, DType dtype, Reduction r) override {
    auto* p = static_cast<std::byte*>(data);
    const std::size_t elem = dtype_size(dtype);
    while (count > 0) {
      const std::size_t n = std::min<std::size_t>(count, INT_MAX);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p, static_cast<int>(n), mpi_type(dtype), mpi_op(r), comm_),
                "MPI_Allreduce");
      p += n * elem;
      count -= n;
    }
  }

  void broadcast(void* data, std::size_t bytes, int root) override { broadcast_bytes(comm_, data, bytes, root); }

  void allgatherv(const void* mine, void* all, std::span<const std::size_t> bytes_of) override {
    std::vector<int> counts, displs;
    std::size_t total = 0;
    for (std::size_t b : bytes_of) total += b;
    if (total > static_cast<std::size_t>(INT_MAX)) {
      // 2 GiB or more in all: more than one MPI_Allgatherv can count, so each process's block is
      // broadcast from it in turn (in pieces under 2 GiB).
      auto* out = static_cast<std::byte*>(all);
      std::size_t start = 0;
      for (int p = 0; p < size_; ++p) {
        const std::size_t n = bytes_of[static_cast<std::size_t>(p)];
        if (p == rank_ && n) std::memcpy(out + start, mine, n);
        broadcast_bytes(comm_, out + start, n, p);
        start += n;
      }
      return;
    }
    std::size_t start = 0;
    for (std::size_t b : bytes_of) {
      counts.push_back(static_cast<int>(b));
      displs.push_back(static_cast<int>(start));
      start += b;
    }
    check_mpi(MPI_Allgatherv(mine, counts[static_cast<std::size_t>(rank_)], MPI_BYTE, all, counts.data(), displs.data(),
                             MPI_BYTE, comm_),
              "MPI_Allgatherv");
  }

 private:
  // Sends this process's framed account to every other process and waits for theirs (every one of them
  // sends one for this call, or the last message of its share). Throws, the same on every process, when
  // a process's share ended instead.
  void exchange(const void* mine, std::size_t bytes, void* all) {
    const std::size_t framed = sizeof(Frame) + bytes;
    std::vector<std::byte> out(framed), in(framed * static_cast<std::size_t>(size_));
    const Frame account = Frame::account;
    std::memcpy(out.data(), &account, sizeof account);
    std::memcpy(out.data() + sizeof account, mine, bytes);
    const int count = static_cast<int>(framed);
    std::memcpy(in.data() + framed * static_cast<std::size_t>(rank_), out.data(), framed);
    std::vector<MPI_Request> requests(2 * static_cast<std::size_t>(size_ - 1), MPI_REQUEST_NULL);
    std::size_t next = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      check_mpi(MPI_Irecv(in.data() + framed * static_cast<std::size_t>(r), count, MPI_BYTE, r, kAgreementTag, comm_,
                          &requests[next++]),
                "MPI_Irecv");
      check_mpi(MPI_Isend(out.data(), count, MPI_BYTE, r, kAgreementTag, comm_, &requests[next++]), "MPI_Isend");
    }
    // Spin on MPI_Testall first (other ranks are usually there already), then poll every 50 us. No
    // cancellation ends this wait: a process that stops sends its last message, which ends it.
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (done) break;
      if (polls < 2000) continue;
      if (detail::t_fiber != nullptr) {
        detail::t_fiber->yield(std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1));
        continue;
      }
      BlockingScope blocking;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::optional<int> stopped, finished;
    {
      std::lock_guard lk(mu_);
      for (int r = 0; r < size_; ++r) {
        Frame f{};
        std::memcpy(&f, in.data() + framed * static_cast<std::size_t>(r), sizeof f);
        if (f == Frame::account) {
          std::memcpy(static_cast<std::byte*>(all) + bytes * static_cast<std::size_t>(r),
                      in.data() + framed * static_cast<std::size_t>(r) + sizeof f, bytes);
          continue;
        }
        ended_[static_cast<std::size_t>(r)] = f;  // its last message: drain() must not wait for it
        if (f == Frame::stopped && !stopped) stopped = r;
        if (f == Frame::finished && !finished) finished = r;
      }
    }
    if (stopped) throw_ended(*stopped, Frame::stopped);
    if (finished) throw_ended(*finished, Frame::finished);
  }

  // The error of a call that process r's end of share answered, the same on every process.
  [[noreturn]] static void throw_ended(int r, Frame how) {
    if (how == Frame::stopped)
      throw Cancelled(
          fmt::format("collective cancelled: the share of the run on process {} of its common world stopped", r));
    throw InvalidInput(fmt::format(
        "collective: the nodes of process {} of its common world finished their share of the run without making "
        "this call (every node must make the same collectives in the same order)",
        r));
  }

  void post_last_locked() {
    last_posted_ = true;
    last_frame_ = last_;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      last_sends_.push_back(MPI_REQUEST_NULL);
      MPI_Isend(&last_frame_, sizeof last_frame_, MPI_BYTE, r, kAgreementTag, comm_, &last_sends_.back());
    }
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::mutex mu_;
  bool busy_ = false;                  // a call is between agree() and end_call()
  Frame last_ = Frame::account;        // how the share ended; account: it has not
  bool last_posted_ = false;           // the last message went out
  Frame last_frame_ = Frame::account;  // what it carries (alive until its sends complete)
  std::vector<MPI_Request> last_sends_;
  std::vector<Frame> ended_;  // by process: account while its share goes on, else how it ended
};

namespace {

// Calls f(op) on every operator of net, and of the nets nested in its operators' arguments.
template <class F>
void for_each_operator(const NetDef& net, F& f) {
  for (const OperatorDef& op : net.op) {
    f(op);
    for (const Argument& a : op.arg) {
      if (a.n) for_each_operator(*a.n, f);
      if (a.nets)
        for (const NetDef& n : *a.nets) for_each_operator(n, f);
    }
  }
}

}  // namespace

void MpiCollectiveService::prepare(const TaskGroupDef& def, const std::function<int(const std::string&)>& rank_of) {
  std::vector<std::string> all;
  std::map<std::string, int> ranks;
  for (const NodePlanDef& n : def.nodes) {
    all.push_back(n.node);
    ranks[n.node] = rank_of(n.node);
  }
  queues_.new_run(std::move(ranks));
  std::set<std::pair<std::string, std::vector<std::string>>> wanted;
  auto visit = [&](const OperatorDef& op) {
    if (op.type != "CreateCommonWorld" || op.output.empty()) return;
    std::string name = op.output[0];
    std::vector<std::string> nodes = all;
    for (const Argument& a : op.arg) {
      if (a.name == "name" && a.s) name = *a.s;
      if (a.name == "nodes" && a.strings && !a.strings->empty()) nodes = *a.strings;
    }
    wanted.emplace(std::move(name), std::move(nodes));
  };
  for (const NodePlanDef& n : def.nodes)
    for (const NetDef& net : n.plan.network) for_each_operator(net, visit);

  std::lock_guard lk(mu_);
  for (const std::string& node : all) rank_of_[node] = rank_of(node);
  // Every rank walks the same sorted set with the same worlds_ (both follow from the definition, which
  // the ranks compared, and from runs every rank saw): the splits match.
  for (const auto& key : wanted) {
    if (worlds_.count(key)) continue;
    World w;
    bool unknown = false;
    for (const std::string& node : key.second) {
      auto it = rank_of_.find(node);
      if (it == rank_of_.end()) {
        unknown = true;  // CreateCommonWorld names a node the run lacks: its run() says so
        break;
      }
      w.ranks.push_back(it->second);
    }
    if (unknown) continue;
    std::sort(w.ranks.begin(), w.ranks.end());
    w.ranks.erase(std::unique(w.ranks.begin(), w.ranks.end()), w.ranks.end());
    if (w.ranks.size() > 1) {
      const bool member = std::binary_search(w.ranks.begin(), w.ranks.end(), comm_.rank());
      MPI_Comm c = comm_.split(member);
      if (member) w.transport = std::make_shared<MpiTransport>(c);
    }
    worlds_.emplace(key, std::move(w));
  }
  // The transports this run uses: each ends its share and drains once the run's share on this rank is over.
  active_.clear();
  for (const auto& key : wanted) {
    auto it = worlds_.find(key);
    if (it != worlds_.end() && it->second.transport &&
        std::find(active_.begin(), active_.end(), it->second.transport) == active_.end())
      active_.push_back(it->second.transport);
  }
}

void MpiCollectiveService::reset() {
  std::lock_guard lk(mu_);
  worlds_.clear();
  active_.clear();
}

void MpiCollectiveService::end_share(bool stopped) {
  std::lock_guard lk(mu_);
  for (const auto& t : active_) t->end_share(stopped ? Frame::stopped : Frame::finished);
}

void MpiCollectiveService::drain() {
  std::vector<std::shared_ptr<MpiTransport>> active;
  {
    std::lock_guard lk(mu_);
    active = active_;
  }
  for (const auto& t : active) t->drain();
}

std::shared_ptr<CollectiveTransport> MpiCollectiveService::transport_for(const std::string& name,
                                                                         const std::vector<std::string>& nodes,
                                                                         std::vector<int>& process_of) {
  std::lock_guard lk(mu_);
  auto it = worlds_.find({name, nodes});
  if (it == worlds_.end())
    throw InvalidInput(
        fmt::format("CreateCommonWorld \"{}\" over [{}]: the run's definition holds no such CreateCommonWorld (under "
                    "MpiSession a world is made from the definition, before the run; its name and nodes must be "
                    "arguments of the operator, or its defaults)",
                    name, fmt::join(nodes, ", ")));
  const World& w = it->second;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int rank = rank_of_.at(nodes[i]);
    process_of[i] = static_cast<int>(std::lower_bound(w.ranks.begin(), w.ranks.end(), rank) - w.ranks.begin());
  }
  return w.transport;
}

}  // namespace moka::detail
