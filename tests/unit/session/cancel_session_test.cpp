// Cancelling a running session.run: from another thread (CancelToken::cancel) and from a signal
// (SignalCancellation), while its operators block in a queue or loop for ever.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <thread>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;
using Clock = std::chrono::steady_clock;

// A TaskGroup of two nodes: one waits for a queue nobody fills, the other loops until a blob it
// never sets; neither ends by itself.
TaskGroup endless_group() {
  return TaskGroup([&] {
    Task({.name = "take"}, [&] {
      BlobRef q = ops::op("CreateBlobsQueue", {}, 1, {{"capacity", 1}})[0];
      ops::op("DequeueBlobs", {q}, 1);
    });
    Node("n2", [&] { Task({.name = "spin"}, [&] { ops::loop([&] { ops::stop_if(ops::Const(false)); }); }); });
  });
}

// A reader of endless records (a constant, never a stop), with read(), which ReaderWithDelay wraps.
struct EndlessReader final : Reader {
  ReadOutput read(Net& net) override { return {net.Const(false), {net.Const(int64_t{1})}}; }
};

// A pipe whose reader waits an hour before each record (ReaderWithDelay).
TaskGroup delayed_reader_group() {
  return TaskGroup([&] {
    pipe(std::make_shared<ReaderWithDelay>(std::make_shared<EndlessReader>(), 3600.0),
         {.processor = Processor([](const schema::Field&) {}, "drop")});
  });
}

// Runs the group in a session whose runs hold `token`; returns how long session.run took after
// `trigger` was called (on this thread) once the run had started.
template <class Trigger>
std::chrono::milliseconds cancelled_run_time(const std::shared_ptr<CancelToken>& token, Trigger trigger,
                                             TaskGroup (*make_group)() = endless_group) {
  LocalSessionOptions options;
  options.run.cancel = token;
  LocalSession session(options);
  TaskGroup group = make_group();
  auto run = std::async(std::launch::async, [&] {
    try {
      session.run(group);
    } catch (const Error&) {
      // An operator that saw the cancellation may fail its net; either way the run is over.
    }
  });
  EXPECT_EQ(run.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout) << "the group ended by itself";
  const auto t0 = Clock::now();
  trigger();
  EXPECT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "session.run ignored the cancel";
  run.wait();
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

TEST(CancelSession, CancelFromAnotherThreadStopsBlockedAndLoopingNodesWithin1s) {
  auto token = std::make_shared<CancelToken>();
  const auto took = cancelled_run_time(token, [&] { token->cancel(); });
  EXPECT_LT(took.count(), 1000);
  EXPECT_TRUE(token->cancelled());
}

// Same class as a DequeueBlobs that waits for ever: a reader's delay ends when its run is cancelled.
TEST(CancelSession, CancelEndsAReaderWithDelayWithin1s) {
  auto token = std::make_shared<CancelToken>();
  const auto took = cancelled_run_time(
      token, [&] { token->cancel(); }, delayed_reader_group);
  EXPECT_LT(took.count(), 1000);
}

TEST(CancelSession, SigtermThroughSignalCancellationStopsTheRunWithin1s) {
  auto token = std::make_shared<CancelToken>();
  SignalCancellation on_signal(token);
  EXPECT_FALSE(on_signal.interrupted());
  const auto took = cancelled_run_time(token, [] { std::raise(SIGTERM); });
  EXPECT_LT(took.count(), 1000);
  EXPECT_TRUE(on_signal.interrupted());
  EXPECT_EQ(on_signal.signal(), SIGTERM);
}

TEST(CancelSession, SignalCancellationRestoresThePreviousHandlersAndIsOnePerProcess) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  {
    auto token = std::make_shared<CancelToken>();
    SignalCancellation on_signal(token);
    EXPECT_THROW(SignalCancellation(std::make_shared<CancelToken>()), InvalidInput);
    EXPECT_THROW(SignalCancellation(nullptr), InvalidInput);
    std::raise(SIGINT);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!token->cancelled() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(token->cancelled());
    EXPECT_EQ(on_signal.signal(), SIGINT);
  }
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  // And a new one may be made once the first is gone.
  SignalCancellation again(std::make_shared<CancelToken>());
}

}  // namespace
}  // namespace moka
