// The operators layer's trace counters: queue depths from the live BlobsQueues, pipe batches/s from the stat registry.
#include "operators/trace_counters.h"

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "moka/core/trace.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/stats.h"

namespace moka::detail {

struct Queues {
  std::mutex mu;
  std::set<const BlobsQueue*> live;
};

Queues& queues() {
  static Queues* q = new Queues();  // never destroyed: queues may outlive static teardown
  return *q;
}

namespace {

// The pipes' timers publish "<node>/pipe/<name>/<input>/<output>/count" once per batch (docs/pipelines.md §5.1).
constexpr std::string_view kPipeMark = "/pipe/";
constexpr std::string_view kCountSuffix = "/count";

class OperatorCounters final : public TraceCounterSource {
 public:
  void sample(std::vector<Sample>& out) override {
    {
      std::lock_guard lk(queues().mu);
      for (const BlobsQueue* q : queues().live)
        out.push_back({"queue depth", q->name(), static_cast<double>(q->size())});
    }
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (const auto& [key, value] : StatRegistry::global().export_all(/*reset=*/false)) {
      if (key.find(kPipeMark) == std::string::npos || key.size() <= kCountSuffix.size() ||
          key.compare(key.size() - kCountSuffix.size(), kCountSuffix.size(), kCountSuffix) != 0)
        continue;
      const std::string pipe = key.substr(0, key.size() - kCountSuffix.size());
      auto [it, fresh] = last_counts_.try_emplace(pipe, value);
      if (!fresh && seconds > 0 && value >= it->second)
        out.push_back({"pipe batches/s", pipe, static_cast<double>(value - it->second) / seconds});
      it->second = value;
    }
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::map<std::string, int64_t> last_counts_;  // sampler thread only
};

}  // namespace

void register_trace_counters() {
  // Destroyed at exit in reverse order: the registration (which waits for a sample in progress) first.
  static OperatorCounters source;
  static TraceCounterRegistration registration(&source);
}

void trace_queue_created(const BlobsQueue* queue) {
  std::lock_guard lk(queues().mu);
  queues().live.insert(queue);
}

void trace_queue_destroyed(const BlobsQueue* queue) noexcept {
  std::lock_guard lk(queues().mu);
  queues().live.erase(queue);
}

}  // namespace moka::detail

namespace moka {

std::vector<QueueDepth> live_queue_depths() {
  std::vector<QueueDepth> out;
  std::lock_guard lk(detail::queues().mu);
  for (const BlobsQueue* q : detail::queues().live)
    out.push_back({q->name(), static_cast<int64_t>(q->size()), q->capacity()});
  return out;
}

}  // namespace moka
