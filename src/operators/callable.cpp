// Callable operators: user-named callable types and the anonymous "Callable" type keyed by token.
#include "moka/operators/callable.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

// What callable_sleep_for waits on: the cancel() of the operator running on this thread.
struct CancelWait {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> cancelled{false};  // written under mu; read without it only to skip the lock
};
thread_local CancelWait* running_wait = nullptr;

class CallableOp final : public OperatorBase {
 public:
  CallableOp(const OperatorDef& def, Workspace* ws, const CallableBuilder& builder)
      : OperatorBase(def, ws), fn_(builder()) {
    if (!fn_) throw InvalidInput(fmt::format("operator {}: its builder returned an empty function", def.type));
  }
  bool run() override {
    // Made current for this run (nested callables restore the outer one); a cancel() that
    // arrived before the run still counts, and is forgotten once the run is over.
    struct Current {
      CancelWait& wait;
      CancelWait* outer;
      explicit Current(CancelWait& w) : wait(w), outer(running_wait) { running_wait = &w; }
      ~Current() {
        running_wait = outer;
        if (!wait.cancelled.load(std::memory_order_relaxed)) return;  // the common case: no lock per run
        std::lock_guard lk(wait.mu);
        wait.cancelled.store(false, std::memory_order_relaxed);
      }
    } current(wait_);
    fn_(input_blobs(), output_blobs());
    return true;
  }
  void cancel() override {
    std::lock_guard lk(wait_.mu);
    wait_.cancelled.store(true, std::memory_order_relaxed);
    wait_.cv.notify_all();
  }

 private:
  CallableFn fn_;
  CancelWait wait_;
};

struct TokenTable {
  std::mutex mu;
  std::map<int64_t, CallableBuilder> builders;
  int64_t next = 1;
};
TokenTable& tokens() {
  static auto* t = new TokenTable();
  return *t;
}

}  // namespace

void register_callable_operator(OpSchema schema, CallableBuilder builder) {
  if (!builder) throw InvalidInput(fmt::format("operator {}: builder is empty", schema.type()));
  OperatorRegistry::global().add(std::move(schema), [builder](const OperatorDef& d, Workspace* ws) {
    return std::make_unique<CallableOp>(d, ws, builder);
  });
}

int64_t register_callable(CallableBuilder builder) {
  if (!builder) throw InvalidInput("register_callable: builder is empty");
  auto& t = tokens();
  std::lock_guard lk(t.mu);
  const int64_t token = t.next++;
  t.builders.emplace(token, std::move(builder));
  return token;
}

namespace detail {
void register_callable_ops(OperatorRegistry& reg) {
  reg.add(OpSchema(kCallableOpType)
              .inputs(0, OpSchema::kUnbounded)
              .outputs(0, OpSchema::kUnbounded)
              .allow_any_inplace()
              .required_arg("token", ArgType::Int, "token returned by register_callable() in this process")
              .doc("Runs a C++ callable registered in this process (the equivalent of Caffe2's ops.Python). "
                   "Its builder is called once per operator construction; the callable on every run. "
                   "Plans holding it cannot be serialised."),
          [](const OperatorDef& d, Workspace* ws) -> std::unique_ptr<OperatorBase> {
            const int64_t token = Arguments(d.arg).get_int("token", 0);
            CallableBuilder builder;
            {
              auto& t = tokens();
              std::lock_guard lk(t.mu);
              auto it = t.builders.find(token);
              if (it == t.builders.end())
                throw InvalidInput(fmt::format("Callable: token {} is not registered in this process", token));
              builder = it->second;
            }
            return std::make_unique<CallableOp>(d, ws, builder);
          });
}
}  // namespace detail

bool callable_sleep_for(std::chrono::nanoseconds duration) {
  CancelWait* w = running_wait;
  if (w == nullptr) {
    std::this_thread::sleep_for(duration);
    return true;
  }
  // In slices of a day: steady_clock::now() + a delay of centuries would overflow.
  constexpr std::chrono::nanoseconds kSlice = std::chrono::hours(24);
  std::unique_lock lk(w->mu);
  while (duration > std::chrono::nanoseconds::zero()) {
    const auto slice = std::min(duration, kSlice);
    if (w->cv.wait_for(lk, slice, [w] { return w->cancelled.load(std::memory_order_relaxed); })) return false;
    duration -= slice;
  }
  return !w->cancelled.load(std::memory_order_relaxed);
}

}  // namespace moka
