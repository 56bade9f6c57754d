// QueueExchange: owners export their queues, other nodes of the run connect to them (the same queue in one
// process) and count their writers down on the owner's counter.
#include "moka/operators/queue_exchange.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "moka/core/error.h"
#include "moka/operators/peer_finished.h"

namespace moka {

void QueueExchange::begin_run(std::vector<std::string> nodes) {
  std::lock_guard lk(mu_);
  nodes_ = std::move(nodes);
  finished_.clear();
  exports_.clear();
  writers_.clear();
}

void QueueExchange::node_finished(const std::string& node) {
  {
    std::lock_guard lk(mu_);
    finished_.push_back(node);
  }
  exported_.notify_all();
}

void QueueExchange::export_queue(const std::string& node, const std::string& name, BlobsQueuePtr queue,
                                 Counter* writers_left) {
  if (!queue) throw InvalidInput(fmt::format("ExportBlobsQueue: \"{}\" of node \"{}\" holds no queue", name, node));
  {
    std::lock_guard lk(mu_);
    if (!exports_.emplace(std::make_pair(node, name), Export{queue, writers_left}).second)
      throw InvalidInput(
          fmt::format("ExportBlobsQueue: node \"{}\" exported queue \"{}\" twice in one run", node, name));
  }
  exported_.notify_all();
  on_export(node, name, queue, writers_left);
}

BlobsQueuePtr QueueExchange::connect(const QueueConnection& c, const std::atomic<bool>& cancelled) {
  if (c.owner == c.node)
    throw InvalidInput(fmt::format("ConnectBlobsQueue \"{}\": node \"{}\" connects to its own queue", c.name, c.node));
  {
    std::lock_guard lk(mu_);
    if (!nodes_.empty() && std::find(nodes_.begin(), nodes_.end(), c.owner) == nodes_.end())
      throw InvalidInput(fmt::format(
          "ConnectBlobsQueue \"{}\": node \"{}\" uses the queue of node \"{}\", which is not a node of this run [{}]",
          c.name, c.node, c.owner, fmt::join(nodes_, ", ")));
  }
  if (!owner_is_here(c.owner)) return connect_elsewhere(c, cancelled);
  std::unique_lock lk(mu_);
  const auto key = std::make_pair(c.owner, c.name);
  // Cancellation comes as a flag (the operator's cancel()): look at it every few milliseconds.
  while (!exports_.count(key)) {
    if (cancelled.load()) throw Cancelled(fmt::format("ConnectBlobsQueue \"{}\": cancelled", c.name));
    if (std::find(finished_.begin(), finished_.end(), c.owner) != finished_.end())
      throw PeerFinished(fmt::format(
          "ConnectBlobsQueue \"{}\": node \"{}\" finished its share of the run without exporting the queue node "
          "\"{}\" connects to",
          c.name, c.owner, c.node));
    exported_.wait_for(lk, std::chrono::milliseconds(5));
  }
  const Export& e = exports_.at(key);
  if (e.queue->num_blobs() != c.num_blobs)
    throw InvalidInput(fmt::format(
        "ConnectBlobsQueue \"{}\": node \"{}\" moves records of {} blobs, the queue of node \"{}\" holds {}", c.name,
        c.node, c.num_blobs, c.owner, e.queue->num_blobs()));
  if (c.role == QueueRole::writer) writers_.push_back(Writer{c.node, e.queue.get(), e});
  return e.queue;
}

void QueueExchange::count_writer_node_down(const Export& e) {
  if (!e.writers_left || e.writers_left->count_down()) e.queue->close();
}

bool QueueExchange::writers_done(const std::string& node, const BlobsQueue* queue) {
  std::optional<Export> owner;
  {
    std::lock_guard lk(mu_);
    for (Writer& w : writers_) {
      if (w.node != node || w.queue != queue || w.done) continue;
      w.done = true;
      owner = w.owner;
      break;
    }
  }
  if (!owner) return writers_done_elsewhere(queue);
  count_writer_node_down(*owner);
  return true;
}

bool QueueExchange::owner_is_here(const std::string&) const { return true; }

BlobsQueuePtr QueueExchange::connect_elsewhere(const QueueConnection& c, const std::atomic<bool>&) {
  throw InvalidInput(
      fmt::format("ConnectBlobsQueue \"{}\": node \"{}\" is in no process of this session", c.name, c.owner));
}

bool QueueExchange::writers_done_elsewhere(const BlobsQueue*) { return false; }

void QueueExchange::on_export(const std::string&, const std::string&, const BlobsQueuePtr&, Counter*) {}

}  // namespace moka
