// ExportBlobsQueue and ConnectBlobsQueue (moka): a queue that lives on one node, read or written by tasks of
// other nodes of the session, through its QueueExchange (docs/queues.md §5).
#include <fmt/format.h>

#include <atomic>

#include "moka/core/error.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/collectives.h"
#include "moka/operators/counter.h"
#include "moka/operators/queue_exchange.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

// The session's service, and the node: the workspace's, or (in a workspace every node shares) the
// operator's "node" argument.
CollectiveBinding binding_of(const OperatorBase& op) {
  std::optional<CollectiveBinding> b = find_collective_binding(*op.workspace());
  if (!b)
    throw InvalidInput(
        fmt::format("{}: the workspace belongs to no session's node (queues shared by nodes run in the nodes of a "
                    "LocalSession or MpiSession)",
                    op.type()));
  if (b->node.empty()) b->node = op.args().get_string("node", "");
  if (b->node.empty())
    throw InvalidInput(
        fmt::format("{}: the workspace is shared by every node and argument \"node\" is not given", op.type()));
  return *b;
}

class ExportBlobsQueueOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const CollectiveBinding b = binding_of(*this);
    Counter* writers_left = input_size() > 1 ? &input_object<Counter>(1) : nullptr;
    b.service->queues().export_queue(b.node, input_name(0), input_object<BlobsQueuePtr>(0), writers_left);
    return true;
  }
};

class ConnectBlobsQueueOp final : public OperatorBase {
 public:
  ConnectBlobsQueueOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    c_.owner = args().get_string("owner", "");
    const std::string role = args().get_string("role", "reader");
    c_.num_blobs = args().get_int("num_blobs", 1);
    c_.field_names = args().get_strings("field_names");
    c_.capacity = args().get_int("capacity", 1);
    c_.name = output_name(0);
    if (c_.owner.empty())
      throw InvalidInput(fmt::format("{}: argument \"owner\" (the owner node) is required", type()));
    if (role != "reader" && role != "writer")
      throw InvalidInput(fmt::format("{}: argument \"role\" = \"{}\": must be \"reader\" or \"writer\"", type(), role));
    c_.role = role == "writer" ? QueueRole::writer : QueueRole::reader;
    if (c_.num_blobs < 1)
      throw InvalidInput(fmt::format("{}: argument \"num_blobs\" = {}: must be at least 1", type(), c_.num_blobs));
    if (c_.capacity < 1)
      throw InvalidInput(fmt::format("{}: argument \"capacity\" = {}: must be at least 1", type(), c_.capacity));
    if (!c_.field_names.empty() && static_cast<int64_t>(c_.field_names.size()) != c_.num_blobs)
      throw InvalidInput(fmt::format("{}: argument \"field_names\" has {} names for num_blobs = {}", type(),
                                     c_.field_names.size(), c_.num_blobs));
  }
  void cancel() override { cancelled_.store(true); }
  bool run() override {
    const CollectiveBinding b = binding_of(*this);
    QueueConnection c = c_;
    c.node = b.node;
    BlobsQueuePtr queue = b.service->queues().connect(c, cancelled_);
    // In a workspace every node shares, the blob is the owner's already (its tasks may be reading it).
    const Blob* existing = workspace()->get_blob(output_name(0));
    if (existing && existing->is_type<BlobsQueuePtr>() && existing->get<BlobsQueuePtr>() == queue) return true;
    output_blob(0).emplace<BlobsQueuePtr>(std::move(queue));
    return true;
  }

 private:
  QueueConnection c_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

namespace detail {

void close_writers_done(const Workspace& ws, const BlobsQueuePtr& queue, const std::string& node) {
  if (!queue) return;
  if (std::optional<CollectiveBinding> b = find_collective_binding(ws)) {
    const std::string& who = b->node.empty() ? node : b->node;
    if (!who.empty() && b->service->queues().writers_done(who, queue.get())) return;
  }
  queue->close();
}

void register_queue_link_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("ExportBlobsQueue")
              .inputs(1, 2)
              .outputs(0)
              .arg("node", ArgType::String, "this node's name (used where every node shares one workspace)", "")
              .doc("ExportBlobsQueue([queue] or [queue, writers_left], []) (moka): this node owns the queue, and tasks "
                   "of other nodes of the run connect to it (ConnectBlobsQueue). writers_left, the queue's counter of "
                   "writers, is counted down once by each connected writer node after its last writer task."),
          factory_of<ExportBlobsQueueOp>());
  reg.add(
      OpSchema("ConnectBlobsQueue")
          .inputs(0)
          .outputs(1)
          .arg("owner", ArgType::String, "the node that owns the queue (required)")
          .arg("role", ArgType::String, "\"reader\" or \"writer\": what this node's tasks do with the queue", "reader")
          .arg("num_blobs", ArgType::Int, "blobs per record; must match the owner's queue", "1")
          .arg("field_names", ArgType::Strings, "names of the record's fields; empty or num_blobs of them")
          .arg("capacity", ArgType::Int, "the owner queue's capacity (bounds what a link across processes holds)", "1")
          .arg("node", ArgType::String, "this node's name (used where every node shares one workspace)", "")
          .doc("ConnectBlobsQueue([], [queue]) (moka): the output holds the queue of node `owner` named like the "
               "output, once the owner exported it this run (waits for it; cancel() stops the wait). In one "
               "process it is the owner's queue itself; across processes a link with the queue's semantics "
               "(docs/queues.md §5). CountDownCloseBlobsQueue on a connected writer's queue counts the node down "
               "on the owner's counter instead of closing."),
      factory_of<ConnectBlobsQueueOp>());
}

}  // namespace detail

}  // namespace moka
