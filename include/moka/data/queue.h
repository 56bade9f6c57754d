// Queue: a bounded BlobsQueue wrapped as a Pipe (Caffe2's queue_util.py; docs/pipelines.md §4), and the enqueue /
// dequeue helpers that emit SafeEnqueueBlobs / SafeDequeueBlobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/data/reader.h"

namespace moka {

/// Optional arguments of Queue.
struct QueueOptions {
  std::optional<schema::Field> schema{};  ///< default: adopted from the first writer
  std::string name = "queue";
  int64_t num_dequeue_records = 1;  ///< records per read (SafeDequeueBlobs num_records, > 0)
  /// Seconds a pipe's read or write may wait on the queue before the run fails with RuntimeError
  /// naming the operator and the queue (the operators' `timeout_secs`; one deadline per batch of
  /// num_dequeue_records); 0, the default, waits until the queue is ready, closed or cancelled.
  double timeout_secs = 0;
};

/// @brief A bounded queue of records between pipes (Caffe2's `queue_util.Queue`).
///
/// Its blob is `Net(name).next_name("handler")` (e.g. `queue/handler`, `queue_1/handler`). The
/// queue is created by the node's LOCAL_SETUP (`CreateBlobsQueue`, once per TaskGroup run that
/// uses it, in the node workspace, before any task). It is closed when the last of its writer
/// tasks exits (each task's exit runs after all its instances; with several writer pipes the
/// queue counts them, see add_writer_exit); readers close it too when they stop, so a reader that
/// stops early unblocks writers. A closed queue refuses writes; reads drain what is left
/// (decision 5). Every writer must bring the queue's fields: names, order and count.
/// @code
///   auto q = moka::Queue::make(11, {.num_dequeue_records = 3});
///   moka::pipe(ds.reader(), {.output = q, .processor = proc1});
///   moka::pipe(q, {.output = dst.writer()});
/// @endcode
/// Thread-safety: build-time object (the queue itself is thread-safe at run time).
class Queue final : public Pipe {
 public:
  /// InvalidInput when capacity <= 0, num_dequeue_records <= 0, or timeout_secs is negative, infinite or NaN.
  Queue(int64_t capacity, const QueueOptions& options = {});
  static std::shared_ptr<Queue> make(int64_t capacity, const QueueOptions& options = {}) {
    return std::make_shared<Queue>(capacity, options);
  }

  /// The queue blob.
  const BlobRef& queue() const { return queue_; }
  int64_t capacity() const { return capacity_; }
  int64_t num_dequeue_records() const { return num_dequeue_records_; }
  double timeout_secs() const { return timeout_secs_; }
  /// A reader; InvalidInput "Queue needs a schema in order to be read from." without a schema.
  std::shared_ptr<Reader> reader() override;
  std::shared_ptr<Writer> writer() override;
  /// LOCAL_SETUP: `CreateBlobsQueue` into init_net, and the counter of writer tasks still running
  /// (`CreateCounter`, see add_writer_exit); InvalidInput "This queue does not have a schema.".
  std::vector<StepOrNet> setup(Net& init_net) override;
  /// @brief A node's LOCAL_SETUP. The first node whose tasks use the queue owns it: setup(), and
  /// `ExportBlobsQueue` when tasks on other nodes use it too. Every other node connects
  /// (`ConnectBlobsQueue`): its tasks read or write the owner's queue through their session, in one
  /// process or across processes (docs/queues.md §5). A node both reading and writing another node's
  /// queue is an InvalidInput.
  std::vector<StepOrNet> setup_on_node(Net& init_net, const std::string& node, bool first) override;
  std::string type_name() const override { return "Queue"; }

  /// @brief The close a writer task emits into its exit net (its writer's setup_ex).
  ///
  /// A queue closes when its last writer task exits, not when the first does: a closed queue
  /// refuses writes (decision 5), so the other writers would stop and drop their remaining
  /// records. Each call counts one writer task; setup() creates the counter `<queue>/writers_left`
  /// with that count less one, and the exit net gets `CountDownCloseBlobsQueue`, which counts it
  /// down and closes the queue when the count was already 0 (the last writer). With one writer
  /// this closes on exit, as Caffe2 did. A writer task built after setup() ran closes on exit
  /// unconditionally. Returns whether the writer task was counted.
  bool add_writer_exit(Net& exit_net);
  /// @brief Un-counts a writer task whose build failed after add_writer_exit (its Task is not kept).
  void drop_writer_task();
  /// @brief InvalidInput naming this queue and both field lists when a writer's record
  /// (writer_schema, else num_fields when the writer has no schema) differs from the queue's.
  void check_writer_fields(const std::optional<schema::Field>& writer_schema, std::size_t num_fields) const;
  /// Writer tasks counted by add_writer_exit.
  int64_t num_writer_tasks() const { return num_writer_tasks_; }
  /// Notes that a task on the active Node reads (writer = false) or writes the queue (its readers and writers do).
  void note_user(bool writer);

 private:
  int64_t capacity_;
  int64_t num_dequeue_records_;
  double timeout_secs_;
  BlobRef queue_;
  BlobRef writers_left_;
  int64_t num_writer_tasks_ = 0;
  bool set_up_ = false;
  // Per node that uses the queue: whether its tasks read, write, and how many writer tasks it counted.
  struct NodeUse {
    bool reads = false;
    bool writes = false;
    int64_t writer_tasks = 0;
  };
  std::map<std::string, NodeUse> users_;
  std::string owner_;  // the node that set the queue up
};

/// @brief Emits `SafeEnqueueBlobs([queue] + blobs, blobs + [status])` into net (Caffe2's
/// `queue_util.enqueue`); a blob listed twice is copied first. Returns the status blob (true when
/// the queue was closed). Without status: `net.next_name("status")`. timeout_secs > 0 becomes the
/// operator's `timeout_secs`.
BlobRef enqueue(Net& net, const BlobRef& queue, const std::vector<BlobRef>& blobs,
                std::optional<BlobRef> status = std::nullopt, double timeout_secs = 0);

/// What dequeue() emits.
struct DequeueOutput {
  std::vector<BlobRef> fields;
  BlobRef status;
};

/// @brief Emits `SafeDequeueBlobs(queue) -> fields + [status]` (Caffe2's `queue_util.dequeue`):
/// field blobs `net.next_name(field_name)` (or `data:i`), status true when the queue is closed
/// and empty. num_records > 1 concatenates up to that many records. timeout_secs > 0 becomes the
/// operator's `timeout_secs`.
DequeueOutput dequeue(Net& net, const BlobRef& queue, int64_t num_blobs, std::optional<BlobRef> status = std::nullopt,
                      const std::vector<std::string>& field_names = {}, int64_t num_records = 1,
                      double timeout_secs = 0);

}  // namespace moka
