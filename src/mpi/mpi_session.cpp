// MpiSession: compiled runnables run SPMD across MPI ranks, each rank running the nodes it hosts
// (include/moka/mpi/mpi_session.h, docs/distributed.md).
#include "moka/mpi/mpi_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

#include "core/error_record.h"
#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/exec/cancel_token.h"
#include "moka/session/node_workspaces.h"
#include "moka/session/run_task_group.h"
#include "moka/storage/blob_serializer.h"
#include "mpi/length_prefixed.h"
#include "mpi/mpi_collectives.h"
#include "mpi/mpi_comm.h"
#include "session/compiled_runnables.h"

#ifndef MOKA_VERSION_STRING
#define MOKA_VERSION_STRING "unknown"
#endif

namespace moka {
namespace {

uint64_t digest_of(std::string_view text) {
  return xxh3_64(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

// One fetched value as it crosses ranks: 'V' and the serialized blob, or 'E' and an error record.
std::string value_record(const NodeWorkspaces& nodes, const std::string& node, const std::string& blob) {
  try {
    return "V" + serialize_blob_to_string(blob, nodes.tensor_blob(node, blob));
  } catch (...) {
    return "E" + detail::error_record(std::current_exception());
  }
}

// What a fetch of a value record gives: the tensor, or the error the owning rank met.
struct FetchedValue {
  std::optional<Tensor> value;
  std::string error;  // an error record
};

FetchedValue decode_value(const std::string& record) {
  FetchedValue v;
  if (!record.empty() && record[0] == 'V') {
    Blob blob;
    deserialize_blob(std::string_view(record).substr(1), blob);
    v.value = blob.get<Tensor>();
  } else if (!record.empty() && record[0] == 'E') {
    v.error = record.substr(1);
  } else {
    throw RuntimeError("MpiSession: an unreadable value from another rank");
  }
  return v;
}

Tensor value_or_throw(const FetchedValue& v) {
  if (!v.value) detail::rethrow_record(v.error);
  return *v.value;
}

// The TaskOutput values of one compiled runnable, as broadcast after its last successful run.
struct OutputValues {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, FetchedValue> values;  // (node, blob)

  Tensor get(const std::string& node, const std::string& blob) {
    std::lock_guard lock(mu);
    auto it = values.find({node, blob});
    if (it == values.end())
      throw RuntimeError(
          fmt::format("output \"{}\" of node \"{}\" has no value: no run that sets it has succeeded", blob, node));
    return value_or_throw(it->second);
  }
};

// The first line where two "node\tdigest" lists differ, described.
std::string first_difference(const std::string& a, const std::string& b, int rank_b) {
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < s.size()) {
      size_t end = s.find('\n', start);
      if (end == std::string::npos) end = s.size();
      out.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  auto name = [](const std::string& line) { return line.substr(0, line.find('\t')); };
  const auto la = lines(a);
  const auto lb = lines(b);
  for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    if (i < la.size() && i < lb.size() && la[i] == lb[i]) continue;
    if (i >= la.size()) return fmt::format("rank {} has an extra node \"{}\"", rank_b, name(lb[i]));
    if (i >= lb.size()) return fmt::format("rank {} lacks node \"{}\"", rank_b, name(la[i]));
    if (name(la[i]) == "moka version")
      return fmt::format("moka versions differ ({} and {})", la[i].substr(13), lb[i].substr(13));
    if (name(la[i]) != name(lb[i]))
      return fmt::format("node \"{}\" on rank 0 is node \"{}\" on rank {}", name(la[i]), name(lb[i]), rank_b);
    return fmt::format("node \"{}\" has another plan", name(la[i]));
  }
  return "the group names differ";
}

}  // namespace

struct MpiSession::State {
  explicit State(MpiSessionOptions o) : options(std::move(o)) {}

  MpiSessionOptions options;
  detail::MpiComm comm;
  std::shared_ptr<detail::MpiCollectiveService> collectives = std::make_shared<detail::MpiCollectiveService>(comm);
  std::shared_ptr<NodeWorkspaces> workspaces = std::make_shared<NodeWorkspaces>(false, collectives);
  detail::FailureNotices notices{comm};
  detail::CompiledRunnables compiled;  // after workspaces: its prepared groups use them
  std::map<std::string, int> ranks;    // every node with a rank: node_ranks, then those runs assigned
  int64_t next_default = 0;            // how many nodes the default rule placed
  bool closed = false;
  bool verify_next_run = false;  // after a failed run: compare definitions again before making worlds

  void check_open() const {
    if (closed) throw InvalidInput("Session is closed.");
  }

  int rank_of(const std::string& node) const {
    auto it = ranks.find(node);
    if (it == ranks.end())
      throw NotFound(
          fmt::format("MpiSession: node \"{}\" has no rank (no run of this session used it and "
                      "MpiSessionOptions::node_ranks does not name it)",
                      node));
    return it->second;
  }

  void place(const std::string& node) {
    if (ranks.count(node)) return;
    ranks[node] = static_cast<int>(next_default++ % comm.size());
  }

  // Same program, same answer: the ranks compare the digest of the definition (and of moka's version).
  void verify(detail::CompiledRunnable& c) const {
    std::string listing = fmt::format("group\t{}\n", c.def.name);
    for (const NodePlanDef& n : c.def.nodes) {
      TaskGroupDef one;
      one.nodes.push_back(n);
      listing += fmt::format("{}\t{:016x}\n", n.node, digest_of(comparison_json(one)));
    }
    listing += fmt::format("moka version\t{}", MOKA_VERSION_STRING);
    c.digest = digest_of(listing);
    const std::vector<uint64_t> digests = comm.allgather(c.digest);
    if (std::all_of(digests.begin(), digests.end(), [&](uint64_t d) { return d == digests.front(); })) return;
    const std::vector<std::string> listings = comm.allgather(listing);
    std::vector<int> same, other;
    for (int r = 0; r < comm.size(); ++r) (digests[r] == digests.front() ? same : other).push_back(r);
    throw InvalidInput(
        fmt::format("MpiSession: the ranks built different definitions of one runnable (every rank must run the same "
                    "program): ranks {} have rank 0's, ranks {} another; {}",
                    fmt::join(same, ","), fmt::join(other, ","),
                    first_difference(listings.front(), listings[other.front()], other.front())));
  }

  void run_compiled(detail::CompiledRunnable& c) {
    check_open();
    if (!c.checked || verify_next_run) {
      verify(c);
      c.checked = true;
      verify_next_run = false;
    }
    for (const NodePlanDef& n : c.def.nodes) place(n.node);
    collectives->prepare(c.def, [this](const std::string& node) { return rank_of(node); });
    if (!c.session_data) c.session_data = std::make_shared<OutputValues>();
    auto values = std::static_pointer_cast<OutputValues>(c.session_data);
    for (auto& [node, outs] : c.outputs) {
      if (outs.set_by(c.serial)) continue;
      outs.set_values(
          outs.names(), [values, node = node](const std::string& blob) { return values->get(node, blob); }, c.serial);
    }
    // This rank's share — the plans of the nodes it hosts — cancelled when another rank's share fails.
    auto cancel = std::make_shared<CancelToken>();
    std::optional<CancelToken::Subscription> from_outside;
    if (options.run.cancel) from_outside.emplace(options.run.cancel->subscribe([t = cancel.get()] { t->cancel(); }));
    RunOptions run = options.run;
    run.cancel = cancel;
    notices.begin(*cancel);
    // A cancelled share tells the other processes of its worlds at once: none waits for its calls.
    std::optional<CancelToken::Subscription> stop_worlds;
    stop_worlds.emplace(cancel->subscribe([c = collectives.get()] { c->end_share(true); }));
    struct EndNotices {  // the watcher lets go of the token on every way out
      detail::FailureNotices& n;
      ~EndNotices() { n.end(); }
    } end_notices{notices};
    std::string error;
    try {
      const bool hosts_any = std::any_of(c.def.nodes.begin(), c.def.nodes.end(),
                                         [&](const NodePlanDef& n) { return rank_of(n.node) == comm.rank(); });
      auto prepare_mine = [&] {
        TaskGroupDef mine;
        mine.name = c.def.name;
        for (const NodePlanDef& n : c.def.nodes)
          if (rank_of(n.node) == comm.rank()) mine.nodes.push_back(n);
        std::vector<std::string> all;  // a world that names no nodes is over the whole group
        for (const NodePlanDef& n : c.def.nodes) all.push_back(n.node);
        return std::make_unique<PreparedTaskGroup>(mine, *workspaces, all);
      };
      if (hosts_any && !options.reuse_nets) {
        prepare_mine()->run(run);
      } else if (hosts_any) {
        if (!c.prepared) c.prepared = prepare_mine();
        c.prepared->run(run);
      }
    } catch (...) {
      error = detail::error_record(std::current_exception());
    }
    // A run cancelled from outside (a signal, the caller's token) may end without an error; it fails
    // on every rank, so all of them stop together (a job's next group would otherwise run without it).
    if (error.empty() && options.run.cancel && options.run.cancel->cancelled())
      error = detail::error_record(
          std::make_exception_ptr(Cancelled(fmt::format("run cancelled on rank {}", comm.rank()))));
    const bool stopped_here = !error.empty();
    const bool notify = stopped_here && !notices.received();
    if (notify) notices.notify_others();
    notices.end();
    stop_worlds.reset();
    collectives->end_share(stopped_here);
    collectives->drain();
    // This rank's outputs, described now, so that the word every rank sends next also says how long
    // its description is.
    std::string description;
    if (!stopped_here && !c.outputs.empty()) description = describe_outputs(c);
    // Every rank learns who failed and who sent notices; the notices are drained; then the same
    // outcome on every rank: the first failure that is not a cancellation, else the first one.
    // With it goes the digest of the runnable each rank ran: ranks that ran different ones (a
    // program whose ranks call runs in different orders) fail together.
    const std::vector<uint64_t> words = comm.allgather(
        uint64_t{error.empty() ? 0u : 1u} | (notify ? 2u : 0u) | (static_cast<uint64_t>(description.size()) << 2),
        c.digest);
    std::vector<uint64_t> status(static_cast<size_t>(comm.size()));
    std::vector<int> same, other;
    for (int r = 0; r < comm.size(); ++r) {
      status[r] = words[2 * static_cast<size_t>(r)];
      (words[2 * static_cast<size_t>(r) + 1] == words[1] ? same : other).push_back(r);
    }
    int expected = 0;
    bool any_failed = false;
    for (int r = 0; r < comm.size(); ++r) {
      if (r != comm.rank() && (status[r] & 2u)) ++expected;
      any_failed = any_failed || (status[r] & 1u);
    }
    notices.drain(expected);
    if (!other.empty()) {
      collectives->reset();
      verify_next_run = true;
      throw InvalidInput(fmt::format(
          "MpiSession: the ranks ran different runnables in one run (every rank must run the same runnables in the "
          "same order): ranks {} ran rank 0's, ranks {} another",
          fmt::join(same, ","), fmt::join(other, ",")));
    }
    if (any_failed) {
      collectives->reset();    // the next run starts on fresh communicators,
      verify_next_run = true;  // made only once the ranks compared what they run
      const std::vector<std::string> errors = comm.allgather(error);
      std::optional<int> failed;
      for (int r = 0; r < comm.size(); ++r) {
        if (errors[r].empty()) continue;
        if (!failed || (detail::is_cancelled_record(errors[*failed]) && !detail::is_cancelled_record(errors[r])))
          failed = r;
      }
      detail::rethrow_record(errors[*failed], *failed);
    }
    if (!c.outputs.empty()) {
      std::vector<uint64_t> sizes(status.size());
      for (size_t r = 0; r < status.size(); ++r) sizes[r] = status[r] >> 2;
      receive_outputs(c, *values, description, sizes);
    }
  }

  // This rank's description of the outputs of the nodes it hosts, in the order of the definition.
  std::string describe_outputs(const detail::CompiledRunnable& c) const {
    std::string description;
    for (const NodePlanDef& n : c.def.nodes)
      if (!n.outputs.empty() && rank_of(n.node) == comm.rank())
        for (const std::string& blob : n.outputs)
          detail::append_record(description, describe_output(*workspaces, n.node, blob));
    return description;
  }

  // After a successful run: every rank's description (one allgather; `sizes` came with the outcome),
  // then the bytes of each numeric output too large to travel in it, with MPI_Bcast from its owner,
  // straight into the previous run's buffer when the shape is unchanged (no serialization).
  void receive_outputs(const detail::CompiledRunnable& c, OutputValues& values, const std::string& description,
                       const std::vector<uint64_t>& sizes) {
    std::vector<std::vector<std::string>> records(sizes.size());
    if (std::any_of(sizes.begin(), sizes.end(), [](uint64_t n) { return n > 0; })) {
      const std::vector<std::string> all = comm.allgather(description, sizes);
      for (size_t r = 0; r < all.size(); ++r) records[r] = detail::split_records(all[r], "MpiSession");
    }
    std::vector<size_t> next(sizes.size(), 0);
    for (const NodePlanDef& n : c.def.nodes) {
      if (n.outputs.empty()) continue;
      const int owner = rank_of(n.node);
      std::vector<FetchedValue> got(n.outputs.size());
      {
        std::lock_guard lock(values.mu);  // the previous values: their buffers are reused
        for (size_t i = 0; i < n.outputs.size(); ++i) {
          auto it = values.values.find({n.node, n.outputs[i]});
          if (it != values.values.end()) got[i] = std::move(it->second);
        }
      }
      const std::vector<std::string>& from = records[static_cast<size_t>(owner)];
      size_t& k = next[static_cast<size_t>(owner)];
      for (size_t i = 0; i < n.outputs.size(); ++i, ++k) {
        if (k >= from.size())
          throw RuntimeError(
              fmt::format("MpiSession: rank {} described {} outputs, fewer than its nodes have", owner, from.size()));
        if (!receive_description(from[k], got[i])) continue;
        if (owner == comm.rank()) got[i].value->copy_from(workspaces->tensor_blob(n.node, n.outputs[i]).get<Tensor>());
        comm.broadcast_bytes(got[i].value->raw_mutable_data(), got[i].value->nbytes(), owner);
      }
      std::lock_guard lock(values.mu);
      for (size_t i = 0; i < n.outputs.size(); ++i) values.values[{n.node, n.outputs[i]}] = std::move(got[i]);
    }
  }

  // Numeric outputs of at most this many bytes travel in the description.
  static constexpr size_t kInlineOutputBytes = 64 * 1024;

  // On the owner: how the output crosses — an error, a serialized string tensor, or a numeric tensor's
  // dtype and shape with its bytes ('R') or without them, for bytes that follow ('L').
  static std::string describe_output(const NodeWorkspaces& nodes, const std::string& node, const std::string& blob) {
    try {
      const Blob& b = nodes.tensor_blob(node, blob);
      const Tensor& t = b.get<Tensor>();
      if (t.dtype() == DType::String) return "V" + serialize_blob_to_string(blob, b);
      const bool inline_bytes = t.nbytes() <= kInlineOutputBytes;
      std::string r = inline_bytes ? "R" : "L";
      const auto dtype = static_cast<int32_t>(t.dtype());
      const auto ndim = static_cast<uint64_t>(t.shape().size());
      r.append(reinterpret_cast<const char*>(&dtype), sizeof dtype);
      r.append(reinterpret_cast<const char*>(&ndim), sizeof ndim);
      if (ndim) r.append(reinterpret_cast<const char*>(t.shape().data()), ndim * sizeof(int64_t));
      if (inline_bytes && t.nbytes()) r.append(reinterpret_cast<const char*>(t.raw_data()), t.nbytes());
      return r;
    } catch (...) {
      return "E" + detail::error_record(std::current_exception());
    }
  }

  // On every rank: `into` as the description says — a numeric tensor with its bytes ('R'), or sized for
  // bytes that follow ('L': returns true), or a serialized value or an error.
  static bool receive_description(const std::string& record, FetchedValue& into) {
    if (record.empty() || (record[0] != 'R' && record[0] != 'L')) {
      into = decode_value(record);
      return false;
    }
    int32_t dtype = 0;
    uint64_t ndim = 0;
    const size_t head = 1 + sizeof dtype + sizeof ndim;
    if (record.size() < head) throw RuntimeError("MpiSession: a truncated output record");
    std::memcpy(&dtype, record.data() + 1, sizeof dtype);
    std::memcpy(&ndim, record.data() + 1 + sizeof dtype, sizeof ndim);
    if (ndim > 64 || record.size() < head + ndim * sizeof(int64_t))
      throw RuntimeError("MpiSession: a truncated output record");
    std::vector<int64_t> shape(ndim);
    if (ndim) std::memcpy(shape.data(), record.data() + head, ndim * sizeof(int64_t));
    into.error.clear();
    if (!into.value) into.value.emplace();
    into.value->resize_for_overwrite(static_cast<DType>(dtype), shape);
    const size_t data_at = head + ndim * sizeof(int64_t);
    if (record[0] == 'L') return true;
    if (record.size() != data_at + into.value->nbytes()) throw RuntimeError("MpiSession: a truncated output record");
    if (into.value->nbytes())
      std::memcpy(into.value->raw_mutable_data(), record.data() + data_at, into.value->nbytes());
    return false;
  }
};

MpiSession::MpiSession(MpiSessionOptions options) : state_(std::make_unique<State>(std::move(options))) {
  for (const auto& [node, rank] : state_->options.node_ranks) {
    if (rank < 0 || rank >= size())
      throw InvalidInput(
          fmt::format("MpiSessionOptions::node_ranks: node \"{}\" is mapped to rank {}, but the job "
                      "has ranks 0..{}",
                      node, rank, size() - 1));
    state_->ranks[node] = rank;
  }
}

MpiSession::~MpiSession() = default;

void MpiSession::run(TaskGroup& group) { state_->run_compiled(state_->compiled.get(group)); }
void MpiSession::run(const Task& task) { state_->run_compiled(state_->compiled.get(task)); }
void MpiSession::run(const ExecutionStep& step) { state_->run_compiled(state_->compiled.get(step)); }
void MpiSession::run(const Plan& plan) { state_->run_compiled(state_->compiled.get(plan, "MpiSession")); }
void MpiSession::run(const Net& net) { state_->run_compiled(state_->compiled.get(net)); }
void MpiSession::run(const TaskGroupDef& group) { state_->run_compiled(state_->compiled.get(group)); }
void MpiSession::close() { state_->closed = true; }
bool MpiSession::is_closed() const { return state_->closed; }

const TaskGroupDef& MpiSession::compile(TaskGroup& group) { return state_->compiled.get(group).def; }

int MpiSession::rank() const noexcept { return state_->comm.rank(); }
RunOptions& MpiSession::run_options() noexcept { return state_->options.run; }
int MpiSession::size() const noexcept { return state_->comm.size(); }
int MpiSession::rank_of(const std::string& node) const { return state_->rank_of(node); }

namespace {
// A channel between the ranks on communicators of its own, for another thread than the session's.
class MpiChannel final : public ProcessChannel {
 public:
  int process() const noexcept override { return comm_.rank(); }
  int processes() const noexcept override { return comm_.size(); }
  std::vector<std::string> allgather(const std::string& value) override { return comm_.allgather(value); }

 private:
  detail::MpiComm comm_;
};
}  // namespace

std::unique_ptr<ProcessChannel> MpiSession::open_channel() {
  state_->check_open();
  return std::make_unique<MpiChannel>();
}

void MpiSession::place(const TaskGroupDef& group) {
  for (const NodePlanDef& n : group.nodes) state_->place(n.node);
}

std::vector<std::string> MpiSession::allgather(const std::string& value) {
  state_->check_open();
  return state_->comm.allgather(value);
}

bool MpiSession::hosts(const std::string& node) const {
  auto it = state_->ranks.find(node);
  return it != state_->ranks.end() && it->second == rank();
}

Workspace& MpiSession::workspace(const std::string& node) {
  const int owner = rank_of(node);
  if (owner != rank())
    throw InvalidInput(fmt::format("MpiSession: node \"{}\" lives on rank {}, not on this rank ({}); use fetch()", node,
                                   owner, rank()));
  return state_->workspaces->node(node);
}

Tensor MpiSession::fetch(const std::string& node, const std::string& blob) {
  const int owner = rank_of(node);
  std::string record;
  if (owner == rank()) record = value_record(*state_->workspaces, node, blob);
  return value_or_throw(decode_value(state_->comm.broadcast(std::move(record), owner)));
}

std::vector<std::string> MpiSession::nodes_with_blob(const std::string& blob, const std::vector<std::string>& nodes) {
  std::string mine(nodes.size(), '0');  // '1' where a node this rank hosts has the blob
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Workspace* ws = hosts(nodes[i]) ? state_->workspaces->find(nodes[i]) : nullptr;
    if (ws && ws->has_blob(blob)) mine[i] = '1';
  }
  const std::vector<std::string> all = state_->comm.allgather(mine);
  std::vector<std::string> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (std::any_of(all.begin(), all.end(), [&](const std::string& a) { return a[i] == '1'; })) out.push_back(nodes[i]);
  return out;
}

bool launched_by_mpi() { return detail::launched_by_mpi(); }
void finalize_mpi() { detail::finalize_mpi_now(); }

}  // namespace moka
