// Collective operators with Caffe2's names (docs/collectives.md): CreateCommonWorld, Allreduce, Broadcast,
// Allgather, Barrier — over the nodes of a session, in one process (LocalSession) or across MPI ranks.
#include <fmt/format.h>

#include <atomic>
#include <mutex>

#include "moka/core/error.h"
#include "moka/core/trace.h"
#include "moka/operators/collectives.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

class CreateCommonWorldOp final : public OperatorBase {
 public:
  CreateCommonWorldOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        name_(args().get_string("name", output_name(0))),
        nodes_(args().get_strings("nodes")),
        size_(args().get_int("size", -1)) {
    if (args().has("nodes") && nodes_.empty())
      throw InvalidInput(fmt::format("CreateCommonWorld \"{}\": argument \"nodes\" is empty", name_));
  }

  bool run() override {
    const std::optional<CollectiveBinding> binding = find_collective_binding(*workspace());
    if (!binding || binding->node.empty())
      throw InvalidInput(fmt::format(
          "CreateCommonWorld \"{}\": this workspace is no node's workspace of a session (collectives run in "
          "the nodes of a LocalSession or MpiSession, each node with a workspace of its own)",
          name_));
    std::vector<std::string> nodes = nodes_.empty() ? binding->service->group_nodes() : nodes_;
    if (size_ >= 0 && size_ != static_cast<int64_t>(nodes.size()))
      throw InvalidInput(fmt::format("CreateCommonWorld \"{}\": argument \"size\" = {}, but the world has {} nodes",
                                     name_, size_, nodes.size()));
    output_blob(0).get_mutable<CommonWorldHandle>() = binding->service->join(binding->node, name_, nodes);
    return true;
  }

 private:
  std::string name_;
  std::vector<std::string> nodes_;
  int64_t size_;
};

// Base of the operators that run a collective on the world of input 0. cancel() (from another thread
// while run() waits) cancels the world it runs on, which wakes every node waiting in it.
class CollectiveOpBase : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;

  void cancel() override {
    cancelled_.store(true);
    std::lock_guard lk(mu_);
    if (bound_) bound_->cancel();
  }

 protected:
  // The handle of input 0, its world bound so that cancel() reaches it.
  const CommonWorldHandle& world() {
    const CommonWorldHandle& h = input_object<CommonWorldHandle>(0);
    if (!h.world) throw InvalidInput(fmt::format("{}: input 0 (\"{}\") holds no common world", type(), input_name(0)));
    if (h.world != bound_) {
      std::lock_guard lk(mu_);
      bound_ = h.world;
    }
    if (cancelled_.load()) h.world->cancel();  // a cancel() that came before the binding
    return h;
  }

  // Outputs 0..n-1 are inputs 1..n (checked at construction).
  void check_pairs() const {
    if (output_size() != input_size() - 1)
      throw InvalidInput(
          fmt::format("{}: takes [common_world, X1..Xn] and outputs [Y1..Yn]; got {} inputs and {} "
                      "outputs",
                      type(), input_size(), output_size()));
  }

 private:
  std::mutex mu_;
  std::shared_ptr<CommonWorld> bound_;
  std::atomic<bool> cancelled_{false};
};

class AllreduceOp final : public CollectiveOpBase {
 public:
  AllreduceOp(const OperatorDef& def, Workspace* ws) : CollectiveOpBase(def, ws) {
    check_pairs();
    const std::string name = args().get_string("reduction", "sum");
    const auto r = reduction_from_name(name);
    if (!r)
      throw InvalidInput(
          fmt::format("Allreduce: argument \"reduction\" = \"{}\": must be sum, max, min or product", name));
    reduction_ = *r;
  }
  bool run() override {
    const CommonWorldHandle& h = world();
    TraceSpan span(TraceCategory::collective, "Allreduce");  // includes the time waiting for the other members
    for (std::size_t i = 1; i < input_size(); ++i) h.world->allreduce(h.member, input(i), output(i - 1), reduction_);
    return true;
  }

 private:
  Reduction reduction_;
};

class BroadcastOp final : public CollectiveOpBase {
 public:
  BroadcastOp(const OperatorDef& def, Workspace* ws) : CollectiveOpBase(def, ws), root_(args().get_int("root", 0)) {
    check_pairs();
    if (root_ < 0) throw InvalidInput(fmt::format("Broadcast: argument \"root\" = {} must be >= 0", root_));
  }
  bool run() override {
    const CommonWorldHandle& h = world();
    TraceSpan span(TraceCategory::collective, "Broadcast");  // includes the time waiting for the other members
    for (std::size_t i = 1; i < input_size(); ++i)
      h.world->broadcast(h.member, input(i), output(i - 1), static_cast<int>(root_));
    return true;
  }

 private:
  int64_t root_;
};

class AllgatherOp final : public CollectiveOpBase {
 public:
  using CollectiveOpBase::CollectiveOpBase;
  bool run() override {
    const CommonWorldHandle& h = world();
    TraceSpan span(TraceCategory::collective, "Allgather");  // includes the time waiting for the other members
    h.world->allgather(h.member, input(1), output(0));
    return true;
  }
};

class BarrierOp final : public CollectiveOpBase {
 public:
  using CollectiveOpBase::CollectiveOpBase;
  bool run() override {
    const CommonWorldHandle& h = world();
    TraceSpan span(TraceCategory::collective, "Barrier");  // includes the time waiting for the other members
    h.world->barrier(h.member);
    return true;
  }
};

}  // namespace

namespace detail {

void register_collective_ops(OperatorRegistry& reg) {
  constexpr int kAny = OpSchema::kUnbounded;
  reg.add(
      OpSchema("CreateCommonWorld")
          .inputs(0, 1)
          .outputs(1)
          .arg("nodes", ArgType::Strings, "the world's nodes, in order; default: every node of the running TaskGroup")
          .arg("name", ArgType::String,
               "the world's name: the k-th CreateCommonWorld of each node with the same name and nodes "
               "joins the same world; default: the output blob's name")
          .arg("size", ArgType::Int, "Caffe2's world size: when given, must equal the number of nodes", "-1")
          .arg("timeout_ms", ArgType::Int, "accepted for Caffe2 compatibility; waits end on cancellation", "0")
          .doc("Makes (or joins) a common world of nodes and stores this node's handle in the output. The input "
               "Caffe2 takes (a store handler) is accepted and not used: the session is the rendezvous. Runs in "
               "the node workspaces of a LocalSession or an MpiSession."),
      factory_of<CreateCommonWorldOp>());
  reg.add(OpSchema("Allreduce")
              .inputs(2, kAny)
              .outputs(1, kAny)
              .allow_any_inplace()
              .arg("reduction", ArgType::String, "sum, max, min or product", "sum")
              .doc("Allreduce([common_world, X1..Xn], [Y1..Yn]): Yi = Xi of every node of the world combined element "
                   "by element (in place allowed). Every numeric dtype; the same dtype and shape on every node."),
          factory_of<AllreduceOp>());
  reg.add(OpSchema("Broadcast")
              .inputs(2, kAny)
              .outputs(1, kAny)
              .allow_any_inplace()
              .arg("root", ArgType::Int, "the node (its position in the world) whose values every node gets", "0")
              .doc("Broadcast([common_world, X1..Xn], [Y1..Yn]): Yi = Xi of node `root` on every node (in place "
                   "allowed). Numeric and bool tensors; the same dtype and shape on every node."),
          factory_of<BroadcastOp>());
  reg.add(OpSchema("Allgather")
              .inputs(2)
              .outputs(1)
              .doc("Allgather([common_world, X], [Y]): Y = every node's X concatenated along the first dimension, "
                   "in the world's node order (a scalar counts as shape [1]). The same dtype and shape on every "
                   "node."),
          factory_of<AllgatherOp>());
  reg.add(OpSchema("Barrier").inputs(1).outputs(0).doc(
              "Barrier([common_world]): returns once every node of the world reached it."),
          factory_of<BarrierOp>());
}

}  // namespace detail
}  // namespace moka
