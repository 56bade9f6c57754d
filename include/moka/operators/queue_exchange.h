// QueueExchange: how a task on one node reads or writes a BlobsQueue that lives on another node of the same
// session — the same queue in one process, a linked proxy across processes (docs/queues.md §5).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "moka/operators/blobs_queue.h"
#include "moka/operators/counter.h"

namespace moka {

class Workspace;

/// What a node does with another node's queue.
enum class QueueRole { reader, writer };

/// What a node connecting to another node's queue knows of it (ConnectBlobsQueue's arguments).
struct QueueConnection {
  std::string node;   ///< the connecting node
  std::string owner;  ///< the node whose queue it is
  std::string name;   ///< the queue blob's name (the same on both nodes)
  QueueRole role = QueueRole::reader;
  int64_t num_blobs = 1;
  std::vector<std::string> field_names{};
  int64_t capacity = 1;  ///< the owner queue's capacity (bounds what a link buffers)
};

/// @brief Where the nodes of a session find each other's queues (part of their CollectiveService).
///
/// In a run, the owner node exports its queue (ExportBlobsQueue, in its LOCAL_SETUP) and every other node
/// that uses it connects (ConnectBlobsQueue), which waits for the export. In one process a connection is
/// the owner's queue itself: every read, write, close and timeout is the queue's own. A connected writer
/// node does not close the queue when its last writer task exits; it counts down once on the owner's
/// counter of writers (writers_done), so the queue closes after the last writer of every node. moka::mpi
/// derives from this class for owners in other processes. Registrations start afresh with every run.
/// Thread-safety: every method may be called concurrently.
class QueueExchange {
 public:
  /// What an exported queue is known by.
  struct Export {
    BlobsQueuePtr queue;
    Counter* writers_left = nullptr;
  };
  /// @brief Counts a writer node of `e` down (closing the queue after the last). Thread-safety: any thread.
  static void count_writer_node_down(const Export& e);

  QueueExchange() = default;
  virtual ~QueueExchange() = default;
  QueueExchange(const QueueExchange&) = delete;
  QueueExchange& operator=(const QueueExchange&) = delete;

  /// A run of these nodes starts: registrations of earlier runs are dropped.
  void begin_run(std::vector<std::string> nodes);
  /// Node `node` finished its share of the run: connections still waiting for its export fail.
  void node_finished(const std::string& node);
  /// Node `node` owns queue `name` (`writers_left`, when not null, is its counter of writers, which lives as
  /// long as the run). InvalidInput when it exported that name already this run.
  void export_queue(const std::string& node, const std::string& name, BlobsQueuePtr queue, Counter* writers_left);
  /// @brief The queue `c.node` reads or writes: the owner's queue, once exported (waits for it), or a link to it
  /// in another process. InvalidInput when the owner is no node of the run, finishes without exporting it, or
  /// holds records of another number of blobs; Cancelled when `cancelled` becomes true while waiting.
  BlobsQueuePtr connect(const QueueConnection& c, const std::atomic<bool>& cancelled);
  /// @brief Node `node`'s last writer task of `queue` exited. True when `queue` is a queue that node connected
  /// to as a writer: the owner's count of writers goes down by one, and the queue closes after the last
  /// (an error of its link, if one failed, is thrown here). False otherwise: the caller closes the queue.
  bool writers_done(const std::string& node, const BlobsQueue* queue);

 protected:
  /// Whether `owner` lives in this process (always, here).
  virtual bool owner_is_here(const std::string& owner) const;
  /// A link to the queue of an owner in another process (not called here); waits until the owner accepted
  /// it (or `cancelled`).
  virtual BlobsQueuePtr connect_elsewhere(const QueueConnection& c, const std::atomic<bool>& cancelled);
  /// writers_done for a queue that is no connection of this process's exchange (false here).
  virtual bool writers_done_elsewhere(const BlobsQueue* queue);
  /// Called by export_queue after registering (for links waiting for it).
  virtual void on_export(const std::string& node, const std::string& name, const BlobsQueuePtr& queue,
                         Counter* writers_left);

 private:
  struct Writer {
    std::string node;
    const BlobsQueue* queue;
    Export owner;
    bool done = false;
  };
  mutable std::mutex mu_;
  std::condition_variable exported_;
  std::vector<std::string> nodes_;
  std::vector<std::string> finished_;
  std::map<std::pair<std::string, std::string>, Export> exports_;  // (owner, name)
  std::vector<Writer> writers_;                                    // this process's writer connections
};

namespace detail {
/// @brief CountDownCloseBlobsQueue's close after a node's last writer task: on a queue the workspace's node
/// connected to as a writer, the owner's count goes down (QueueExchange::writers_done); on any other, close.
/// `node` names the node where the workspace is shared by every node.
void close_writers_done(const Workspace& ws, const BlobsQueuePtr& queue, const std::string& node);
}  // namespace detail

}  // namespace moka
