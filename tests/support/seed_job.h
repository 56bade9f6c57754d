// The seed's build_job with its reader on a node of its own feeding trainer nodes through a queue on the reader
// (docs/distributed.md §6.3): the same program under LocalSession (tests/unit/job/) and MpiSession (tests/mpi/).
#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

inline std::string seed_trainer(int i) { return "trainer_" + std::to_string(i); }

/// Node "reader" holds the seed's dataset (val = 0..9) and reads it three records an epoch
/// (ReaderWithLimit(num_iter=3)) into a queue of capacity 2 on itself; trainers "trainer_0".."trainer_<n-1>"
/// drain the queue, each adding the values it read into its own "total" (trainer_0's starts at 100, the
/// others' at 0). The job stops when the reader's data is finished, after epoch 4. The trainers' totals add up
/// to the seed's: 103, 115, 136, 145 after epochs 1..4.
inline Job seed_job_with_trainers(int trainers) {
  return Job([&](Job& j) {
    std::shared_ptr<Reader> full_reader;
    auto queue = Queue::make(2, {.name = "records"});
    Node("reader", [&] {
      j.init_group([&] {
        Net init_net("init_net");
        std::vector<int64_t> vals(10);
        std::iota(vals.begin(), vals.end(), 0);
        const schema::Field data =
            schema::ConstRecord(init_net, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
        full_reader = Dataset(data, "seed").reader({.init_net = init_net});
        Task({}, init_net);
      });
      auto epoch_reader = std::make_shared<ReaderWithLimit>(full_reader, 3);
      pipe(epoch_reader, {.output = queue, .name = "feed"});
      j.add_stop_signal(epoch_reader->data_finished());
    });
    for (int i = 0; i < trainers; ++i)
      Node(seed_trainer(i), [&] {
        j.init_group([&] { Task([&] { ops::Const(std::vector<int64_t>{i == 0 ? 100 : 0}, {.blob_out = "total"}); }); });
        pipe(queue, {.processor = Processor(
                         [](const schema::Field& rec) {
                           ops::Add({BlobRef("total"), rec["val"]()}, {BlobRef("total")});
                         },
                         "inc_total")});
      });
  });
}

/// The trainers' totals added up (collective under MpiSession).
inline int64_t seed_total(Session& session, int trainers) {
  int64_t sum = 0;
  for (int i = 0; i < trainers; ++i) sum += session.fetch(seed_trainer(i), "total").values<int64_t>()[0];
  return sum;
}

}  // namespace moka::testing
