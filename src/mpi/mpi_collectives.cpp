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

// An agreement's requests (an MPI_Iallgather, or one send and one receive per other process) and the
// buffers they send from and receive into.
struct AgreementInFlight {
  std::vector<MPI_Request> requests;
  std::vector<std::byte> mine, all;
};

// Up to this many processes an agreement is point to point (MPI_Isend/MPI_Irecv with every other
// process): over shared memory that takes a third of the time of Open MPI's MPI_Iallgather, which made a
// small Allreduce cost 3.6 times MPI_Allreduce. Larger worlds use MPI_Iallgather (O(log n) steps).
constexpr int kPointToPointAgreementUpTo = 8;
constexpr int kAgreementTag = 1;  // the world communicator's point to point traffic is only this

// Keeps an abandoned agreement's buffers for the rest of the process. A cancelled agreement leaves its
// MPI_Iallgather posted (MPI has no way to cancel a collective): any later MPI call on this process may
// still progress it and write what other ranks sent into its buffers, so they are never freed. The
// communicator is not used again (a failed run remakes every world), so this costs a few hundred bytes
// per rank and abandoned collective, no more.
void keep_until_exit(std::unique_ptr<AgreementInFlight> wait) {
  struct Kept {
    std::mutex mu;
    std::vector<std::unique_ptr<AgreementInFlight>> waits;
  };
  static Kept* const kept = new Kept;  // never destroyed: MPI may progress these up to MPI_Finalize and past exit()
  std::lock_guard lk(kept->mu);
  kept->waits.push_back(std::move(wait));
}

// The CollectiveTransport of one world's ranks: agree() is a polled exchange that a cancellation
// abandons; the data moves with MPI's blocking collectives (tuned, and bounded once every rank agreed).
class MpiTransport final : public CollectiveTransport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int process() const noexcept override { return rank_; }
  int processes() const noexcept override { return size_; }

  void agree(const void* mine, std::size_t bytes, void* all, const std::atomic<bool>& cancelled) override {
    // The request reads and writes buffers of its own: a cancellation can abandon it but MPI cannot cancel
    // a collective, so what it may still touch has to outlive the caller's buffers (see keep_until_exit).
    auto wait = std::make_unique<AgreementInFlight>();
    wait->mine.assign(static_cast<const std::byte*>(mine), static_cast<const std::byte*>(mine) + bytes);
    wait->all.resize(bytes * static_cast<std::size_t>(size_));
    const int count = static_cast<int>(bytes);
    if (size_ <= kPointToPointAgreementUpTo) {
      std::memcpy(wait->all.data() + bytes * static_cast<std::size_t>(rank_), mine, bytes);
      wait->requests.assign(2 * static_cast<std::size_t>(size_ - 1), MPI_REQUEST_NULL);
      std::size_t next = 0;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        check_mpi(MPI_Irecv(wait->all.data() + bytes * static_cast<std::size_t>(r), count, MPI_BYTE, r, kAgreementTag,
                            comm_, &wait->requests[next++]),
                  "MPI_Irecv");
        check_mpi(MPI_Isend(wait->mine.data(), count, MPI_BYTE, r, kAgreementTag, comm_, &wait->requests[next++]),
                  "MPI_Isend");
      }
    } else {
      wait->requests.assign(1, MPI_REQUEST_NULL);
      check_mpi(MPI_Iallgather(wait->mine.data(), count, MPI_BYTE, wait->all.data(), count, MPI_BYTE, comm_,
                               wait->requests.data()),
                "MPI_Iallgather");
    }
    // Spin on MPI_Testall first (other ranks are usually there already), then poll every 50 us.
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(wait->requests.size()), wait->requests.data(), &done, MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (done) {
        std::memcpy(all, wait->all.data(), wait->all.size());
        return;
      }
      if (cancelled.load()) {
        keep_until_exit(std::move(wait));
        throw Cancelled("collective cancelled while waiting for the other ranks of its common world");
      }
      if (polls < 2000) continue;
      if (detail::t_fiber != nullptr) {
        detail::t_fiber->yield(std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1));
        continue;
      }
      BlockingScope blocking;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
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
    for (std::size_t b : bytes_of) {
      if (total + b > INT_MAX)
        throw InvalidInput(fmt::format(
            "Allgather: {} bytes or more across ranks; Allgather over MPI moves less than 2 GiB", total + b));
      counts.push_back(static_cast<int>(b));
      displs.push_back(static_cast<int>(total));
      total += b;
    }
    check_mpi(MPI_Allgatherv(mine, counts[static_cast<std::size_t>(rank_)], MPI_BYTE, all, counts.data(), displs.data(),
                             MPI_BYTE, comm_),
              "MPI_Allgatherv");
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

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
  for (const NodePlanDef& n : def.nodes) all.push_back(n.node);
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
}

void MpiCollectiveService::reset() {
  std::lock_guard lk(mu_);
  worlds_.clear();
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
