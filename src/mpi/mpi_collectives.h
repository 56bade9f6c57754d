// MpiCollectiveService: common worlds whose nodes live on several ranks, each with an MPI communicator of
// those ranks made before the run that uses it (docs/collectives.md §3).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "moka/defs/task_group_def.h"
#include "moka/operators/collectives.h"
#include "mpi/mpi_comm.h"
#include "mpi/mpi_queue_exchange.h"

namespace moka::detail {

class MpiTransport;

/// @brief The CollectiveService of an MpiSession.
///
/// A world's communicator cannot be made when its first node reaches CreateCommonWorld: making one is
/// a wait on other ranks that nothing could cancel. So before each run, on every rank at once,
/// prepare() reads every CreateCommonWorld of the run's definition (which every rank holds whole),
/// and makes — in the same order everywhere — a communicator for each (name, nodes) that spans more
/// than one rank and has none yet. Worlds of one (name, nodes) share it: a node makes them one after
/// the other, so their calls never interleave. When this rank's share of a run ends (or is cancelled),
/// end_share() sends each world's other processes the end of its share; drain() then reads theirs. After
/// a failed run reset() drops every world; the next run makes new ones.
class MpiCollectiveService final : public CollectiveService {
 public:
  explicit MpiCollectiveService(const MpiComm& comm) : comm_(comm) {}

  /// Queues shared by nodes on several ranks.
  QueueExchange& queues() override { return queues_; }
  /// Collective over every rank; `rank_of` gives each node's rank.
  void prepare(const TaskGroupDef& def, const std::function<int(const std::string&)>& rank_of);
  /// Collective over every rank (every rank knows the run failed).
  void reset();
  /// This rank's share of the run is over (`stopped`: it failed or was cancelled) or stopping: every
  /// world of the run tells its other processes, so that none waits for a call this rank will not make.
  /// Not collective; any thread (a cancellation's callback too).
  void end_share(bool stopped);
  /// After end_share(): reads what the other ranks sent this run, up to the end of each one's share, so
  /// every world starts the next run with nothing in flight. Waits for every rank of each world to end
  /// its share.
  void drain();

 protected:
  std::shared_ptr<CollectiveTransport> transport_for(const std::string& name, const std::vector<std::string>& nodes,
                                                     std::vector<int>& process_of) override;

 private:
  struct World {
    std::vector<int> ranks;                   // sorted; the communicator's process p is ranks[p]
    std::shared_ptr<MpiTransport> transport;  // null on a rank outside the world
  };
  const MpiComm& comm_;
  MpiQueueExchange queues_;
  std::mutex mu_;
  std::map<std::string, int> rank_of_;                                        // node -> rank, as of prepare()
  std::map<std::pair<std::string, std::vector<std::string>>, World> worlds_;  // (name, nodes)
  std::vector<std::shared_ptr<MpiTransport>> active_;                         // of the run prepare() began
};

}  // namespace moka::detail
