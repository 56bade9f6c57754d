// The NetBuilder DSL's core (ops::op, Const, net, stop, call) and its typed built-in operator
// helpers (Caffe2's net_builder.py `ops`).
#include "moka/builder/ops.h"

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka::ops {

namespace detail {

NetBuilder& active_builder(std::string_view what) {
  if (NetBuilder* b = NetBuilder::current(false)) return *b;
  throw InvalidInput(fmt::format("No active NetBuilder. (ops::{} must be called inside a NetBuilder body)", what));
}

}  // namespace detail

// ---- core ----

BlobRefs op(const std::string& type, Inputs inputs, Outputs outputs, std::vector<Arg> args) {
  return detail::active_builder(type).current_net().op(type, std::move(inputs).blobs(), std::move(outputs),
                                                       std::move(args));
}

BlobRef Const(const ConstValue& value, const ConstOptions& options) {
  return detail::active_builder("Const").current_net().Const(value, options);
}

Net net() { return detail::active_builder("net").current_net(); }

Net net(const NetOptions& options) {
  NetBuilder& b = detail::active_builder("net");
  return options.name.empty() ? b.current_net() : b.current_net(options.name);
}

Net net(const Net& n) {
  detail::active_builder("net").add(n);
  return n;
}

ExecutionStep net(const ExecutionStep& step) {
  detail::active_builder("net").add(step);
  return step;
}

void stop() { stop_if(Const(true)); }

void stop_if(const BlobRef& blob) { detail::active_builder("stop_if").stop_if(blob); }

BlobRefs call(CallableFn fn, Inputs inputs, Outputs outputs, std::vector<Arg> args) {
  if (!fn) throw InvalidInput("ops::call: the function is empty");
  return call(CallableBuilder([fn = std::move(fn)] { return fn; }), std::move(inputs), std::move(outputs),
              std::move(args));
}

BlobRefs call(CallableBuilder builder, Inputs inputs, Outputs outputs, std::vector<Arg> args) {
  if (!builder) throw InvalidInput("ops::call: the builder is empty");
  // Check for a builder before registering, so a misplaced call leaves no token behind.
  Net current = detail::active_builder("call").current_net();
  args.emplace_back("token", register_callable(std::move(builder)));
  return current.op(kCallableOpType, std::move(inputs).blobs(), std::move(outputs), std::move(args));
}

// ---- typed helpers of the built-in operators ----

#define MOKA_OPS_ONE(Type)                                                             \
  BlobRef Type(Inputs inputs, Outputs outputs, std::vector<Arg> args) {                \
    return op(#Type, std::move(inputs), std::move(outputs), std::move(args)).single(); \
  }
#define MOKA_OPS_MANY(Type)                                                   \
  BlobRefs Type(Inputs inputs, Outputs outputs, std::vector<Arg> args) {      \
    return op(#Type, std::move(inputs), std::move(outputs), std::move(args)); \
  }

MOKA_OPS_ONE(Add)
MOKA_OPS_ONE(Sub)
MOKA_OPS_ONE(Mul)
MOKA_OPS_ONE(Div)
MOKA_OPS_ONE(Sum)
MOKA_OPS_ONE(EQ)
MOKA_OPS_ONE(NE)
MOKA_OPS_ONE(LT)
MOKA_OPS_ONE(LE)
MOKA_OPS_ONE(GT)
MOKA_OPS_ONE(GE)
MOKA_OPS_ONE(And)
MOKA_OPS_ONE(Or)
MOKA_OPS_ONE(Xor)
MOKA_OPS_ONE(Not)
MOKA_OPS_ONE(Cast)
MOKA_OPS_ONE(Copy)
MOKA_OPS_MANY(Print)
MOKA_OPS_ONE(GetAllBlobNames)
MOKA_OPS_ONE(CreateMutex)
MOKA_OPS_ONE(Iter)
MOKA_OPS_ONE(AtomicIter)
MOKA_OPS_MANY(StatRegistryExport)
MOKA_OPS_ONE(ConstantFill)
MOKA_OPS_ONE(GivenTensorFill)
MOKA_OPS_ONE(GivenTensorDoubleFill)
MOKA_OPS_ONE(GivenTensorIntFill)
MOKA_OPS_ONE(GivenTensorInt64Fill)
MOKA_OPS_ONE(GivenTensorBoolFill)
MOKA_OPS_ONE(GivenTensorStringFill)
MOKA_OPS_ONE(CreateCounter)
MOKA_OPS_MANY(ResetCounter)
MOKA_OPS_ONE(CountDown)
MOKA_OPS_ONE(CountUp)
MOKA_OPS_ONE(CheckCounterDone)
MOKA_OPS_ONE(RetrieveCount)
MOKA_OPS_ONE(TimerBegin)
MOKA_OPS_MANY(TimerEnd)
MOKA_OPS_ONE(TimerGet)
MOKA_OPS_ONE(TimerGetAndEnd)

#undef MOKA_OPS_ONE
#undef MOKA_OPS_MANY

}  // namespace moka::ops
