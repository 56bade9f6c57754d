// Test-only operators for the plan executor (ports of plan_executor_test.cc's ops) and plan-building helpers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

/// The error the test operators throw (a moka::Error, so its type survives the executor).
class TestError : public Error {
 public:
  TestError() : Error("test error") {}
};

/// Shared state of the test operators; reset() before each test.
struct TestOpState {
  std::atomic<bool> stuck_run{false};
  std::atomic<int> stuck_blocking_runs{0};  // StuckBlocking operators that entered run()
  std::atomic<int> cancel_count{0};
  std::atomic<int> blocking_error_runs{0};
  std::atomic<bool> release_blocked{false};  // lets a BlockingError op that ignored cancel finish at test end
  std::atomic<int> counter{0};
  void reset() {
    stuck_run = false;
    stuck_blocking_runs = 0;
    cancel_count = 0;
    blocking_error_runs = 0;
    release_blocked = false;
    counter = 0;
  }
};
TestOpState& test_state();

/// Registers StuckBlocking, Noop, Error, BlockingError, CountCalls, SleepMs, ThrowStd once per process.
void register_test_ops();

/// A net with one operator per type given, no inputs/outputs.
NetDef net_of(const std::string& name, const std::vector<std::string>& op_types);
ExecutionStepDef step_with_nets(const std::string& name, const std::vector<std::string>& nets);
ExecutionStepDef step_with_substeps(const std::string& name, std::vector<ExecutionStepDef> substeps);

}  // namespace moka::testing
