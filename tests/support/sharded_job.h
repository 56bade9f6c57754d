// A job of trainer nodes that split one dataset between them with sharded readers (docs/pipelines.md §3.2):
// the same program under LocalSession (tests/unit/job/) and MpiSession (tests/mpi/), and what it must give.
#pragma once

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

/// The shape of a sharded job: `rows` records 0..rows-1 read by `shards` nodes "s0".."s<shards-1>", each
/// reading `per_epoch` records of its shard per epoch (a pass over a shard may span epochs), `epochs` epochs.
struct ShardedJobShape {
  int shards = 2;
  int64_t rows = 24;
  int64_t per_epoch = 6;
  int64_t epochs = 4;
};

inline std::string shard_node(int i) { return "s" + std::to_string(i); }

/// Each node holds the dataset (built by its init group), reads shard i of it in batches of one, looping
/// over its shard, and adds each record's value to "total" and 1 to "count"; node s0 stops the job after
/// `epochs` epochs.
inline Job sharded_job(const ShardedJobShape& shape) {
  return Job([&](Job& j) {
    for (int i = 0; i < shape.shards; ++i) {
      Node(shard_node(i), [&] {
        std::shared_ptr<DatasetRandomReader> reader;
        BlobRef total, count;
        j.init_group([&] {
          Task([&] {
            std::vector<int64_t> vals(static_cast<std::size_t>(shape.rows));
            std::iota(vals.begin(), vals.end(), 0);
            const schema::Field data =
                schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
            Dataset ds(data, "records");
            Net init = ops::net();
            reader = ds.random_reader({.init_net = init, .batch_size = 1, .loop_over = true});
            reader->compute_offset(init);
            reader->shard(init, i, shape.shards);
            total = ops::Const(std::vector<int64_t>{0}, {.blob_out = "total"});
            count = ops::Const(std::vector<int64_t>{0}, {.blob_out = "count"});
          });
        });
        auto epoch_reader = std::make_shared<ReaderWithLimit>(reader, shape.per_epoch);
        pipe(epoch_reader, {.processor = Processor(
                                [total, count](const schema::Field& rec) {
                                  ops::Add({total, rec["val"]()}, {total});
                                  ops::Add({count, ops::Const(std::vector<int64_t>{1})}, {count});
                                },
                                "tally")});
        if (i == 0) epoch_limiter(j, shape.epochs);
      });
    }
  });
}

/// What node `shard` must hold after the job: its records are the blocks shard, shard + shards, ... of
/// 0..rows-1 (batches of one), read in order and over again; `epochs * per_epoch` of them.
inline std::pair<int64_t, int64_t> expected_total_and_count(const ShardedJobShape& shape, int shard) {
  std::vector<int64_t> mine;
  for (int64_t r = shard; r < shape.rows; r += shape.shards) mine.push_back(r);
  int64_t total = 0;
  const int64_t reads = shape.epochs * shape.per_epoch;
  for (int64_t k = 0; k < reads; ++k) total += mine[static_cast<std::size_t>(k) % mine.size()];
  return {total, reads};
}

}  // namespace moka::testing
