// Definitions of the test-only operators; include from exactly one .cpp per test executable.
#pragma once

#include "support/test_ops.h"

namespace moka::testing {

TestOpState& test_state() {
  static TestOpState s;
  return s;
}

namespace {

// Marks stuck_run and blocks until cancelled (StuckBlocking of plan_executor_test.cc).
class StuckBlockingOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    test_state().stuck_run = true;
    test_state().stuck_blocking_runs++;
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return cancelled_; });
    return true;
  }
  void cancel() override {
    test_state().cancel_count++;
    std::lock_guard lk(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

class NoopOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    test_state().stuck_run = true;
    return true;
  }
};

// Waits until some other operator set stuck_run, then throws TestError.
class ErrorOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    while (!test_state().stuck_run) std::this_thread::sleep_for(std::chrono::microseconds(100));
    throw TestError();
  }
};

// The first run blocks and ignores cancel (until the test releases it); later runs throw.
class BlockingErrorOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    if (test_state().blocking_error_runs.fetch_sub(1) >= 1) {
      while (!test_state().release_blocked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return true;
    }
    throw TestError();
  }
};

class CountCallsOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    test_state().counter++;
    return true;
  }
};

class SleepMsOp final : public OperatorBase {
 public:
  SleepMsOp(const OperatorDef& d, Workspace* ws) : OperatorBase(d, ws), ms_(args().get_int("ms", 1)) {}
  bool run() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    return true;
  }

 private:
  int64_t ms_;
};

class ThrowStdOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override { throw std::runtime_error("plain std error"); }
};

class ReturnFalseOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override { return false; }
};

}  // namespace

void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_operator<StuckBlockingOp>(OpSchema("StuckBlocking").doc("test: blocks until cancelled"));
    register_operator<NoopOp>(OpSchema("Noop").doc("test: sets stuck_run"));
    register_operator<ErrorOp>(OpSchema("Error").doc("test: throws TestError once stuck_run"));
    register_operator<BlockingErrorOp>(OpSchema("BlockingError").doc("test: blocks ignoring cancel, then throws"));
    register_operator<CountCallsOp>(OpSchema("CountCalls").doc("test: counts runs"));
    register_operator<SleepMsOp>(OpSchema("SleepMs").arg("ms", ArgType::Int, "milliseconds", "1").doc("test: sleeps"));
    register_operator<ThrowStdOp>(OpSchema("ThrowStd").doc("test: throws std::runtime_error"));
    register_operator<ReturnFalseOp>(OpSchema("ReturnFalse").doc("test: reports failure"));
  });
}

NetDef net_of(const std::string& name, const std::vector<std::string>& op_types) {
  NetDef n;
  n.name = name;
  for (const auto& t : op_types) n.op.push_back(make_op(t, {}, {}));
  return n;
}

ExecutionStepDef step_with_nets(const std::string& name, const std::vector<std::string>& nets) {
  ExecutionStepDef s;
  s.name = name;
  s.network = nets;
  return s;
}

ExecutionStepDef step_with_substeps(const std::string& name, std::vector<ExecutionStepDef> substeps) {
  ExecutionStepDef s;
  s.name = name;
  s.substep = std::move(substeps);
  return s;
}

}  // namespace moka::testing
