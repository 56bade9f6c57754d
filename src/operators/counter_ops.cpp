// Counter operators (Caffe2 counter_ops; docs/operators.md §2): CreateCounter, ResetCounter, CountDown,
// CheckCounterDone, CountUp, RetrieveCount, all over a moka::Counter held by a blob.
#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/operators/counter.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

int64_t checked_init_count(const OperatorBase& op) {
  const int64_t n = op.args().get_int("init_count", 0);
  if (n < 0)
    throw InvalidInput(
        fmt::format("{}: argument \"init_count\" = {}: negative init_count is not permitted.", op.type(), n));
  return n;
}

template <class T>
void write_scalar(Tensor& t, T v) {
  t.resize(dtype_of<T>(), {});
  t.mutable_data<T>()[0] = v;
}

class CreateCounterOp final : public OperatorBase {
 public:
  CreateCounterOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws), init_(checked_init_count(*this)) {}
  bool run() override {
    // Reset an existing counter rather than replacing it: other threads may hold a reference to it.
    Blob& b = output_blob(0);
    if (b.is_type<Counter>())
      b.get_checked_mutable<Counter>().reset(init_);
    else
      b.emplace<Counter>(init_);
    return true;
  }

 private:
  int64_t init_;
};

class ResetCounterOp final : public OperatorBase {
 public:
  ResetCounterOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws), init_(checked_init_count(*this)) {}
  bool run() override {
    const int64_t prev = input_object<Counter>(0).reset(init_);
    if (output_size() > 0) write_scalar<int64_t>(output(0), prev);
    return true;
  }

 private:
  int64_t init_;
};

class CountDownOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    write_scalar<bool>(output(0), input_object<Counter>(0).count_down());
    return true;
  }
};

class CheckCounterDoneOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    write_scalar<bool>(output(0), input_object<Counter>(0).check_done());
    return true;
  }
};

class CountUpOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    write_scalar<int64_t>(output(0), input_object<Counter>(0).count_up());
    return true;
  }
};

class RetrieveCountOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    write_scalar<int64_t>(output(0), input_object<Counter>(0).retrieve());
    return true;
  }
};

}  // namespace

namespace detail {

void register_counter_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("CreateCounter")
              .inputs(0)
              .outputs(1)
              .arg("init_count", ArgType::Int, "initial count; must be >= 0", "0")
              .doc("Creates a counter holding init_count in the output blob. Running it again on a blob that "
                   "already holds a counter resets that counter to init_count (the counter object is kept, so "
                   "operators of other threads holding it stay valid)."),
          factory_of<CreateCounterOp>());
  reg.add(OpSchema("ResetCounter")
              .inputs(1)
              .outputs(0, 1)
              .arg("init_count", ArgType::Int, "value the counter is reset to; must be >= 0", "0")
              .doc("Sets the counter in input 0 to init_count. The optional output receives the previous count "
                   "as an int64 scalar (shape [])."),
          factory_of<ResetCounterOp>());
  reg.add(OpSchema("CountDown")
              .inputs(1)
              .outputs(1)
              .doc("Decrements the counter in input 0 and writes a bool scalar (shape []): false when the count was "
                   "> 0 before, true otherwise. As in Caffe2 the count keeps decrementing below zero."),
          factory_of<CountDownOp>());
  reg.add(OpSchema("CheckCounterDone")
              .inputs(1)
              .outputs(1)
              .doc("Writes a bool scalar (shape []): true when the counter in input 0 is <= 0. Does not change it."),
          factory_of<CheckCounterDoneOp>());
  reg.add(OpSchema("CountUp").inputs(1).outputs(1).doc(
              "Increments the counter in input 0 and writes its previous value as an int64 scalar (shape [])."),
          factory_of<CountUpOp>());
  reg.add(OpSchema("RetrieveCount")
              .inputs(1)
              .outputs(1)
              .doc("Writes the current value of the counter in input 0 as an int64 scalar (shape [])."),
          factory_of<RetrieveCountOp>());
}

}  // namespace detail
}  // namespace moka
