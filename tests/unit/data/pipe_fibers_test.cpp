// Unit tests: pipes run with Concurrency::fibers — same results as with threads, every operator on one
// thread, runtime threads as nested fibers, errors and cancellation, and the fall back to threads when
// an operator is not fiber-safe (users' callables may wait in ways a fiber cannot yield from).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <future>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "../../../src/exec/usable_cpus.h"
#include "moka/moka.h"
#include "moka/operators/blobs_queue.h"
#include "support/one_cpu.h"
#include "support/pipe_datasets.h"
#include "support/run_expect_error.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using moka::testing::make_datasets;
using moka::testing::run_expect_error;
using moka::testing::vals;
using schema::Field;

// Threads the fiber-safe test operators ran on, and how many times they ran.
std::mutex g_mu;
std::set<std::thread::id> g_threads;
std::atomic<int64_t> g_calls{0};
std::atomic<int64_t> g_fail_at{-1};  // FiberSafeCopy throws on this call (counted from 1)

void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_callable_operator(
        OpSchema("FiberSafeCopy").inputs(1).outputs(1).fiber_safe().doc("test: copies, notes its thread"), [] {
          return [](std::span<Blob* const> in, std::span<Blob* const> out) {
            {
              std::lock_guard lk(g_mu);
              g_threads.insert(std::this_thread::get_id());
            }
            if (++g_calls == g_fail_at.load()) throw RuntimeError("FiberSafeCopy failed on purpose");
            out[0]->get_mutable<Tensor>() = in[0]->get<Tensor>();
          };
        });
  });
}

void reset_test_ops(int64_t fail_at = -1) {
  register_test_ops();
  std::lock_guard lk(g_mu);
  g_threads.clear();
  g_calls = 0;
  g_fail_at = fail_at;
}

LocalSessionOptions with(Concurrency c) {
  LocalSessionOptions o;
  o.run.concurrency = c;
  return o;
}

Processor copy_processor(const std::string& name) {
  return Processor(
      [](const Field& rec) {
        Field out = schema::NewRecord(rec);
        ops::op("FiberSafeCopy", {rec["val"]()}, {out["val"]()});
        return out;
      },
      name);
}

// src → FiberSafeCopy → queue(capacity) → FiberSafeCopy → dst, each pipe with `threads` runtime threads.
std::vector<int64_t> run_two_pipes(Concurrency c, int64_t rows, int64_t batch, int32_t threads, int64_t capacity) {
  LocalSession session(with(c));
  auto [src, dst] = make_datasets(session, rows, "pf");
  TaskGroup tg([&, src = src, dst = dst] {
    ReaderSource q = pipe(src.reader({.batch_size = batch}),
                          {.processor = copy_processor("first"), .capacity = capacity, .num_runtime_threads = threads});
    pipe(q, {.output = dst.writer(), .processor = copy_processor("second"), .num_runtime_threads = threads});
  });
  session.run(tg);
  return vals(session, dst);
}

TEST(PipeOnFibers, SameRowsInOrderAllOnOneThread) {
  reset_test_ops();
  const std::vector<int64_t> got = run_two_pipes(Concurrency::fibers, 1000, 7, 1, 3);
  std::vector<int64_t> want(1000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(got, want);  // one runtime thread per pipe: the order is kept
  EXPECT_EQ(g_calls.load(), 2 * ((1000 + 6) / 7));
  EXPECT_EQ(g_threads.size(), 1u) << "with fibers both pipes' operators run on one thread";

  reset_test_ops();
  EXPECT_EQ(run_two_pipes(Concurrency::threads, 1000, 7, 1, 3), want);
  EXPECT_EQ(g_threads.size(), 2u) << "with threads each pipe's task runs on a pool worker of its own";
}

// Concurrency::automatic (the default): fibers where the thread running the step can use one CPU only.
TEST(PipeOnFibers, AutomaticUsesFibersOnOneCpuAndThreadsOnMore) {
  EXPECT_EQ(LocalSessionOptions{}.run.concurrency, Concurrency::automatic);
  std::vector<int64_t> want(1000);
  std::iota(want.begin(), want.end(), 0);
  std::thread pinned([&] {
    const moka::testing::PinnedToOneCpu one;
    ASSERT_TRUE(one.ok());
    reset_test_ops();
    EXPECT_EQ(run_two_pipes(Concurrency::automatic, 1000, 7, 1, 3), want);
    EXPECT_EQ(g_threads.size(), 1u) << "on one CPU both pipes take turns as fibers";
  });
  pinned.join();
  if (detail::usable_cpus() < 2) GTEST_SKIP() << "this machine gives the test one CPU only";
  reset_test_ops();
  EXPECT_EQ(run_two_pipes(Concurrency::automatic, 1000, 7, 1, 3), want);
  EXPECT_EQ(g_threads.size(), 2u) << "with CPUs to spare each pipe gets a worker thread";
}

TEST(PipeOnFibers, RuntimeThreadsAreNestedFibers) {
  reset_test_ops();
  std::vector<int64_t> got = run_two_pipes(Concurrency::fibers, 5000, 3, 3, 2);
  std::sort(got.begin(), got.end());
  std::vector<int64_t> want(5000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(got, want);
  EXPECT_EQ(g_threads.size(), 1u);
}

TEST(PipeOnFibers, ErrorMidStreamEndsTheRunAndClosesTheQueue) {
  reset_test_ops(/*fail_at=*/30);
  LocalSession session(with(Concurrency::fibers));
  auto [src, dst] = make_datasets(session, 1000, "pfe");
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "pfe_q"});
  TaskGroup tg([&, src = src, dst = dst] {
    pipe(src.reader(), {.output = q, .processor = copy_processor("thrower"), .num_runtime_threads = 2});
    pipe(q, {.output = dst.writer(), .num_runtime_threads = 2});
  });
  EXPECT_TRUE(run_expect_error(session, tg, "FiberSafeCopy failed on purpose"));
  EXPECT_TRUE(session.workspace().blob(q->queue().name()).get<BlobsQueuePtr>()->is_closed());
  const std::vector<int64_t> got = vals(session, dst);
  EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()).size(), got.size()) << "a row written twice";
  EXPECT_LT(got.size(), 1000u);
}

TEST(PipeOnFibers, CancellationWakesFibersWaitingOnAQueueNobodyFills) {
  reset_test_ops();
  LocalSessionOptions o = with(Concurrency::fibers);
  o.run.cancel = std::make_shared<CancelToken>();
  LocalSession session(o);
  auto [src, dst] = make_datasets(session, 10, "pfc");
  std::shared_ptr<Queue> never =
      Queue::make(2, {.schema = schema::Struct({{"val", schema::Scalar()}}), .name = "pfc_never"});
  TaskGroup tg([&, dst = dst] {
    // Two readers of a queue that nobody writes or closes: only cancel() ends them.
    pipe(never, {.output = dst.writer(), .processor = copy_processor("a"), .num_runtime_threads = 1});
    pipe(never, {.processor = copy_processor("b"), .num_runtime_threads = 1});
  });
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    o.run.cancel->cancel();
  });
  auto run = std::async(std::launch::async, [&] { session.run(tg); });
  const bool ended = run.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  canceller.join();
  ASSERT_TRUE(ended) << "the run hangs";
  EXPECT_NO_THROW(run.get());  // a cancelled run ends without an error
}

TEST(PipeOnFibers, CallableOperatorsKeepTheirOwnThreads) {
  // Two tasks whose callables meet at a barrier: on fibers of one thread the first would wait for the
  // second forever. A subtree with a Callable is not fiber-safe, so it runs on threads.
  std::barrier meet(2);
  std::mutex mu;
  std::set<std::thread::id> threads;
  auto meeting = [&] {
    return [&](std::span<Blob* const>, std::span<Blob* const>) {
      {
        std::lock_guard lk(mu);
        threads.insert(std::this_thread::get_id());
      }
      meet.arrive_and_wait();
    };
  };
  LocalSession session(with(Concurrency::fibers));
  TaskGroup tg([&] {
    Task(TaskOptions{.name = "a"}, [&] { ops::call(meeting()); });
    Task(TaskOptions{.name = "b"}, [&] { ops::call(meeting()); });
  });
  auto run = std::async(std::launch::async, [&] { session.run(tg); });
  ASSERT_EQ(run.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "the run hangs";
  run.get();
  EXPECT_EQ(threads.size(), 2u);
}

TEST(PipeOnFibers, FiberSafeFlags) {
  register_test_ops();
  const OperatorRegistry& reg = OperatorRegistry::global();
  EXPECT_TRUE(reg.is_fiber_safe("Add"));
  EXPECT_TRUE(reg.is_fiber_safe("SafeDequeueBlobs"));
  EXPECT_TRUE(reg.is_fiber_safe("FiberSafeCopy"));
  EXPECT_FALSE(reg.is_fiber_safe("Callable"));
  EXPECT_FALSE(reg.is_fiber_safe("NoSuchOperator"));
  EXPECT_THROW(OperatorRegistry::global().mark_fiber_safe("NoSuchOperator"), InvalidInput);
}

}  // namespace
}  // namespace moka
