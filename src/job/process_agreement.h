// ProcessAgreement: how the job engine takes one decision across the processes of a session — each
// process's step, then every process learns every outcome and fails the same way (docs/distributed.md §6.2).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace moka {
class ProcessChannel;
class Session;
}  // namespace moka

namespace moka::detail {

/// @brief Steps that every process of a session takes together: `all` runs a step on every process,
/// `leader` on process 0 only; then the processes exchange outcomes (Session::allgather, or a
/// ProcessChannel's), and when a
/// step failed anywhere every process throws the error of the lowest process that failed (same class
/// and message, `rank R` outermost). So the processes leave each agreement together, with the same
/// results or the same error, and none waits for another that has given up.
/// Every process must make the same calls in the same order (each call is collective).
class ProcessAgreement {
 public:
  /// Over the session's own allgather (the thread that runs the session).
  explicit ProcessAgreement(Session& session);
  /// Over a channel of its own (another thread).
  explicit ProcessAgreement(ProcessChannel& channel);

  int process() const noexcept { return process_; }
  int processes() const noexcept { return processes_; }
  bool leader() const noexcept { return process() == 0; }

  /// Runs `step` here; returns every process's result, by process.
  std::vector<std::string> all(const std::function<std::string()>& step);
  /// Runs `step` on process 0 only; returns its result on every process.
  std::string leader(const std::function<std::string()>& step);

 private:
  std::vector<std::string> exchange(const std::function<std::string()>* step);

  std::function<std::vector<std::string>(const std::string&)> allgather_;
  int process_ = 0;
  int processes_ = 1;
};

}  // namespace moka::detail
