// epoch_limiter: a counter created in the init group and counted down by the epoch group (docs/jobs.md §3).
#include "moka/job/epoch_limiter.h"

#include <fmt/format.h>

#include "moka/builder/net.h"
#include "moka/builder/task.h"
#include "moka/core/error.h"
#include "moka/job/job.h"

namespace moka {

TaskOutput epoch_limiter(Job& job, int64_t num_epochs) {
  if (num_epochs < 1)
    throw InvalidInput(fmt::format("epoch_limiter: num_epochs must be at least 1, got {}", num_epochs));
  BlobRef counter;
  job.init_group([&] {
    Net init_net("epoch_counter_init");
    counter = init_net.op("CreateCounter", {}, {}, {{"init_count", num_epochs - 1}});
    Task({}, init_net);
  });
  TaskOutput output;
  job.epoch_group([&] {
    Net epoch_net("epoch_countdown");
    BlobRef finished = epoch_net.op("CountDown", {counter});
    output = Task({.outputs = {TaskOutput(finished)}}, epoch_net).outputs().front();
  });
  return job.add_stop_condition(output);
}

}  // namespace moka
