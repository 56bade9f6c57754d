// A reader node feeding trainer nodes through a queue that lives on the reader node (docs/queues.md §5):
// the same program under LocalSession (tests/unit/session/) and MpiSession (tests/mpi/), and what it gives.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

/// `records` records (val = 0..records-1) on node "reader", piped in batches of `batch` (which divides
/// records) into a queue of `capacity` batches that lives on "reader"; trainer nodes "t0".."t<trainers-1>"
/// each drain it.
struct CrossNodeShape {
  int trainers = 2;
  int64_t records = 1000;
  int64_t batch = 10;
  int64_t capacity = 4;
};

inline std::string trainer_node(int i) { return "t" + std::to_string(i); }

/// A trainer's own blob: named by its node, so that where every node shares one workspace (Caffe2's
/// LocalSession) two trainers never add into the same blob at once.
inline std::string trainer_blob(int i, const char* name) { return trainer_node(i) + "_" + name; }

/// The program: set_up() once (the data on "reader", total and count on every trainer), then feed() as often
/// as wanted; each feed() streams every record once, each trainer adding the values it read to its "total"
/// and their number to its "count" (trainer_blob()).
class CrossNodeFeed {
 public:
  explicit CrossNodeFeed(const CrossNodeShape& shape) : shape_(shape) {}

  void set_up(Session& session) {
    TaskGroup init(WorkspaceType::Global, [&] {
      Node("reader", [&] {
        Task([&] {
          std::vector<int64_t> vals(static_cast<std::size_t>(shape_.records));
          std::iota(vals.begin(), vals.end(), 0);
          data_ = schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
        });
      });
      for (int i = 0; i < shape_.trainers; ++i)
        Node(trainer_node(i), [&] {
          Task([&] {
            // total: one sum per position in a batch (Add of two batches is element by element).
            ops::Const(std::vector<int64_t>(static_cast<std::size_t>(shape_.batch), 0),
                       {.blob_out = trainer_blob(i, "total")});
            ops::Const(std::vector<int64_t>{0}, {.blob_out = trainer_blob(i, "count")});
          });
        });
    });
    session.run(init);
    feed_ = TaskGroup(WorkspaceType::Global, [&] {
      auto queue = Queue::make(shape_.capacity, {.name = "records"});
      Node("reader", [&] {
        Dataset ds(*data_, "records");
        pipe(ds.reader({.batch_size = shape_.batch}), {.output = queue, .name = "feed"});
      });
      for (int i = 0; i < shape_.trainers; ++i)
        Node(trainer_node(i), [&] {
          pipe(queue, {.processor = Processor(
                           [i](const schema::Field& rec) {
                             const BlobRef total(trainer_blob(i, "total")), count(trainer_blob(i, "count"));
                             ops::Add({total, rec["val"]()}, {total});
                             ops::Add({count, ops::Const(std::vector<int64_t>{1})}, {count});
                           },
                           "tally")});
        });
    });
  }

  void feed(Session& session) { session.run(feed_); }

  /// Every trainer's (sum of the values it read, records it read), by trainer (collective under MpiSession).
  std::vector<std::pair<int64_t, int64_t>> tallies(Session& session) const {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int i = 0; i < shape_.trainers; ++i) {
      const Tensor total = session.fetch(trainer_node(i), trainer_blob(i, "total"));
      const auto sums = total.values<int64_t>();
      out.emplace_back(std::accumulate(sums.begin(), sums.end(), int64_t{0}),
                       session.fetch(trainer_node(i), trainer_blob(i, "count")).values<int64_t>()[0] * shape_.batch);
    }
    return out;
  }

  /// The trainers' tallies added up.
  std::pair<int64_t, int64_t> summed(Session& session) const {
    std::pair<int64_t, int64_t> sum{0, 0};
    for (const auto& [total, count] : tallies(session)) {
      sum.first += total;
      sum.second += count;
    }
    return sum;
  }

  /// What the trainers hold together after `feeds` feeds: every record once per feed.
  std::pair<int64_t, int64_t> expected(int64_t feeds) const {
    return {feeds * shape_.records * (shape_.records - 1) / 2, feeds * shape_.records};
  }

 private:
  CrossNodeShape shape_;
  std::optional<schema::Field> data_;
  TaskGroup feed_;
};

/// Writer nodes "t0".."t<writers-1>" each pipe `per_writer` records of value i + 1 into a queue on node
/// "reader" (its draining pipe is built first, so the reader owns the queue) from each of its
/// `pipes_per_writer` pipes; the reader sums them into "sum". Returns the sum it must hold after one run.
inline int64_t gather_into_reader(Session& session, int writers, int64_t per_writer, int32_t pipes_per_writer = 1) {
  std::vector<schema::Field> data;
  TaskGroup init(WorkspaceType::Global, [&] {
    Node("reader", [] { Task([] { ops::Const(std::vector<int64_t>{0}, {.blob_out = "sum"}); }); });
    for (int i = 0; i < writers; ++i)
      Node(trainer_node(i), [&] {
        Task([&] {
          // Scoped by node: where every node shares one workspace, the nodes' blobs must not collide.
          NameScope scope(trainer_node(i));
          data.push_back(
              schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(std::vector<int64_t>(
                                                              static_cast<std::size_t>(per_writer), i + 1)))}})));
        });
      });
  });
  session.run(init);
  TaskGroup group(WorkspaceType::Global, [&] {
    const schema::Struct record({{"val", schema::Scalar(Tensor::vector<int64_t>({0}))}});
    auto queue = Queue::make(2, {.schema = record.clone_schema(), .name = "gather"});
    Node("reader", [&] {
      pipe(queue, {.processor = Processor(
                       [](const schema::Field& rec) {
                         ops::Add({BlobRef("sum"), rec["val"]()}, {BlobRef("sum")});
                       },
                       "sum_up")});
    });
    for (int i = 0; i < writers; ++i)
      Node(trainer_node(i), [&] {
        // Two writer pipes per node when asked: the node's own counter closes its link after the last.
        for (int32_t t = 0; t < pipes_per_writer; ++t)
          pipe(Dataset(data[static_cast<std::size_t>(i)], fmt::format("src_{}_{}", i, t)).reader(),
               {.output = queue, .name = "send" + std::to_string(t)});
      });
  });
  session.run(group);
  int64_t want = 0;
  for (int i = 0; i < writers; ++i) want += pipes_per_writer * per_writer * (i + 1);
  return want;
}

}  // namespace moka::testing
