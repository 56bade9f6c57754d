// Unit tests of the counter operators and moka::Counter.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "moka/operators/counter.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::fetch;
using test::run_op;

TEST(CounterOps, CreateAndRetrieve) {
  Workspace ws;
  run_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 3)});
  EXPECT_EQ(ws.blob("c").type_name(), "Counter");
  run_op(ws, "RetrieveCount", {"c"}, {"n"});
  EXPECT_EQ(fetch(ws, "n"), Tensor::scalar<int64_t>(3));
  run_op(ws, "CreateCounter", {}, {"d"});
  EXPECT_EQ(ws.blob("d").get<Counter>().retrieve(), 0);
}

TEST(CounterOps, CreateCounterAgainResetsTheSameCounter) {
  Workspace ws;
  auto op = create_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 2)});
  ASSERT_TRUE(op->run());
  Counter* first = &ws.blob("c").get_checked_mutable<Counter>();
  first->count_up();
  ASSERT_TRUE(op->run());
  EXPECT_EQ(&ws.blob("c").get<Counter>(), first);
  EXPECT_EQ(first->retrieve(), 2);
}

TEST(CounterOps, CountDownGoesBelowZero) {
  Workspace ws;
  run_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 1)});
  run_op(ws, "CountDown", {"c"}, {"d"});
  EXPECT_EQ(fetch(ws, "d"), Tensor::scalar<bool>(false));
  run_op(ws, "CheckCounterDone", {"c"}, {"done"});
  EXPECT_EQ(fetch(ws, "done"), Tensor::scalar<bool>(true));
  run_op(ws, "CountDown", {"c"}, {"d"});
  EXPECT_EQ(fetch(ws, "d"), Tensor::scalar<bool>(true));
  EXPECT_EQ(ws.blob("c").get<Counter>().retrieve(), -1);
}

TEST(CounterOps, CountUpReturnsPrevious) {
  Workspace ws;
  run_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 7)});
  run_op(ws, "CountUp", {"c"}, {"p"});
  EXPECT_EQ(fetch(ws, "p"), Tensor::scalar<int64_t>(7));
  run_op(ws, "CheckCounterDone", {"c"}, {"done"});
  EXPECT_EQ(fetch(ws, "done"), Tensor::scalar<bool>(false));
  EXPECT_EQ(ws.blob("c").get<Counter>().retrieve(), 8);
}

TEST(CounterOps, ResetCounter) {
  Workspace ws;
  run_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 4)});
  run_op(ws, "ResetCounter", {"c"}, {"prev"}, {make_arg("init_count", 9)});
  EXPECT_EQ(fetch(ws, "prev"), Tensor::scalar<int64_t>(4));
  run_op(ws, "ResetCounter", {"c"}, {});
  EXPECT_EQ(ws.blob("c").get<Counter>().retrieve(), 0);
}

TEST(CounterOps, NegativeInitCountIsInvalidInput) {
  Workspace ws;
  expect_error<InvalidInput>([&] { create_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", -1)}); },
                             {"CreateCounter", "negative init_count is not permitted."});
  run_op(ws, "CreateCounter", {}, {"c"});
  expect_error<InvalidInput>([&] { create_op(ws, "ResetCounter", {"c"}, {}, {make_arg("init_count", -5)}); },
                             {"ResetCounter", "negative init_count is not permitted."});
  expect_error<InvalidInput>([&] { create_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", 1.5)}); },
                             {"\"init_count\""});
}

TEST(CounterOps, WrongBlobTypeIsTypeError) {
  Workspace ws;
  ws.create_blob("t")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  ws.create_blob("empty");
  for (const char* type : {"CountDown", "CheckCounterDone", "CountUp", "RetrieveCount"}) {
    expect_error<TypeError>([&] { run_op(ws, type, {"t"}, {"o"}); }, {"\"t\"", "Tensor", "Counter"});
    expect_error<TypeError>([&] { run_op(ws, type, {"empty"}, {"o"}); }, {"\"empty\"", "Counter"});
  }
  expect_error<TypeError>([&] { run_op(ws, "ResetCounter", {"t"}, {}); }, {"\"t\"", "Counter"});
}

TEST(CounterOps, ArityErrors) {
  Workspace ws;
  run_op(ws, "CreateCounter", {}, {"c"});
  expect_error<InvalidInput>([&] { create_op(ws, "CreateCounter", {"c"}, {"d"}); }, {"CreateCounter", "0 input"});
  expect_error<InvalidInput>([&] { create_op(ws, "CountDown", {"c"}, {}); }, {"CountDown", "1 output"});
  expect_error<InvalidInput>([&] { create_op(ws, "ResetCounter", {"c"}, {"a", "b"}); }, {"ResetCounter", "output"});
  expect_error<InvalidInput>([&] { create_op(ws, "CountUp", {"c"}, {"o"}, {make_arg("step", 2)}); },
                             {"unknown argument", "\"step\"", "CountUp"});
}

TEST(CounterOps, ConcurrentCountDownHandsOutEachUnitOnce) {
  Workspace ws;
  constexpr int kThreads = 4, kPerThread = 300, kInit = 500;
  run_op(ws, "CreateCounter", {}, {"c"}, {make_arg("init_count", kInit)});
  std::atomic<int> not_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string out = "d" + std::to_string(t);
      auto op = create_op(ws, "CountDown", {"c"}, {out});
      for (int k = 0; k < kPerThread; ++k) {
        op->run();
        if (!ws.blob(out).get<Tensor>().item<bool>()) ++not_done;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(not_done.load(), kInit);
  EXPECT_EQ(ws.blob("c").get<Counter>().retrieve(), kInit - kThreads * kPerThread);
}

}  // namespace
}  // namespace moka
