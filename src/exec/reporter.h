// Internal: periodic report functions of a step (report substeps, report_net), each on its own worker.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace moka::detail {

class CompiledStep;

/// Runs each added function every `interval` (measured from the end of its previous run) while
/// the owning step executes, and — moka's decision 6 — once more after stop(), i.e. after
/// every sibling has finished, even when it was mid-run at that moment. An exception in a
/// function fails the owning step (cancelling its siblings) and ends that function's loop.
class Reporter {
 public:
  explicit Reporter(CompiledStep& owner) : owner_(owner) {}
  ~Reporter() { stop(); }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  void start(std::chrono::milliseconds interval, std::function<void()> fn);
  /// Wakes every loop, waits for each final run. Idempotent, never throws.
  void stop() noexcept;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int running = 0;
  };
  CompiledStep& owner_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace moka::detail
