// Queue (queue_util.Queue): a Pipe over a BlobsQueue blob, its reader and writer, and enqueue/dequeue.
#include "moka/data/queue.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "moka/builder/cluster.h"
#include "moka/builder/net_builder.h"
#include "moka/core/error.h"

namespace moka {

namespace {

// Caffe2's _QueueWriter.
class QueueWriter final : public Writer {
 public:
  explicit QueueWriter(std::shared_ptr<Queue> queue) : queue_(std::move(queue)) {}

  void setup_ex(Net /*init_net*/, std::optional<Net> exit_net) override {
    // Closed once every instance of every writer task is done (the last task's exit), so readers
    // drain and stop.
    if (exit_net) counted_ = queue_->add_writer_exit(*exit_net);
  }

  std::vector<StepOrNet> write_ex(const std::vector<BlobRef>& fields, Net local_init_net, Net /*local_finish_net*/,
                                  const BlobRef& status) override {
    try {
      queue_->check_writer_fields(schema(), fields.size());
    } catch (...) {
      // The task being built is dropped: it must not hold the queue open for ever.
      if (counted_) queue_->drop_writer_task();
      counted_ = false;
      throw;
    }
    queue_->new_writer(schema(), local_init_net);
    queue_->note_user(true);
    Net enqueue_net("enqueue");
    enqueue(enqueue_net, queue_->queue(), fields, status, queue_->timeout_secs());
    return {enqueue_net};
  }

  void write(Net& net, const std::vector<BlobRef>& fields) override {
    queue_->check_writer_fields(schema(), fields.size());
    queue_->note_user(true);
    enqueue(net, queue_->queue(), fields, std::nullopt, queue_->timeout_secs());
  }

  std::string type_name() const override { return "QueueWriter"; }

 private:
  std::shared_ptr<Queue> queue_;
  bool counted_ = false;  // setup_ex counted this writer's task in the queue
};

// Caffe2's _QueueReader.
class QueueReader final : public Reader {
 public:
  QueueReader(std::shared_ptr<Queue> queue, int64_t num_dequeue_records)
      : Reader(queue->schema()), queue_(std::move(queue)), num_dequeue_records_(num_dequeue_records) {}

  void setup_ex(Net /*init_net*/, std::optional<Net> exit_net) override {
    // A reader that stops early (a limit) closes the queue, which unblocks its writers.
    if (exit_net) exit_net->op("CloseBlobsQueue", {queue_->queue()}, 0);
  }

  ReadNets read_ex(Net local_init_net, Net /*local_finish_net*/) override {
    queue_->new_reader(local_init_net);
    queue_->note_user(false);
    Net dequeue_net("dequeue");
    const auto names = schema().field_names();
    DequeueOutput out = dequeue(dequeue_net, queue_->queue(), static_cast<int64_t>(names.size()), std::nullopt, names,
                                num_dequeue_records_, queue_->timeout_secs());
    return ReadNets{{dequeue_net}, out.status, out.fields};
  }

  ReadOutput read(Net& net) override {
    queue_->note_user(false);
    const auto names = schema().field_names();
    DequeueOutput out = dequeue(net, queue_->queue(), static_cast<int64_t>(names.size()), std::nullopt, names,
                                num_dequeue_records_, queue_->timeout_secs());
    return ReadOutput{out.status, out.fields};
  }

  std::string type_name() const override { return "QueueReader"; }

 private:
  std::shared_ptr<Queue> queue_;
  int64_t num_dequeue_records_;
};

}  // namespace

Queue::Queue(int64_t capacity, const QueueOptions& options)
    : Pipe(options.schema, kLocalSetup),
      capacity_(capacity),
      num_dequeue_records_(options.num_dequeue_records),
      timeout_secs_(options.timeout_secs) {
  if (capacity_ <= 0) throw InvalidInput(fmt::format("Queue: capacity must be > 0, got {}", capacity_));
  if (num_dequeue_records_ <= 0)
    throw InvalidInput(fmt::format("Queue: num_dequeue_records must be > 0, got {}", num_dequeue_records_));
  if (!std::isfinite(timeout_secs_) || timeout_secs_ < 0)
    throw InvalidInput(
        fmt::format("Queue: timeout_secs must be a finite number >= 0 (0 waits for ever), got {}", timeout_secs_));
  // A unique blob name: the net name is made unique in the process (queue, queue_1, ...).
  Net net(options.name.empty() ? std::string("queue") : options.name);
  queue_ = net.add_external_input(net.next_name("handler"));
  writers_left_ = net.next_name("writers_left");
}

std::shared_ptr<Reader> Queue::reader() {
  if (!schema_) throw InvalidInput(fmt::format("Queue needs a schema in order to be read from. ({})", queue_.name()));
  return std::make_shared<QueueReader>(std::static_pointer_cast<Queue>(shared_from_this()), num_dequeue_records_);
}

std::shared_ptr<Writer> Queue::writer() {
  return std::make_shared<QueueWriter>(std::static_pointer_cast<Queue>(shared_from_this()));
}

std::vector<StepOrNet> Queue::setup(Net& init_net) {
  if (!schema_) throw InvalidInput(fmt::format("This queue does not have a schema. ({})", queue_.name()));
  const auto names = schema_->field_names();
  init_net.op("CreateBlobsQueue", {}, {queue_},
              {{"capacity", capacity_}, {"num_blobs", static_cast<int64_t>(names.size())}, {"field_names", names}});
  // Reset with the queue on every run: the writer tasks built so far, less the last one (whose
  // CountDown finds 0 and closes).
  // With writers on other nodes (connected to this one), each of those nodes counts once: its last
  // writer task tells this node.
  int64_t count = num_writer_tasks_;
  for (const auto& [node, use] : users_)
    if (!owner_.empty() && node != owner_ && use.writer_tasks > 0) count -= use.writer_tasks - 1;
  if (num_writer_tasks_ > 0) init_net.op("CreateCounter", {}, {writers_left_}, {{"init_count", count - 1}});
  set_up_ = true;
  return {};
}

bool Queue::add_writer_exit(Net& exit_net) {
  if (set_up_) {
    // The counter of this run was fixed when the queue was set up: a writer built later cannot
    // join it, and closes on its own exit as Caffe2's writers did.
    exit_net.op("CloseBlobsQueue", {queue_}, 0);
    return false;
  }
  ++num_writer_tasks_;
  ++users_[Node::current_name()].writer_tasks;
  // One atomic decrement: exactly one writer task (the last) closes the queue, however the
  // tasks' exits interleave. One operator, not CountDown + If: If's nested net would keep the
  // pipe off fibers.
  exit_net.op("CountDownCloseBlobsQueue", {queue_}, 0,
              {{"counter", writers_left_.name()}, {"node", Node::current_name()}});
  return true;
}

void Queue::drop_writer_task() {
  if (!set_up_ && num_writer_tasks_ > 0) {
    --num_writer_tasks_;
    auto it = users_.find(Node::current_name());
    if (it != users_.end() && it->second.writer_tasks > 0) --it->second.writer_tasks;
  }
}

void Queue::note_user(bool writer) {
  NodeUse& use = users_[Node::current_name()];
  (writer ? use.writes : use.reads) = true;
}

std::vector<StepOrNet> Queue::setup_on_node(Net& init_net, const std::string& node, bool first) {
  if (first) {
    owner_ = node;
    std::vector<StepOrNet> out = setup(init_net);
    const bool shared = std::any_of(users_.begin(), users_.end(), [&](const auto& u) { return u.first != node; });
    if (shared) {
      std::vector<BlobRef> inputs{queue_};
      if (num_writer_tasks_ > 0) inputs.push_back(writers_left_);
      init_net.op("ExportBlobsQueue", inputs, 0, {{"node", node}});
    }
    return out;
  }
  if (!schema_) throw InvalidInput(fmt::format("This queue does not have a schema. ({})", queue_.name()));
  const NodeUse use = users_.count(node) ? users_.at(node) : NodeUse{};
  if (use.reads && use.writes)
    throw InvalidInput(fmt::format(
        "Queue \"{}\": tasks of node \"{}\" both read and write it, but it lives on node \"{}\" (a node may read or "
        "write another node's queue, not both: give the node a queue of its own)",
        queue_.name(), node, owner_));
  const auto names = schema_->field_names();
  init_net.op("ConnectBlobsQueue", {}, {queue_},
              {{"owner", owner_},
               {"role", std::string(use.writes ? "writer" : "reader")},
               {"num_blobs", static_cast<int64_t>(names.size())},
               {"field_names", names},
               {"capacity", capacity_},
               {"node", node}});
  // This node's own count of its writer tasks, `<writers_left>:<node>` (a name of its own even where every
  // node shares a workspace): its last one tells the owner (CountDownCloseBlobsQueue on a connected queue
  // counts the node down on the owner's counter).
  if (use.writer_tasks > 0)
    init_net.op("CreateCounter", {}, {BlobRef(writers_left_.name() + ":" + node)},
                {{"init_count", use.writer_tasks - 1}});
  return {};
}

void Queue::check_writer_fields(const std::optional<schema::Field>& writer_schema, std::size_t num_fields) const {
  if (!schema_) return;
  const auto names = schema_->field_names();
  if (writer_schema) {
    const auto writer_names = writer_schema->field_names();
    if (writer_names != names)
      throw InvalidInput(fmt::format(
          "Queue \"{}\": a writer's record fields [{}] differ from the queue's [{}] (every writer of a queue must "
          "bring the same fields in the same order; readers would see values under the wrong names)",
          queue_.name(), fmt::join(writer_names, ", "), fmt::join(names, ", ")));
  } else if (num_fields != names.size()) {
    throw InvalidInput(fmt::format("Queue \"{}\": a writer brings {} fields, the queue's records have {} [{}]",
                                   queue_.name(), num_fields, names.size(), fmt::join(names, ", ")));
  }
}

namespace {

// The operators' timeout_secs argument, given only when there is a timeout.
std::vector<Arg> timeout_arg(double timeout_secs) {
  std::vector<Arg> args;
  if (timeout_secs > 0) args.emplace_back("timeout_secs", timeout_secs);
  return args;
}

}  // namespace

BlobRef enqueue(Net& net, const BlobRef& queue, const std::vector<BlobRef>& blobs, std::optional<BlobRef> status,
                double timeout_secs) {
  const BlobRef st = status ? *status : net.next_name("status");
  // Enqueueing moves the data into the queue: a blob listed twice would be moved twice.
  std::vector<BlobRef> queue_blobs;
  for (const auto& b : blobs) {
    if (std::find(queue_blobs.begin(), queue_blobs.end(), b) == queue_blobs.end())
      queue_blobs.push_back(b);
    else
      queue_blobs.push_back(net.op("Copy", {b}).single());
  }
  std::vector<BlobRef> inputs{queue};
  inputs.insert(inputs.end(), queue_blobs.begin(), queue_blobs.end());
  std::vector<BlobRef> outputs = queue_blobs;
  outputs.push_back(st);
  return net.op("SafeEnqueueBlobs", inputs, outputs, timeout_arg(timeout_secs)).back();
}

DequeueOutput dequeue(Net& net, const BlobRef& queue, int64_t num_blobs, std::optional<BlobRef> status,
                      const std::vector<std::string>& field_names, int64_t num_records, double timeout_secs) {
  if (num_records <= 0) throw InvalidInput(fmt::format("dequeue: num_records must be > 0, got {}", num_records));
  std::vector<BlobRef> outputs;
  if (!field_names.empty()) {
    if (static_cast<int64_t>(field_names.size()) != num_blobs)
      throw InvalidInput(fmt::format("dequeue: {} field names for {} blobs", field_names.size(), num_blobs));
    for (const auto& n : field_names) outputs.push_back(net.next_name(n));
  } else {
    for (int64_t i = 0; i < num_blobs; ++i) outputs.push_back(net.next_name("data", static_cast<int>(i)));
  }
  const BlobRef st = status ? *status : net.next_name("status");
  outputs.push_back(st);
  std::vector<Arg> args = timeout_arg(timeout_secs);
  args.emplace_back("num_records", num_records);
  BlobRefs results = net.op("SafeDequeueBlobs", {queue}, outputs, args);
  DequeueOutput out;
  out.fields.assign(results.begin(), results.end() - 1);
  out.status = results.back();
  return out;
}

}  // namespace moka
