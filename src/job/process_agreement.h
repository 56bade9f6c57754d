// ProcessAgreement: how the job engine takes one decision across the processes of a session — each
// process's step, then every process learns every outcome and fails the same way (docs/distributed.md §6.2).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace moka {
class Session;
}

namespace moka::detail {

/// @brief Steps that every process of a session takes together: `all` runs a step on every process,
/// `leader` on process 0 only; then the processes exchange outcomes (Session::allgather), and when a
/// step failed anywhere every process throws the error of the lowest process that failed (same class
/// and message, `rank R` outermost). So the processes leave each agreement together, with the same
/// results or the same error, and none waits for another that has given up.
/// Every process must make the same calls in the same order (each call is collective).
class ProcessAgreement {
 public:
  explicit ProcessAgreement(Session& session) : session_(session) {}

  int process() const noexcept;
  int processes() const noexcept;
  bool leader() const noexcept { return process() == 0; }

  /// Runs `step` here; returns every process's result, by process.
  std::vector<std::string> all(const std::function<std::string()>& step);
  /// Runs `step` on process 0 only; returns its result on every process.
  std::string leader(const std::function<std::string()>& step);

 private:
  std::vector<std::string> exchange(const std::function<std::string()>* step);

  Session& session_;
};

}  // namespace moka::detail
