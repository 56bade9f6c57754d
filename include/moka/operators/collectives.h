// Collectives: common worlds of nodes and the collective operations on them (Allreduce, Broadcast, Allgather,
// Barrier) that the collective operators run, in one process or across processes (docs/collectives.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moka/core/dtype.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/operators/queue_exchange.h"

namespace moka {

/// How Allreduce combines the nodes' values, element by element.
enum class Reduction { sum, max, min, product };
/// "sum", "max", "min", "product" (or nullopt).
std::optional<Reduction> reduction_from_name(std::string_view name);
std::string_view reduction_name(Reduction r);

/// @brief The part of a collective that crosses processes, for a common world whose nodes live in
/// several processes (moka::mpi implements it over an MPI communicator of those processes).
///
/// Processes are numbered 0..processes()-1. A call is agree(), then (when it returned) at most one data
/// movement, then end_call(). agree() is the only wait on other processes that may last (a process
/// still running other work): it returns once every process gave its account of this call, or throws —
/// the same error on every process — when a process's share of the run ended instead (Cancelled when
/// that share stopped, InvalidInput when it finished without making the call). The data movements run
/// only after an agree() that every process passed, so they are bounded.
/// Thread-safety: one call at a time per transport, in the same order in every process.
class CollectiveTransport {
 public:
  virtual ~CollectiveTransport() = default;
  virtual int process() const noexcept = 0;
  virtual int processes() const noexcept = 0;
  /// Every process's `bytes` bytes, by process, into `all` (processes() * bytes). Ends the call when it throws.
  virtual void agree(const void* mine, std::size_t bytes, void* all) = 0;
  /// The call that agree() started is over (after its data movement, if any).
  virtual void end_call() noexcept = 0;
  /// In place: `data` (count elements of dtype) combined element by element across processes.
  virtual void allreduce(void* data, std::size_t count, DType dtype, Reduction r) = 0;
  /// `root`'s bytes into every process's `data`.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Every process's block, concatenated by process into `all`; `bytes_of[p]` is process p's block size.
  virtual void allgatherv(const void* mine, void* all, std::span<const std::size_t> bytes_of) = 0;
};

/// @brief A common world: the nodes that run collectives together (what CreateCommonWorld makes).
///
/// Every collective blocks until every node of the world made the same call, then gives each node the
/// result. Nodes are taken in the order of nodes(): Allgather concatenates in that order and Allreduce
/// combines the nodes of a process in that order, so results are the same run to run. Each node must
/// make the same collectives in the same order; the tensors must have the same dtype and shape on every
/// node, or every node throws the same InvalidInput naming the nodes that differ. cancel() (an operator
/// cancelled while blocked) wakes every wait; the world is then unusable (Cancelled on every later call).
/// Thread-safety: each node calls from one thread at a time; nodes call concurrently.
class CommonWorld {
 public:
  /// `process_of[i]` is the process of node i; `transport` is null when all of them are this process.
  CommonWorld(std::string name, std::vector<std::string> nodes, std::vector<int> process_of,
              std::shared_ptr<CollectiveTransport> transport);
  ~CommonWorld();
  CommonWorld(const CommonWorld&) = delete;
  CommonWorld& operator=(const CommonWorld&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::vector<std::string>& nodes() const noexcept { return nodes_; }
  /// The position of node in nodes(), or -1.
  int index_of(std::string_view node) const;
  /// The nodes of this process, as positions in nodes().
  const std::vector<int>& local_members() const noexcept { return local_; }

  /// `out` = the nodes' `in` combined by r (out may be in).
  void allreduce(int member, const Tensor& in, Tensor& out, Reduction r);
  /// `out` = node root's `in` (out may be in).
  void broadcast(int member, const Tensor& in, Tensor& out, int root);
  /// `out` = the nodes' `in` concatenated along the first dimension (a scalar counts as [1]).
  void allgather(int member, const Tensor& in, Tensor& out);
  /// Returns once every node called it.
  void barrier(int member);
  void cancel();
  /// Node `member` (of this process) finished its share of the run: it makes no more calls, so a call
  /// that waits for it, now or later, is an InvalidInput naming it (not a wait for ever).
  void member_finished(int member);

 private:
  enum class Kind : int32_t { allreduce = 1, broadcast = 2, allgather = 3, barrier = 4 };
  struct Call {
    Kind kind;
    int64_t param;
    const Tensor* in;
    Tensor* out;
  };
  struct LocalCheck {
    int32_t error_kind = 0;  // 0: the calls of this process's nodes agree
    std::string what;
  };
  void collective(int member, const Call& call);
  void perform();
  LocalCheck check_local() const;
  void combine_local(Tensor& acc) const;
  void perform_across_processes(const LocalCheck& check);
  bool perform_inline(std::span<const std::byte* const> data);
  struct Message;
  void gather_strings(const std::vector<Message>& messages, std::string& packed);
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lk, Pred ready);
  [[noreturn]] void throw_cancelled() const;
  [[noreturn]] void throw_finished(int member, const Call& call) const;

  const std::string name_;
  const std::vector<std::string> nodes_;
  const std::vector<int> process_of_;
  const std::shared_ptr<CollectiveTransport> transport_;
  std::vector<int> local_;    // the members of this process, in order
  std::vector<int> slot_of_;  // member -> position in local_, or -1

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> cancelled_{false};
  enum class Phase { gathering, working, leaving } phase_ = Phase::gathering;
  int arrived_ = 0;
  int left_ = 0;
  int finished_ = -1;                       // the first member of this process that finished its share of the run
  std::vector<std::optional<Call>> slots_;  // by position in local_
  std::string error_;                       // of the round being left
  int32_t error_kind_ = 0;
};

/// What a node's CreateCommonWorld stores in its output blob: the world and the node's place in it.
struct CommonWorldHandle {
  std::shared_ptr<CommonWorld> world;
  int member = -1;
};

/// @brief How the nodes of one session (one NodeWorkspaces) find each other's common worlds.
///
/// In a run, the k-th CreateCommonWorld of a node for a given name and node list joins the k-th world of
/// that name and list, whichever node creates it first. Counting starts again with each run, so a run
/// that failed between two nodes' CreateCommonWorld leaves nothing behind. This class serves nodes that all live in
/// this process; moka::mpi derives from it for nodes spread over processes. Thread-safety: every method may be called
/// concurrently.
class CollectiveService {
 public:
  CollectiveService() = default;
  virtual ~CollectiveService() = default;
  CollectiveService(const CollectiveService&) = delete;
  CollectiveService& operator=(const CollectiveService&) = delete;

  /// A run of a TaskGroup of these nodes starts (a world that names no nodes is over them).
  void begin_run(std::vector<std::string> nodes);
  std::vector<std::string> group_nodes() const;
  /// Node `node`'s handle on its next world named `name` over `nodes` (which must include node).
  CommonWorldHandle join(const std::string& node, const std::string& name, const std::vector<std::string>& nodes);
  /// Node `node` finished its share of the run (its plan returned): every world of the run it belongs
  /// to, made already or later, knows it will make no more calls.
  void node_finished(const std::string& node);
  /// Where the nodes find each other's queues (begin_run and node_finished tell it too).
  virtual QueueExchange& queues() { return queues_; }

 protected:
  /// The process of each of nodes, and the transport between those processes (null: all are this one).
  /// InvalidInput when the world cannot be formed. Called once per world, under the service's lock.
  virtual std::shared_ptr<CollectiveTransport> transport_for(const std::string& name,
                                                             const std::vector<std::string>& nodes,
                                                             std::vector<int>& process_of);

 private:
  struct Pending {
    std::shared_ptr<CommonWorld> world;
    std::vector<bool> joined;
    int remaining = 0;
  };
  QueueExchange queues_;
  mutable std::mutex mu_;
  std::vector<std::string> group_nodes_;
  // (name, nodes) -> per node, how many worlds of it the node joined; and worlds not yet joined by all.
  std::map<std::pair<std::string, std::vector<std::string>>, std::map<std::string, int64_t>> joins_;
  std::map<std::tuple<std::string, std::vector<std::string>, int64_t>, Pending> pending_;
  std::vector<std::string> finished_nodes_;             // this run's
  std::vector<std::weak_ptr<CommonWorld>> run_worlds_;  // made this run
};

/// @brief What the collective operators of a workspace know of their node: its name and its session's
/// service. Sessions bind the root workspace of each node (NodeWorkspaces does); a child workspace finds
/// its root's binding.
struct CollectiveBinding {
  std::string node;  ///< empty for a workspace that every node of its session shares
  std::shared_ptr<CollectiveService> service;
};
namespace detail {
/// Binds (or, with service null, unbinds) a node's root workspace. Thread-safety: any thread.
void bind_collectives(const Workspace* root, std::string node, std::shared_ptr<CollectiveService> service);
}  // namespace detail
/// The binding of ws or of the nearest parent that has one; nullopt when none has.
std::optional<CollectiveBinding> find_collective_binding(const Workspace& ws);

}  // namespace moka
