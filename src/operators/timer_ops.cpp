// Timer operators TimerBegin, TimerEnd, TimerGet, TimerGetAndEnd and moka::Timer (docs/operators.md §3).
#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"
#include "moka/operators/timer.h"
#include "operators/builtin.h"

namespace moka {

namespace {
std::atomic<uint64_t> next_timer_id{1};
}  // namespace

Timer::Timer(std::string counter_name, bool coarse)
    : counter_name_(std::move(counter_name)),
      coarse_(coarse),
      id_(next_timer_id.fetch_add(1, std::memory_order_relaxed)),
      total_ns_(StatRegistry::global(), counter_name_),
      count_(StatRegistry::global(), counter_name_ + "/count") {}

void Timer::begin() {
  if (!try_begin()) throw RuntimeError(kAlreadyRunning);
}

int64_t Timer::end() {
  int64_t ns = 0;
  if (!try_stop(ns)) throw RuntimeError(kEndStopped);
  return ns;
}

int64_t Timer::get_ns() const {
  int64_t ns = 0;
  if (!try_get_ns(ns)) throw RuntimeError(kGetStopped);
  return ns;
}

int64_t Timer::get_and_end() {
  int64_t ns = 0;
  if (!try_stop(ns)) throw RuntimeError(kGetStopped);
  return ns;
}

bool Timer::running() const { return start_ns_.load(std::memory_order_acquire) != kStopped; }

namespace {

// A Timer's error, with the operator and blob.
[[noreturn, gnu::cold]] void throw_timer_error(const OperatorBase& op, const std::string& blob, const char* what) {
  throw RuntimeError(fmt::format("{} (timer \"{}\"): {}", op.type(), blob, what));
}

class TimerBeginOp final : public OperatorBase {
 public:
  TimerBeginOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        counter_name_(args().get_string("counter_name", output_name(0))),
        coarse_(args().get_bool("coarse_clock", false)) {}
  bool run() override {
    // The timer this operator checked last time needs no string comparison (once per batch in a pipe).
    Blob& b = output_blob(0);
    Timer* t = b.is_type<Timer>() ? &b.get_checked_mutable<Timer>() : nullptr;
    if (t == nullptr || t != checked_ || t->id() != checked_id_) [[unlikely]]
      t = bind(b, t);
    if (!t->try_begin()) throw_timer_error(*this, output_name(0), Timer::kAlreadyRunning);
    return true;
  }

 private:
  // The blob owns the timer; reuse the one it holds (`t`, or null) when it has our name and clock (so
  // that a running one is reported), else replace it. Out of line: once per timer, not per run.
  [[gnu::noinline]] Timer* bind(Blob& b, Timer* t) {
    if (t == nullptr || t->coarse() != coarse_ || t->counter_name() != counter_name_)
      t = &b.emplace<Timer>(counter_name_, coarse_);
    checked_ = t;
    checked_id_ = t->id();
    return t;
  }

  std::string counter_name_;
  bool coarse_;
  const Timer* checked_ = nullptr;  // the timer found (or made) with our name and clock last time
  uint64_t checked_id_ = 0;         // its id (a later timer at the same address has another)
};

class TimerEndOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    int64_t ns = 0;
    if (!input_object<Timer>(0).try_stop(ns)) throw_timer_error(*this, input_name(0), Timer::kEndStopped);
    return true;
  }
};

class TimerGetOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    int64_t ns = 0;
    if (!input_object<Timer>(0).try_get_ns(ns)) throw_timer_error(*this, input_name(0), Timer::kGetStopped);
    Tensor& out = output(0);
    out.resize(DType::Int64, {});
    out.mutable_data<int64_t>()[0] = ns;
    return true;
  }
};

class TimerGetAndEndOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    int64_t ns = 0;
    if (!input_object<Timer>(0).try_stop(ns)) throw_timer_error(*this, input_name(0), Timer::kGetStopped);
    Tensor& out = output(0);
    out.resize(DType::Int64, {1});
    out.mutable_data<int64_t>()[0] = ns;
    return true;
  }
};

}  // namespace

namespace detail {

void register_timer_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("TimerBegin")
              .inputs(0)
              .outputs(1)
              .arg("counter_name", ArgType::String, "stat key the elapsed time is published under",
                   "the output blob's name")
              .arg("coarse_clock", ArgType::Bool,
                   "moka: time with CLOCK_MONOTONIC_COARSE (cheap, 1–4 ms ticks; totals over many intervals stay "
                   "right) instead of steady_clock",
                   "false")
              .doc("Starts a timer held by the output blob (creating it, or replacing a timer with another "
                   "counter_name). The blob owns the timer, so it outlives the net. Fails with \"Called TimerBegin "
                   "on an already running timer.\" when the timer is running."),
          factory_of<TimerBeginOp>());
  reg.add(OpSchema("TimerEnd")
              .inputs(1)
              .outputs(0)
              .doc("Stops the timer in input 0 and publishes the elapsed nanoseconds to the stat registry: "
                   "<counter_name> += ns, <counter_name>/count += 1. Fails with \"Called TimerEnd on a stopped "
                   "timer.\" when it is not running."),
          factory_of<TimerEndOp>());
  reg.add(
      OpSchema("TimerGet")
          .inputs(1)
          .outputs(1)
          .doc("Writes the nanoseconds elapsed since the timer in input 0 began, as an int64 scalar (shape []). "
               "The timer keeps running. Fails with \"Called TimerGet on a stopped timer.\" when it is not running."),
      factory_of<TimerGetOp>());
  reg.add(OpSchema("TimerGetAndEnd")
              .inputs(1)
              .outputs(1)
              .doc("Stops the timer in input 0 (publishing as TimerEnd does) and writes the elapsed nanoseconds as "
                   "an int64 tensor of shape [1]. Fails with \"Called TimerGet on a stopped timer.\" when it is not "
                   "running."),
          factory_of<TimerGetAndEndOp>());
}

}  // namespace detail
}  // namespace moka
