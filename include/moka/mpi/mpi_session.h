// MpiSession: runs Tasks, TaskGroups, steps, plans and nets across the processes of an Open MPI job, each
// node on one rank (docs/distributed.md). Link moka::mpi; nothing here includes <mpi.h>.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moka/builder/plan.h"
#include "moka/builder/task_group.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/task_group_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/session/session.h"

namespace moka {

/// Options of an MpiSession.
struct MpiSessionOptions {
  /// Nodes that must live on a given rank (0 ≤ rank < size). Every other node gets a rank by the
  /// default rule: the k-th such node a run of this session uses (in the order of the compiled
  /// TaskGroup's nodes) goes to rank k mod size.
  std::map<std::string, int> node_ranks{};
  /// Options of every run on this rank (cancellation, exception timeout).
  RunOptions run{};
  /// Keep each compiled runnable's instantiated nets between runs, as LocalSession does.
  bool reuse_nets = true;
};

/// @brief Runs runnables SPMD across the ranks of an MPI job: every rank runs the same program and
/// builds the same runnables; each rank runs the plans of the nodes it hosts, each node in its own
/// workspace as under LocalSession, and `run()` returns on every rank once every node finished, with
/// the same outcome everywhere.
///
/// Before the first run of a runnable the ranks compare a digest of its compiled definition and of
/// moka's version; a difference is an InvalidInput on every rank naming the ranks and the first node
/// that differs. A failed run throws on every rank the error of the lowest rank that failed for
/// a reason other than cancellation, with `rank R` outermost in its path; a run cancelled from outside
/// (options.run.cancel) on any rank throws Cancelled on every rank. After a successful run every
/// TaskOutput is broadcast from the rank of its node, so `fetch()` gives the same value on every rank.
/// Construction and every run are collective: every rank makes its sessions, and runs their runnables,
/// in the same order. MPI is initialized by the first session (MPI_THREAD_MULTIPLE) and finalized at
/// exit. Without a launcher the process is an MPI job of one rank that hosts every node.
/// Thread-safety: one run at a time per session.
class MpiSession final : public Session {
 public:
  explicit MpiSession(MpiSessionOptions options = {});
  ~MpiSession() override;

  void run(TaskGroup& group) override;
  void run(const Task& task) override;
  void run(const ExecutionStep& step) override;
  void run(const Plan& plan) override;
  void run(const Net& net) override;
  /// A compiled TaskGroup as it is (what `moka run GROUP.json` runs under mpirun); its outputs are
  /// read with fetch().
  void run(const TaskGroupDef& group) override;
  void close() override;
  bool is_closed() const override;
  /// This rank's options of later runs (options.run until replaced).
  RunOptions& run_options() noexcept override;

  /// The per-node definition of group (compiling it if needed; not collective).
  const TaskGroupDef& compile(TaskGroup& group) override;

  int rank() const noexcept;  ///< this process's rank
  int size() const noexcept;  ///< the number of ranks
  /// The rank hosting `node`: its entry in node_ranks, or the one a run assigned. NotFound for a node
  /// that neither names.
  int rank_of(const std::string& node) const;
  /// Whether this rank hosts `node`.
  bool hosts(const std::string& node) const override;
  int processes() const noexcept override { return size(); }
  int process() const noexcept override { return rank(); }
  void place(const TaskGroupDef& group) override;
  /// Every rank's `value`, by rank (collective; strings of any length).
  std::vector<std::string> allgather(const std::string& value) override;
  /// A channel on a duplicate of MPI_COMM_WORLD of its own (collective).
  std::unique_ptr<ProcessChannel> open_channel() override;
  /// A node's workspace on the rank that hosts it. InvalidInput on another rank.
  Workspace& workspace(const std::string& node) override;
  /// @brief The value of blob on node, on every rank (collective: the hosting rank broadcasts it).
  /// The same NotFound/TypeError on every rank when the blob is missing or not a filled tensor.
  Tensor fetch(const std::string& node, const std::string& blob) override;
  /// @brief Which of `nodes` hold a blob named `blob` now, in the order given (collective: each rank
  /// answers for the nodes it hosts).
  std::vector<std::string> nodes_with_blob(const std::string& blob, const std::vector<std::string>& nodes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Whether an MPI launcher (mpirun, srun) started this process; MPI is not initialized to find out.
bool launched_by_mpi();
/// Finalizes MPI now if moka initialized it: for a program about to leave with std::_Exit, which skips
/// the finalization at exit (every rank must call it).
void finalize_mpi();

}  // namespace moka
