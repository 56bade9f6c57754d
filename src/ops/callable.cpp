// Callable operators: user-named callable types and the anonymous "Callable" type keyed by token.
#include "moka/ops/callable.h"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>

#include "moka/core/error.h"
#include "moka/ops/registry.h"
#include "ops/builtin.h"

namespace moka {

namespace {

class CallableOp final : public OperatorBase {
 public:
  CallableOp(const OperatorDef& def, Workspace* ws, const CallableBuilder& builder)
      : OperatorBase(def, ws), fn_(builder()) {
    if (!fn_) throw InvalidInput(fmt::format("operator {}: its builder returned an empty function", def.type));
  }
  bool run() override {
    fn_(input_blobs(), output_blobs());
    return true;
  }

 private:
  CallableFn fn_;
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

}  // namespace moka
