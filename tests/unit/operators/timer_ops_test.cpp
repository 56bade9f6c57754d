// Unit tests of the timer operators and moka::Timer.
#include <gtest/gtest.h>
#include <algorithm>
#include <ctime>

#include <chrono>
#include <thread>

#include "moka/operators/stats.h"
#include "moka/operators/timer.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::fetch;
using test::run_op;

TEST(TimerOps, BeginGetEnd) {
  Workspace ws;
  run_op(ws, "TimerBegin", {}, {"timer_ops_test/t"});
  const Timer& t = ws.blob("timer_ops_test/t").get<Timer>();
  EXPECT_TRUE(t.running());
  EXPECT_EQ(t.counter_name(), "timer_ops_test/t");  // default: the output blob's name
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  run_op(ws, "TimerGet", {"timer_ops_test/t"}, {"ns"});
  const Tensor& ns = fetch(ws, "ns");
  EXPECT_EQ(ns.dtype(), DType::Int64);
  EXPECT_EQ(ns.shape(), std::vector<int64_t>{});
  EXPECT_GE(ns.item<int64_t>(), 2'000'000);
  const int64_t count_before = StatRegistry::global().get("timer_ops_test/t/count");
  const int64_t total_before = StatRegistry::global().get("timer_ops_test/t");
  run_op(ws, "TimerEnd", {"timer_ops_test/t"}, {});
  EXPECT_FALSE(t.running());
  EXPECT_EQ(StatRegistry::global().get("timer_ops_test/t/count"), count_before + 1);
  EXPECT_GE(StatRegistry::global().get("timer_ops_test/t") - total_before, 2'000'000);
}

TEST(TimerOps, CoarseClockTimesManyShortIntervals) {
  // The coarse clock ticks every `res` (1–10 ms, kernel HZ): an interval reads its length rounded
  // to ticks, off by less than one tick either way. Intervals that each sleep several ticks must
  // therefore sum to about the slept time, however slow the code between them is (sanitizers).
  timespec r{};
  ASSERT_EQ(clock_getres(CLOCK_MONOTONIC_COARSE, &r), 0);
  const int64_t res = std::max<int64_t>(r.tv_sec * 1'000'000'000 + r.tv_nsec, 1'000'000);
  Workspace ws;
  const std::vector<Argument> coarse = {make_arg("counter_name", "timer_ops_test/coarse"),
                                        make_arg("coarse_clock", true)};
  run_op(ws, "TimerBegin", {}, {"t"}, coarse);
  EXPECT_TRUE(ws.blob("t").get<Timer>().coarse());
  run_op(ws, "TimerEnd", {"t"}, {});
  const int64_t total_before = StatRegistry::global().get("timer_ops_test/coarse");
  const int64_t count_before = StatRegistry::global().get("timer_ops_test/coarse/count");
  constexpr int kIntervals = 3;
  const auto sleep = std::chrono::nanoseconds(3 * res);
  int64_t inside_max = 0;  // an upper bound of the time inside the timer (the whole loop)
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIntervals; ++i) {
    run_op(ws, "TimerBegin", {}, {"t"}, coarse);
    std::this_thread::sleep_for(sleep);
    run_op(ws, "TimerEnd", {"t"}, {});
  }
  inside_max = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(StatRegistry::global().get("timer_ops_test/coarse/count") - count_before, kIntervals);
  const int64_t total = StatRegistry::global().get("timer_ops_test/coarse") - total_before;
  EXPECT_GE(total, kIntervals * (sleep.count() - res)) << "res " << res;
  EXPECT_LE(total, inside_max + kIntervals * res) << "res " << res;
  // A TimerBegin without coarse_clock replaces the coarse timer (as another counter_name would).
  run_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", "timer_ops_test/coarse")});
  EXPECT_FALSE(ws.blob("t").get<Timer>().coarse());
}

TEST(TimerOps, CounterNameArgumentAndGetAndEnd) {
  Workspace ws;
  run_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", "timer_ops_test/named")});
  EXPECT_EQ(ws.blob("t").get<Timer>().counter_name(), "timer_ops_test/named");
  const int64_t count_before = StatRegistry::global().get("timer_ops_test/named/count");
  run_op(ws, "TimerGetAndEnd", {"t"}, {"ns"});
  EXPECT_EQ(fetch(ws, "ns").shape(), std::vector<int64_t>{1});
  EXPECT_GE(fetch(ws, "ns").item<int64_t>(), 0);
  EXPECT_FALSE(ws.blob("t").get<Timer>().running());
  EXPECT_EQ(StatRegistry::global().get("timer_ops_test/named/count"), count_before + 1);
  // Restartable.
  run_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", "timer_ops_test/named")});
  EXPECT_TRUE(ws.blob("t").get<Timer>().running());
}

TEST(TimerOps, MisuseIsRuntimeError) {
  Workspace ws;
  auto begin = create_op(ws, "TimerBegin", {}, {"t"});
  ASSERT_TRUE(begin->run());
  expect_error<RuntimeError>([&] { begin->run(); },
                             {"TimerBegin", "\"t\"", "Called TimerBegin on an already running timer."});
  run_op(ws, "TimerEnd", {"t"}, {});
  expect_error<RuntimeError>([&] { run_op(ws, "TimerEnd", {"t"}, {}); },
                             {"TimerEnd", "\"t\"", "Called TimerEnd on a stopped timer."});
  expect_error<RuntimeError>([&] { run_op(ws, "TimerGet", {"t"}, {"ns"}); },
                             {"TimerGet", "Called TimerGet on a stopped timer."});
  expect_error<RuntimeError>([&] { run_op(ws, "TimerGetAndEnd", {"t"}, {"ns"}); },
                             {"TimerGetAndEnd", "Called TimerGet on a stopped timer."});
}

TEST(TimerOps, WrongBlobAndArity) {
  Workspace ws;
  ws.create_blob("x")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  expect_error<TypeError>([&] { run_op(ws, "TimerEnd", {"x"}, {}); }, {"\"x\"", "Timer"});
  expect_error<TypeError>([&] { run_op(ws, "TimerGet", {"x"}, {"ns"}); }, {"\"x\"", "Timer"});
  expect_error<InvalidInput>([&] { create_op(ws, "TimerBegin", {"x"}, {"t"}); }, {"TimerBegin", "0 input"});
  expect_error<InvalidInput>([&] { create_op(ws, "TimerEnd", {"x"}, {"o"}); }, {"TimerEnd", "0 output"});
  expect_error<InvalidInput>([&] { create_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", 3)}); },
                             {"\"counter_name\""});
}

// Two TimerBegins with different counter names take turns on one blob: each replaces the other's timer,
// even when the new timer lands at the address of the one it replaced (which a kept operator must
// not take for the timer it checked last time).
TEST(TimerOps, OperatorsWithOtherNamesOnOneBlobReplaceEachOthersTimer) {
  Workspace ws;
  auto a = create_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", "timer_ops_test/turn_a")});
  auto b = create_op(ws, "TimerBegin", {}, {"t"}, {make_arg("counter_name", "timer_ops_test/turn_b")});
  auto end = create_op(ws, "TimerEnd", {"t"}, {});
  const int64_t a_before = StatRegistry::global().get("timer_ops_test/turn_a/count");
  const int64_t b_before = StatRegistry::global().get("timer_ops_test/turn_b/count");
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(a->run());
    EXPECT_EQ(ws.blob("t").get<Timer>().counter_name(), "timer_ops_test/turn_a");
    ASSERT_TRUE(end->run());
    ASSERT_TRUE(b->run());
    EXPECT_EQ(ws.blob("t").get<Timer>().counter_name(), "timer_ops_test/turn_b");
    ASSERT_TRUE(end->run());
  }
  EXPECT_EQ(StatRegistry::global().get("timer_ops_test/turn_a/count") - a_before, 5);
  EXPECT_EQ(StatRegistry::global().get("timer_ops_test/turn_b/count") - b_before, 5);
}

TEST(TimerOps, TimerOutlivesTheOperatorThatMadeIt) {
  Workspace ws;
  {
    auto begin = create_op(ws, "TimerBegin", {}, {"t"});
    ASSERT_TRUE(begin->run());
  }  // operator destroyed; the blob still owns a valid timer
  run_op(ws, "TimerGet", {"t"}, {"ns"});
  run_op(ws, "TimerEnd", {"t"}, {});
  EXPECT_FALSE(ws.blob("t").get<Timer>().running());
}

TEST(TimerOps, TimerClass) {
  Timer t("timer_ops_test/class");
  EXPECT_FALSE(t.running());
  t.begin();
  EXPECT_GE(t.get_ns(), 0);
  EXPECT_GE(t.end(), 0);
  EXPECT_THROW(t.end(), RuntimeError);
  EXPECT_THROW(t.get_ns(), RuntimeError);
}

}  // namespace
}  // namespace moka
