// Users' own operators: a registered class and a registered callable, built once per net instantiation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

#include "moka/moka.h"

namespace moka {
namespace {

// A user operator class: doubles an int64 tensor.
class DoubleOp final : public OperatorBase {
 public:
  DoubleOp(const OperatorDef& d, Workspace* ws) : OperatorBase(d, ws), factor_(args().get_int("factor", 2)) {}
  bool run() override {
    const Tensor& in = input(0);
    Tensor& out = output(0);
    out.resize_like(in);
    auto src = in.values<int64_t>();
    auto dst = out.values<int64_t>();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = src[i] * factor_;
    return true;
  }

 private:
  int64_t factor_;
};

std::atomic<int> g_builds{0};
std::atomic<int> g_calls{0};

void register_user_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_operator<DoubleOp>(OpSchema("UserDouble")
                                    .inputs(1)
                                    .outputs(1)
                                    .allow_inplace({{0, 0}})
                                    .arg("factor", ArgType::Int, "multiplier", "2")
                                    .doc("test: multiplies by factor"));
    register_callable_operator(OpSchema("UserCounted").inputs(0, 1).outputs(0, 1).doc("test: counts calls"), [] {
      g_builds++;
      return [](std::span<Blob* const> in, std::span<Blob* const> out) {
        g_calls++;
        if (!in.empty() && !out.empty()) out[0]->get_mutable<Tensor>() = in[0]->get<Tensor>();
      };
    });
  });
}

TEST(UserOperators, RegisteredClassRunsWithItsSchema) {
  register_user_ops();
  Workspace ws;
  ws.create_blob("x")->get_mutable<Tensor>() = Tensor::vector<int64_t>({1, 2, 3});
  run_operator_once(ws, make_op("UserDouble", {"x"}, {"y"}, {make_arg("factor", int64_t{3})}));
  EXPECT_EQ(ws.blob("y").get<Tensor>(), Tensor::vector<int64_t>({3, 6, 9}));
  EXPECT_THROW(run_operator_once(ws, make_op("UserDouble", {"x"}, {"y"}, {make_arg("factr", int64_t{3})})),
               InvalidInput);
  EXPECT_THROW(run_operator_once(ws, make_op("UserDouble", {"x", "x"}, {"y"})), InvalidInput);
  // The type is taken: registering it again is an error.
  EXPECT_THROW(register_operator<DoubleOp>(OpSchema("UserDouble")), InvalidInput);
}

TEST(UserOperators, CallableIsBuiltOncePerNetInstantiation) {
  register_user_ops();
  g_builds = 0;
  g_calls = 0;
  Workspace ws;
  PlanDef plan;
  NetDef n;
  n.name = "n";
  n.op.push_back(make_op("UserCounted", {}, {}));
  plan.network.push_back(n);
  ExecutionStepDef inst;
  inst.name = "instance";
  inst.network = {"n"};
  inst.num_iter = 4;
  inst.create_workspace = true;  // each instance instantiates its own net
  ExecutionStepDef par;
  par.name = "parallel";
  par.substep = {inst};
  par.num_concurrent_instances = 16;
  plan.execution_step.push_back(par);
  run_plan(ws, plan);
  EXPECT_EQ(g_builds.load(), 16);
  EXPECT_EQ(g_calls.load(), 64);
}

TEST(UserOperators, AnonymousCallableByToken) {
  Workspace ws;
  std::atomic<int> calls{0};
  const int64_t token = register_callable([&calls] {
    return [&calls](std::span<Blob* const>, std::span<Blob* const> out) {
      calls++;
      out[0]->get_mutable<Tensor>() = Tensor::scalar<int64_t>(calls.load());
    };
  });
  NetDef n;
  n.name = "n";
  n.op.push_back(make_op("Callable", {}, {"out"}, {make_arg("token", token)}));
  run_net_once(ws, n);
  run_net_once(ws, n);
  EXPECT_EQ(ws.blob("out").get<Tensor>().item<int64_t>(), 2);
  n.op[0].arg[0].i = 987654321;
  try {
    run_net_once(ws, n);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("token 987654321 is not registered"), std::string::npos) << e.what();
  }
}

TEST(UserOperators, CallableExceptionsCarryTheOperator) {
  Workspace ws;
  const int64_t token = register_callable([] {
    return [](std::span<Blob* const>, std::span<Blob* const>) { throw std::invalid_argument("bad user input"); };
  });
  NetDef n;
  n.name = "user_net";
  n.op.push_back(make_op("Callable", {}, {}, {make_arg("token", token)}, "mine"));
  try {
    run_net_once(ws, n);
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "net \"user_net\" > operator #0 (Callable \"mine\"): bad user input");
  }
}

// callable_sleep_for: a waiting callable ends when its net is cancelled, and the cancel is forgotten
// once that run is over (the next run waits in full).
TEST(UserOperators, CallableSleepEndsOnCancelAndTheNextRunWaitsAgain) {
  Workspace ws;
  std::atomic<int64_t> wait_ms{3600 * 1000};
  std::atomic<int> full_waits{0}, cut_short{0};
  const int64_t token = register_callable([&] {
    return [&](std::span<Blob* const>, std::span<Blob* const>) {
      if (callable_sleep_for(std::chrono::milliseconds(wait_ms.load())))
        ++full_waits;
      else
        ++cut_short;
    };
  });
  NetDef n;
  n.name = "sleeper";
  n.op.push_back(make_op("Callable", {}, {}, {make_arg("token", token)}));
  SimpleNet* net = create_net(ws, n);
  auto run = std::async(std::launch::async, [&] { net->run(); });
  EXPECT_EQ(run.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  const auto t0 = std::chrono::steady_clock::now();
  net->cancel();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "the cancel did not end the wait";
  run.get();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(cut_short.load(), 1);
  wait_ms = 20;
  net->run();
  EXPECT_EQ(full_waits.load(), 1);
  // Outside a callable operator it just sleeps.
  EXPECT_TRUE(callable_sleep_for(std::chrono::milliseconds(1)));
}

}  // namespace
}  // namespace moka
