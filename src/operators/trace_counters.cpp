// The live BlobsQueues, and what is read from them: trace counters (queue depths, pipe records/s and batches/s
// from the stat registry) and the queues' stats in the stat registry (docs/queues.md §6).
#include "operators/trace_counters.h"

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
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

class OperatorCounters final : public TraceCounterSource {
 public:
  void sample(std::vector<Sample>& out) override {
    for (const QueueStats& q : live_queue_stats()) out.push_back({"queue depth", q.name, static_cast<double>(q.depth)});
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (const PipeCounts& p : pipe_counts(StatRegistry::global().export_all(/*reset=*/false))) {
      auto [it, fresh] = last_counts_.try_emplace(p.pipe, p);
      const PipeCounts& before = it->second;
      if (!fresh && seconds > 0 && p.batches >= before.batches) {
        out.push_back({"pipe batches/s", p.pipe, static_cast<double>(p.batches - before.batches) / seconds});
        if (p.counts_records && p.records >= before.records)
          out.push_back({"pipe records/s", p.pipe, static_cast<double>(p.records - before.records) / seconds});
      }
      it->second = p;
    }
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::map<std::string, PipeCounts> last_counts_;  // sampler thread only
};

// Every live queue's stats under "queue/<label>/...", summed over queues of one label.
class QueueStatSource final : public StatSource {
 public:
  void read(std::vector<StatRegistry::Entry>& out) const override {
    for (const QueueStats& q : live_queue_stats()) {
      const std::string key = "queue/" + q.label + "/";
      out.emplace_back(key + "depth", q.depth);
      out.emplace_back(key + "capacity", q.capacity);
      out.emplace_back(key + "puts", q.puts);
      out.emplace_back(key + "takes", q.takes);
      out.emplace_back(key + "put_blocked_ns", q.put_blocked_ns);
      out.emplace_back(key + "take_blocked_ns", q.take_blocked_ns);
    }
  }
};

// A queue's blob is "<queue>/handler" (the data layer's Queue names it so): the queue's own name reads better.
std::string queue_label(const std::string& name) {
  constexpr std::string_view kHandler = "/handler";
  return name.size() > kHandler.size() && name.ends_with(kHandler) ? name.substr(0, name.size() - kHandler.size())
                                                                   : name;
}

}  // namespace

void register_trace_counters() {
  // Destroyed at exit in reverse order: the registration (which waits for a sample in progress) first.
  static OperatorCounters source;
  static TraceCounterRegistration registration(&source);
  // Never destroyed: the registry exports during static teardown too.
  static const QueueStatSource* const queue_stats = [] {
    auto* q = new QueueStatSource();
    StatRegistry::global().add_source(q);
    return q;
  }();
  (void)queue_stats;
}

void trace_queue_created(const BlobsQueue* queue) {
  register_trace_counters();  // a queue's stats are exported wherever queues exist (once per process)
  std::lock_guard lk(queues().mu);
  queues().live.insert(queue);
}

void trace_queue_destroyed(const BlobsQueue* queue) noexcept {
  std::lock_guard lk(queues().mu);
  queues().live.erase(queue);
}

}  // namespace moka::detail

namespace moka {

std::vector<QueueStats> live_queue_stats() {
  std::vector<QueueStats> out;
  std::lock_guard lk(detail::queues().mu);
  out.reserve(detail::queues().live.size());
  for (const BlobsQueue* q : detail::queues().live) {
    out.push_back(q->stats());
    out.back().label = detail::queue_label(out.back().name);
  }
  return out;
}

}  // namespace moka
