// Timer operators (Caffe2 stats_ops, §19): TimerBegin, TimerEnd, TimerGet, TimerGetAndEnd, and moka::Timer itself.
#include <fmt/format.h>
#include <time.h>

#include "moka/core/error.h"
#include "moka/ops/registry.h"
#include "moka/ops/stats.h"
#include "moka/ops/timer.h"
#include "ops/builtin.h"

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

int64_t Timer::now_ns() const noexcept {
#ifdef CLOCK_MONOTONIC_COARSE
  if (coarse_) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }
#endif
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// begin() and stop() load and store start_ns_ without a read-modify-write: only the timer's owner
// starts and stops it (see the header), and on x86 each locked instruction cost about as much as the
// rest of the timer in a pipe's per-batch path (one begin and one end per batch and stage).
void Timer::begin() {
  if (start_ns_.load(std::memory_order_relaxed) != kStopped)
    throw RuntimeError("Called TimerBegin on an already running timer.");
  start_ns_.store(now_ns(), std::memory_order_release);
}

int64_t Timer::stop(const char* what) {
  const int64_t now = now_ns();
  const int64_t start = start_ns_.load(std::memory_order_relaxed);
  if (start == kStopped) throw RuntimeError(what);
  start_ns_.store(kStopped, std::memory_order_release);
  const int64_t ns = now - start;
  // Plain adds to this timer's shares (only the owner stops it); readers of the stats count them.
  if (ns != 0) total_ns_.add(ns);
  count_.add(1);
  return ns;
}

int64_t Timer::end() { return stop("Called TimerEnd on a stopped timer."); }

int64_t Timer::get_ns() const {
  const int64_t start = start_ns_.load(std::memory_order_acquire);
  if (start == kStopped) throw RuntimeError("Called TimerGet on a stopped timer.");
  return now_ns() - start;
}

int64_t Timer::get_and_end() { return stop("Called TimerGet on a stopped timer."); }

bool Timer::running() const { return start_ns_.load(std::memory_order_acquire) != kStopped; }

namespace {

// Adds the operator and blob to a Timer's error, keeping its type.
template <class F>
auto with_context(const OperatorBase& op, const std::string& blob, F&& f) {
  try {
    return f();
  } catch (RuntimeError& e) {
    throw RuntimeError(fmt::format("{} (timer \"{}\"): {}", op.type(), blob, e.message()));
  }
}

class TimerBeginOp final : public OperatorBase {
 public:
  TimerBeginOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        counter_name_(args().get_string("counter_name", output_name(0))),
        coarse_(args().get_bool("coarse_clock", false)) {}
  bool run() override {
    // The blob owns the timer; reuse it when it is ours (so a running one is reported), else replace.
    // The timer this operator checked last time needs no string comparison (once per batch in a pipe).
    Blob& b = output_blob(0);
    Timer* t = b.is_type<Timer>() ? &b.get_checked_mutable<Timer>() : nullptr;
    if (t == nullptr || t != checked_ || t->id() != checked_id_) {
      if (t == nullptr || t->coarse() != coarse_ || t->counter_name() != counter_name_)
        t = &b.emplace<Timer>(counter_name_, coarse_);
      checked_ = t;
      checked_id_ = t->id();
    }
    with_context(*this, output_name(0), [&] {
      t->begin();
      return 0;
    });
    return true;
  }

 private:
  std::string counter_name_;
  bool coarse_;
  const Timer* checked_ = nullptr;  // the timer found (or made) with our name and clock last time
  uint64_t checked_id_ = 0;         // its id (a later timer at the same address has another)
};

class TimerEndOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    Timer& t = input_object<Timer>(0);
    with_context(*this, input_name(0), [&] { return t.end(); });
    return true;
  }
};

class TimerGetOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    Timer& t = input_object<Timer>(0);
    const int64_t ns = with_context(*this, input_name(0), [&] { return t.get_ns(); });
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
    Timer& t = input_object<Timer>(0);
    const int64_t ns = with_context(*this, input_name(0), [&] { return t.get_and_end(); });
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
  reg.add(OpSchema("TimerGet")
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
