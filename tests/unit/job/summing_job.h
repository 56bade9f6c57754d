// summing_job: the one-node job the JobRunner tests share.
#pragma once

#include <cstdint>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

/// Node "n" sums the epoch numbers into "total"; with `weights` > 0 it also doubles that many floats
/// in "w" every epoch (so a stale or torn checkpoint changes a digest). epoch_limiter stops it after
/// `epochs` epochs.
inline Job summing_job(int64_t epochs, int64_t weights = 0) {
  return Job([&](Job& j) {
    Node("n", [&] {
      j.init_group([&] {
        Task([&] {
          ops::Const(int64_t{0}, {.blob_out = "total"});
          ops::Const(int64_t{0}, {.blob_out = "epoch"});
          if (weights > 0)
            ops::op("ConstantFill", {}, {BlobRef("w")},
                    {{"shape", std::vector<int64_t>{weights}}, {"value", 0.5}, {"dtype", DType::Float}});
        });
      });
      Task([&] {
        ops::Add({"epoch", ops::Const(int64_t{1})}, {"epoch"});
        ops::Add({"total", "epoch"}, {"total"});
        if (weights > 0) ops::Add({"w", "w"}, {"w"});
      });
      epoch_limiter(j, epochs);
    });
  });
}

}  // namespace moka::testing
