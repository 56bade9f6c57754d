// Unit tests of the queue operators: each operator, their error paths, and cancellation waking a blocked
// queue operator (RunOptions.cancel, and a sibling's failure in concurrent substeps).
#include <gtest/gtest.h>

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

#include "moka/exec/cancel_token.h"
#include "moka/exec/plan_executor.h"
#include "moka/operators/blobs_queue.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using namespace std::chrono_literals;
using test::create_op;
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;

BlobsQueue& queue_of(Workspace& ws, const std::string& name) { return *ws.blob(name).get<BlobsQueuePtr>(); }

void create_queue(Workspace& ws, const std::string& name, int64_t capacity, int64_t num_blobs = 1) {
  run_op(ws, "CreateBlobsQueue", {}, {name}, {make_arg("capacity", capacity), make_arg("num_blobs", num_blobs)});
}

bool status(Workspace& ws, const std::string& name) {
  const Tensor& t = fetch(ws, name);
  EXPECT_EQ(t.dtype(), DType::Bool);
  EXPECT_EQ(t.ndim(), 0u);
  return t.item<bool>();
}

TEST(QueueOps, CreateBlobsQueue) {
  Workspace ws;
  run_op(
      ws, "CreateBlobsQueue", {}, {"q"},
      {make_arg("capacity", 3), make_arg("num_blobs", 2), make_arg("field_names", std::vector<std::string>{"a", "b"})});
  const BlobsQueuePtr& q = ws.blob("q").get<BlobsQueuePtr>();
  EXPECT_EQ(q->name(), "q");
  EXPECT_EQ(q->capacity(), 3);
  EXPECT_EQ(q->num_blobs(), 2);
  EXPECT_EQ(q->field_names(), (std::vector<std::string>{"a", "b"}));
  run_op(ws, "CreateBlobsQueue", {}, {"d"});
  EXPECT_EQ(queue_of(ws, "d").capacity(), 1);
  EXPECT_EQ(queue_of(ws, "d").num_blobs(), 1);
  // enforce_unique_name is accepted (nothing to enforce: records live inside the queue).
  run_op(ws, "CreateBlobsQueue", {}, {"e"}, {make_arg("enforce_unique_name", true)});
}

TEST(QueueOps, CreateBlobsQueueErrors) {
  Workspace ws;
  for (int64_t bad : {0, -1})
    expect_error<InvalidInput>([&] { create_op(ws, "CreateBlobsQueue", {}, {"q"}, {make_arg("capacity", bad)}); },
                               {"CreateBlobsQueue", "\"capacity\""});
  expect_error<InvalidInput>([&] { create_op(ws, "CreateBlobsQueue", {}, {"q"}, {make_arg("num_blobs", 0)}); },
                             {"CreateBlobsQueue", "\"num_blobs\""});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "CreateBlobsQueue", {}, {"q"},
                  {make_arg("num_blobs", 2), make_arg("field_names", std::vector<std::string>{"a"})});
      },
      {"CreateBlobsQueue", "Wrong number of fieldNames provided."});
  expect_error<InvalidInput>([&] { create_op(ws, "CreateBlobsQueue", {}, {"q"}, {make_arg("capacity", 1.5)}); },
                             {"\"capacity\""});
  expect_error<InvalidInput>([&] { create_op(ws, "CreateBlobsQueue", {"x"}, {"q"}); }, {});
}

TEST(QueueOps, EnqueueDequeueMovesRecords) {
  Workspace ws;
  create_queue(ws, "q", 2, 2);
  feed(ws, "a", Tensor::vector<int64_t>({1, 2}));
  feed(ws, "b", Tensor::vector<std::string>({"x"}));
  const Tensor* a_obj = &fetch(ws, "a");
  run_op(ws, "EnqueueBlobs", {"q", "a", "b"}, {"a", "b"});
  EXPECT_EQ(queue_of(ws, "q").size(), 1u);
  EXPECT_FALSE(ws.blob("a").is_initialized());  // moved out (swapped with the slot's empty blob)
  run_op(ws, "DequeueBlobs", {"q"}, {"x", "y"});
  EXPECT_EQ(&fetch(ws, "x"), a_obj);  // the same tensor object, not a copy
  EXPECT_EQ(vals<int64_t>(fetch(ws, "x")), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vals<std::string>(fetch(ws, "y")), (std::vector<std::string>{"x"}));
  EXPECT_EQ(queue_of(ws, "q").size(), 0u);
}

TEST(QueueOps, EnqueueAndDequeueFailOnClosedQueue) {
  Workspace ws;
  create_queue(ws, "q", 2);
  feed(ws, "a", Tensor::scalar<int64_t>(1));
  run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
  run_op(ws, "CloseBlobsQueue", {"q"}, {});
  feed(ws, "a", Tensor::scalar<int64_t>(2));
  auto enq = create_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
  EXPECT_FALSE(enq->run());  // decision 5: refused although a slot is free
  EXPECT_EQ(fetch(ws, "a").item<int64_t>(), 2);
  auto deq = create_op(ws, "DequeueBlobs", {"q"}, {"x"});
  EXPECT_TRUE(deq->run());  // drains what was left
  EXPECT_EQ(fetch(ws, "x").item<int64_t>(), 1);
  EXPECT_FALSE(deq->run());  // closed and empty
}

TEST(QueueOps, DequeueTimeout) {
  Workspace ws;
  create_queue(ws, "q", 1);
  expect_error<RuntimeError>([&] { run_op(ws, "DequeueBlobs", {"q"}, {"x"}, {make_arg("timeout_secs", 0.05)}); },
                             {"DequeueBlobs", "\"q\"", "DequeueBlobs timed out in 0.05 secs"});
}

// ---- timeouts -------------------------------------------------------------------------------------

// A full queue with no reader: a blocking write with timeout_secs 0.2 throws after at least 0.2 s (and
// well before the generous upper bound), naming the queue and the timeout; the blobs stay with the caller.
void expect_write_times_out(const std::string& op_type, std::vector<std::string> outs) {
  SCOPED_TRACE(op_type);
  Workspace ws;
  create_queue(ws, "q", 1);
  feed(ws, "a", Tensor::scalar<int64_t>(1));
  run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
  feed(ws, "a", Tensor::scalar<int64_t>(2));
  auto op = create_op(ws, op_type, {"q", "a"}, std::move(outs), {make_arg("timeout_secs", 0.2)});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string message = op_type + " timed out in 0.2 secs";
  expect_error<RuntimeError>([&] { op->run(); }, {"\"q\"", message.c_str(), "full"});
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(fetch(ws, "a").item<int64_t>(), 2);  // not moved
  EXPECT_EQ(queue_of(ws, "q").size(), 1u);
  EXPECT_FALSE(queue_of(ws, "q").is_closed());
}

TEST(QueueOps, EnqueueTimeout) { expect_write_times_out("EnqueueBlobs", {"a"}); }

TEST(QueueOps, SafeEnqueueTimeoutIsAnErrorNotAStatus) { expect_write_times_out("SafeEnqueueBlobs", {"a", "s"}); }

// A reader frees the slot before the timeout: the write succeeds (for both enqueue operators).
TEST(QueueOps, TimedEnqueueSucceedsWhenAReaderFreesASlot) {
  for (const std::string op_type : {"EnqueueBlobs", "SafeEnqueueBlobs"}) {
    SCOPED_TRACE(op_type);
    Workspace ws;
    create_queue(ws, "q", 1);
    feed(ws, "a", Tensor::scalar<int64_t>(1));
    run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
    feed(ws, "a", Tensor::scalar<int64_t>(2));
    std::vector<std::string> outs{"a"};
    if (op_type == "SafeEnqueueBlobs") outs.push_back("s");
    auto op = create_op(ws, op_type, {"q", "a"}, outs, {make_arg("timeout_secs", 30.0)});
    BlobsQueue& q = queue_of(ws, "q");
    std::atomic<int64_t> first{-1};  // what the reader got (the only value shared with it)
    std::thread reader([&q, &first] {
      std::this_thread::sleep_for(50ms);
      Blob b;
      Blob* out[] = {&b};
      if (q.blocking_read(out)) first.store(b.get<Tensor>().item<int64_t>());
    });
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = false;
    EXPECT_NO_THROW(ok = op->run());  // no throw escapes before the join
    EXPECT_TRUE(ok);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
    reader.join();
    EXPECT_EQ(first.load(), 1);
    if (op_type == "SafeEnqueueBlobs") {
      EXPECT_FALSE(status(ws, "s"));
    }
    auto deq = create_op(ws, "DequeueBlobs", {"q"}, {"x"}, {make_arg("timeout_secs", 5.0)});
    ASSERT_TRUE(deq->run());
    EXPECT_EQ(fetch(ws, "x").item<int64_t>(), 2);
  }
}

TEST(QueueOps, SafeDequeueTimeout) {
  Workspace ws;
  create_queue(ws, "q", 4);
  for (int64_t records : {1, 3}) {
    SCOPED_TRACE(records);
    auto op = create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"},
                        {make_arg("timeout_secs", 0.2), make_arg("num_records", records)});
    const auto t0 = std::chrono::steady_clock::now();
    expect_error<RuntimeError>([&] { op->run(); }, {"\"q\"", "SafeDequeueBlobs timed out in 0.2 secs", "empty"});
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 5s);
  }
  // One deadline for a batch: a record there, then nothing more: the partial batch after the timeout.
  feed(ws, "a", Tensor::vector<int64_t>({7}));
  run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
  auto op =
      create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"}, {make_arg("timeout_secs", 0.2), make_arg("num_records", 3)});
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(op->run());
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  EXPECT_FALSE(status(ws, "s"));
  EXPECT_EQ(vals<int64_t>(fetch(ws, "x")), (std::vector<int64_t>{7}));
}

TEST(QueueOps, InvalidTimeoutsAreRefusedAtConstruction) {
  Workspace ws;
  create_queue(ws, "q", 1);
  feed(ws, "a", Tensor::scalar<int64_t>(1));
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {-1.0, -1e-9, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(bad);
    const std::vector<Argument> args{make_arg("timeout_secs", bad)};
    expect_error<InvalidInput>(
        [&] {
          create_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"}, args);
        },
        {"EnqueueBlobs", "\"timeout_secs\"", "finite"});
    expect_error<InvalidInput>(
        [&] {
          create_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"a", "s"}, args);
        },
        {"SafeEnqueueBlobs", "\"timeout_secs\"", "finite"});
    expect_error<InvalidInput>([&] { create_op(ws, "DequeueBlobs", {"q"}, {"x"}, args); },
                               {"DequeueBlobs", "\"timeout_secs\"", "finite"});
    expect_error<InvalidInput>(
        [&] {
          create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"}, args);
        },
        {"SafeDequeueBlobs", "\"timeout_secs\"", "finite"});
  }
  // 0 (forever) and huge finite timeouts are fine.
  create_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"}, {make_arg("timeout_secs", 0.0)});
  create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"}, {make_arg("timeout_secs", 1e300)});
}

TEST(QueueOps, ArityAndInPlaceErrors) {
  Workspace ws;
  create_queue(ws, "q", 1, 2);
  feed(ws, "a", Tensor::scalar<int64_t>(1));
  feed(ws, "b", Tensor::scalar<int64_t>(1));
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "EnqueueBlobs", {"q", "a", "b"}, {"a", "c"});
      },
      {"EnqueueBlobs must work in place", "\"c\"", "\"b\""});
  expect_error<InvalidInput>([&] { create_op(ws, "EnqueueBlobs", {"q", "a", "b"}, {"a"}); }, {"EnqueueBlobs"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "SafeEnqueueBlobs", {"q", "a", "b"}, {"a", "b"});
      },
      {"SafeEnqueueBlobs", "status"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"b", "s"});
      },
      {"SafeEnqueueBlobs must work in place"});
  expect_error<InvalidInput>([&] { create_op(ws, "SafeDequeueBlobs", {"q"}, {"x"}); }, {});
  expect_error<InvalidInput>([&] { create_op(ws, "CloseBlobsQueue", {"q"}, {"x"}); }, {});
}

TEST(QueueOps, NumBlobsMismatchNamesTheOperator) {
  Workspace ws;
  create_queue(ws, "q", 1, 2);
  feed(ws, "a", Tensor::scalar<int64_t>(1));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
      },
      {"EnqueueBlobs", "\"q\"", "records of 2 blobs", "moves 1"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"a", "s"});
      },
      {"SafeEnqueueBlobs", "records of 2 blobs"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "DequeueBlobs", {"q"}, {"x", "y", "z"});
      },
      {"DequeueBlobs", "records of 2 blobs", "moves 3"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"});
      },
      {"SafeDequeueBlobs", "records of 2 blobs"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "WeightedSampleDequeueBlobs", {"q"}, {"x", "s"});
      },
      {"WeightedSampleDequeueBlobs", "records of 2 blobs"});
  EXPECT_EQ(queue_of(ws, "q").size(), 0u);  // nothing moved
}

// Every queue operator names the input that holds something else than a queue, and moves nothing.
TEST(QueueOps, InputThatIsNotAQueueIsATypeError) {
  Workspace ws;
  feed(ws, "q", Tensor::scalar<int64_t>(1));
  expect_error<TypeError>([&] { run_op(ws, "DequeueBlobs", {"q"}, {"x"}); }, {"q"});
  expect_error<TypeError>([&] { run_op(ws, "CloseBlobsQueue", {"q"}, {}); }, {"q"});
  feed(ws, "a", Tensor::scalar<int64_t>(5));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
      },
      {"input 0 (\"q\") holds", "expected"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"a", "s"});
      },
      {"input 0 (\"q\") holds", "expected"});
  EXPECT_EQ(fetch(ws, "a").item<int64_t>(), 5);  // not moved
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"});
      },
      {"input 0 (\"q\") holds", "expected"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSampleDequeueBlobs", {"q"}, {"x", "s"});
      },
      {"input 0 (\"q\") holds", "expected"});
  // The second of two queues (the weights pick it).
  create_queue(ws, "real", 1);
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSampleDequeueBlobs", {"real", "q"}, {"x", "s"},
               {make_arg("weights", std::vector<double>{0.0, 1.0})});
      },
      {"input 1 (\"q\") holds", "expected"});
}

TEST(QueueOps, SafeEnqueueStatus) {
  Workspace ws;
  create_queue(ws, "q", 1);
  feed(ws, "a", Tensor::scalar<int64_t>(5));
  run_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"a", "s"});
  EXPECT_FALSE(status(ws, "s"));
  run_op(ws, "CloseBlobsQueue", {"q"}, {});
  feed(ws, "a", Tensor::scalar<int64_t>(6));
  run_op(ws, "SafeEnqueueBlobs", {"q", "a"}, {"a", "s"});  // succeeds as an operator
  EXPECT_TRUE(status(ws, "s"));
}

// moka's operator for a Queue's writer tasks: the counter is created with writers - 1, and only the
// run that finds it already at 0 (the last writer) closes the queue.
TEST(QueueOps, CountDownCloseBlobsQueueClosesInTheLastWriter) {
  Workspace ws;
  create_queue(ws, "q", 2);
  run_op(ws, "CreateCounter", {}, {"left"}, {make_arg("init_count", int64_t{2})});  // 3 writers
  run_op(ws, "CountDownCloseBlobsQueue", {"q", "left"}, {"closed"});
  EXPECT_FALSE(status(ws, "closed"));
  run_op(ws, "CountDownCloseBlobsQueue", {"q", "left"}, {});
  EXPECT_FALSE(queue_of(ws, "q").is_closed());
  run_op(ws, "CountDownCloseBlobsQueue", {"q", "left"}, {"closed"});
  EXPECT_TRUE(status(ws, "closed"));
  EXPECT_TRUE(queue_of(ws, "q").is_closed());
  expect_error<InvalidInput>([&] { create_op(ws, "CountDownCloseBlobsQueue", {"q"}, {}); }, {});
}

TEST(QueueOps, SafeDequeueStatus) {
  Workspace ws;
  create_queue(ws, "q", 2);
  feed(ws, "a", Tensor::scalar<int64_t>(5));
  run_op(ws, "EnqueueBlobs", {"q", "a"}, {"a"});
  run_op(ws, "CloseBlobsQueue", {"q"}, {});
  run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"});
  EXPECT_FALSE(status(ws, "s"));
  EXPECT_EQ(fetch(ws, "x").item<int64_t>(), 5);
  run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"});
  EXPECT_TRUE(status(ws, "s"));
  EXPECT_EQ(fetch(ws, "x").item<int64_t>(), 5);  // untouched
}

void enqueue_rows(Workspace& ws, const std::string& q, Tensor a, Tensor b) {
  feed(ws, "ea", std::move(a));
  feed(ws, "eb", std::move(b));
  run_op(ws, "EnqueueBlobs", {q, "ea", "eb"}, {"ea", "eb"});
}

TEST(QueueOps, SafeDequeueManyConcatenatesEveryDtype) {
  Workspace ws;
  create_queue(ws, "q", 8, 2);
  enqueue_rows(ws, "q", Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::vector<std::string>({"a"}));
  enqueue_rows(ws, "q", Tensor::from_vector<float>({2, 2}, {3, 4, 5, 6}), Tensor::vector<std::string>({"b", "c"}));
  enqueue_rows(ws, "q", Tensor::from_vector<float>({0, 2}, {}), Tensor::vector<std::string>({}));
  enqueue_rows(ws, "q", Tensor::from_vector<float>({1, 2}, {7, 8}), Tensor::vector<std::string>({"d"}));
  auto op = create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 3)});
  ASSERT_TRUE(op->run());
  EXPECT_FALSE(status(ws, "s"));
  EXPECT_EQ(fetch(ws, "x"), Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<std::string>({"a", "b", "c"}));
  // One record left, then the queue closes: a partial batch is a success; after it, failure.
  run_op(ws, "CloseBlobsQueue", {"q"}, {});
  ASSERT_TRUE(op->run());
  EXPECT_FALSE(status(ws, "s"));
  EXPECT_EQ(fetch(ws, "x"), Tensor::from_vector<float>({1, 2}, {7, 8}));
  EXPECT_EQ(fetch(ws, "y"), Tensor::vector<std::string>({"d"}));
  ASSERT_TRUE(op->run());
  EXPECT_TRUE(status(ws, "s"));

  for (DType dt : {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64, DType::Double}) {
    Workspace w2;
    create_queue(w2, "q", 4, 2);
    enqueue_rows(w2, "q", Tensor(dt, {2}), Tensor::vector<int32_t>({1}));
    enqueue_rows(w2, "q", Tensor(dt, {1}), Tensor::vector<int32_t>({2, 3}));
    run_op(w2, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 2)});
    EXPECT_EQ(fetch(w2, "x").dtype(), dt);
    EXPECT_EQ(fetch(w2, "x").shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(vals<int32_t>(fetch(w2, "y")), (std::vector<int32_t>{1, 2, 3}));
  }
}

TEST(QueueOps, SafeDequeueManyErrors) {
  Workspace ws;
  create_queue(ws, "q0", 1);
  for (int64_t bad : {0, -2})
    expect_error<InvalidInput>(
        [&] {
          create_op(ws, "SafeDequeueBlobs", {"q0"}, {"x", "s"}, {make_arg("num_records", bad)});
        },
        {"SafeDequeueBlobs", "\"num_records\""});
  create_queue(ws, "q", 4, 2);
  enqueue_rows(ws, "q", Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::vector<int64_t>({1}));
  enqueue_rows(ws, "q", Tensor::from_vector<float>({1, 3}, {1, 2, 3}), Tensor::vector<int64_t>({2}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 2)});
      },
      {"SafeDequeueBlobs", "field 0", "\"x\"", "float32[1,2]", "float32[1,3]"});
  enqueue_rows(ws, "q", Tensor::vector<float>({1}), Tensor::vector<int64_t>({1}));
  enqueue_rows(ws, "q", Tensor::vector<float>({1}), Tensor::vector<int32_t>({2}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 2)});
      },
      {"field 1", "\"y\"", "int64[1]", "int32[1]"});
  enqueue_rows(ws, "q", Tensor::scalar<float>(1), Tensor::vector<int64_t>({1}));
  enqueue_rows(ws, "q", Tensor::scalar<float>(2), Tensor::vector<int64_t>({2}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 2)});
      },
      {"0-d"});
  feed(ws, "ea", Tensor::vector<float>({1}));
  ws.create_blob("eb")->emplace<int>(3);
  run_op(ws, "EnqueueBlobs", {"q", "ea", "eb"}, {"ea", "eb"});
  run_op(ws, "CloseBlobsQueue", {"q"}, {});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "y", "s"}, {make_arg("num_records", 2)});
      },
      {"not a tensor"});
}

// num_records only bounds a batch: the operator allocates its buffers as records arrive, so a huge
// num_records costs nothing up front.
TEST(QueueOps, SafeDequeueManyAllocatesNothingUpFront) {
  Workspace ws;
  create_queue(ws, "q", 4, 4);
  // Bytes in use: small blocks from the heap (uordblks) plus large ones mmap-ed (hblkhd).
  auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const std::size_t before = in_use();
  std::vector<std::unique_ptr<OperatorBase>> ops;
  for (int i = 0; i < 4; ++i)
    ops.push_back(create_op(ws, "SafeDequeueBlobs", {"q"}, {"w", "x", "y", "z", "s"},
                            {make_arg("num_records", int64_t{1000000})}));
  const std::size_t after = in_use();  // 0 under sanitizers that replace malloc: passes
  EXPECT_LT(after - std::min(after, before), std::size_t{1} << 20) << "bytes allocated by 4 operators";
  create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"}, {make_arg("num_records", std::numeric_limits<int64_t>::max())});
}

// No cap on num_records: a batch of more than 2^20 records (the former silent cap) is read whole.
TEST(QueueOps, SafeDequeueManyReadsMoreThanAMillionRecords) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A million records held at once cost gigabytes under a sanitizer; the cap is not a memory-safety
  // or threading matter, and the release suite covers it.
  GTEST_SKIP() << "too heavy under sanitizers";
#endif
  Workspace ws;
  create_queue(ws, "q", 4096);
  constexpr int64_t kRecords = (int64_t{1} << 20) + 3;
  BlobsQueue& q = queue_of(ws, "q");
  std::thread producer([&q] {
    for (int64_t i = 0; i < kRecords; ++i) {
      Blob b;
      b.get_mutable<Tensor>() = Tensor::vector<int32_t>({static_cast<int32_t>(i)});
      Blob* in[] = {&b};
      if (!q.blocking_write(in)) return;
    }
    q.close();
  });
  auto op = create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"}, {make_arg("num_records", kRecords + 10)});
  bool ran = false;
  try {
    ran = op->run();
  } catch (...) {
    q.close();  // unblock the producer before failing
    producer.join();
    throw;
  }
  producer.join();
  ASSERT_TRUE(ran);
  EXPECT_FALSE(status(ws, "s"));
  const Tensor& x = fetch(ws, "x");
  ASSERT_EQ(x.shape(), (std::vector<int64_t>{kRecords}));
  const auto v = x.values<int32_t>();
  for (int64_t i : {int64_t{0}, int64_t{1} << 20, kRecords - 1}) EXPECT_EQ(v[static_cast<std::size_t>(i)], i);
}

TEST(QueueOps, WeightedSampleDequeue) {
  Workspace ws;
  create_queue(ws, "q0", 8);
  create_queue(ws, "q1", 8);
  for (int i = 0; i < 4; ++i) {
    feed(ws, "a", Tensor::scalar<int64_t>(100 + i));
    run_op(ws, "EnqueueBlobs", {"q1", "a"}, {"a"});
  }
  // q0 has weight 0: never chosen; table_idx_blob 0 overwrites field output 0 with the queue index.
  auto op = create_op(ws, "WeightedSampleDequeueBlobs", {"q0", "q1"}, {"x", "s"},
                      {make_arg("weights", std::vector<double>{0.0, 2.0})});
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(op->run());
    EXPECT_FALSE(status(ws, "s"));
    EXPECT_EQ(fetch(ws, "x").item<int64_t>(), 100 + i);
  }
  run_op(ws, "CloseBlobsQueue", {"q1"}, {});
  ASSERT_TRUE(op->run());
  EXPECT_TRUE(status(ws, "s"));

  Workspace w2;
  create_queue(w2, "q0", 8, 2);
  create_queue(w2, "q1", 8, 2);
  for (const char* q : {"q0", "q1"})
    for (int i = 0; i < 3; ++i) enqueue_rows(w2, q, Tensor::scalar<int64_t>(i), Tensor::scalar<int64_t>(i));
  auto op2 = create_op(w2, "WeightedSampleDequeueBlobs", {"q0", "q1"}, {"x", "y", "s"},
                       {make_arg("table_idx_blob", 1), make_arg("seed", 7)});
  std::vector<int32_t> picks;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(op2->run());
    ASSERT_FALSE(status(w2, "s"));
    const Tensor& idx = fetch(w2, "y");
    ASSERT_EQ(idx.dtype(), DType::Int32);
    ASSERT_EQ(idx.shape(), (std::vector<int64_t>{1}));
    picks.push_back(idx.values<int32_t>()[0]);
  }
  // Deterministic given the seed: a second operator with the same seed picks the same queues.
  Workspace w3;
  create_queue(w3, "q0", 8, 2);
  create_queue(w3, "q1", 8, 2);
  for (const char* q : {"q0", "q1"})
    for (int i = 0; i < 3; ++i) enqueue_rows(w3, q, Tensor::scalar<int64_t>(i), Tensor::scalar<int64_t>(i));
  auto op3 = create_op(w3, "WeightedSampleDequeueBlobs", {"q0", "q1"}, {"x", "y", "s"},
                       {make_arg("table_idx_blob", 1), make_arg("seed", 7)});
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(op3->run());
    if (status(w3, "s")) break;
    EXPECT_EQ(fetch(w3, "y").values<int32_t>()[0], picks[static_cast<std::size_t>(i)]);
  }
}

TEST(QueueOps, WeightedSampleErrors) {
  Workspace ws;
  create_queue(ws, "q0", 1);
  create_queue(ws, "q1", 1);
  auto make = [&](std::vector<Argument> args, std::vector<std::string> outs = {"x", "s"}) {
    create_op(ws, "WeightedSampleDequeueBlobs", {"q0", "q1"}, outs, std::move(args));
  };
  expect_error<InvalidInput>(
      [&] {
        make({make_arg("weights", std::vector<double>{0.0, 0.0})});
      },
      {"WeightedSampleDequeueBlobs", "Sum of weights must be positive"});
  expect_error<InvalidInput>(
      [&] {
        make({make_arg("weights", std::vector<double>{-1.0, 2.0})});
      },
      {"WeightedSampleDequeueBlobs", "non-negative", "\"q0\""});
  expect_error<InvalidInput>([&] { make({make_arg("weights", std::vector<double>{1.0})}); },
                             {"\"weights\"", "1 values for 2 queues"});
  expect_error<InvalidInput>([&] { make({make_arg("table_idx_blob", 1)}); }, {"\"table_idx_blob\" = 1"});
  expect_error<InvalidInput>([&] { make({make_arg("table_idx_blob", -2)}); }, {"\"table_idx_blob\""});
}

// ---- cancellation ----------------------------------------------------------------------------------

// Sleeps `ms`, then throws: the failing sibling of a blocked queue operator.
class FailAfterOp final : public OperatorBase {
 public:
  FailAfterOp(const OperatorDef& d, Workspace* ws) : OperatorBase(d, ws), ms_(args().get_int("ms", 20)) {}
  bool run() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    throw InvalidInput("queue test: the sibling failed");
  }

 private:
  int64_t ms_;
};

void register_fail_after() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_operator<FailAfterOp>(
        OpSchema("QueueTestFailAfter").arg("ms", ArgType::Int, "delay", "20").doc("test: sleeps, then throws"));
  });
}

// Counts its runs: the last operator of blocked_plan's init net, so that a test thread can wait
// until the plan is past init and about to block.
std::atomic<int> g_init_runs{0};
class InitDoneOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    g_init_runs.fetch_add(1, std::memory_order_release);
    return true;
  }
};

void register_init_done() {
  static std::once_flag once;
  std::call_once(once,
                 [] { register_operator<InitDoneOp>(OpSchema("QueueTestInitDone").doc("test: counts its runs")); });
}

// A plan whose "blocked" net holds one queue operator that blocks forever: on an empty queue (reads)
// or a full one (writes).
struct BlockingCase {
  std::string name;
  OperatorDef op;
};

std::vector<BlockingCase> blocking_cases() {
  return {
      {"DequeueBlobs", make_op("DequeueBlobs", {"empty"}, {"x"})},
      {"SafeDequeueBlobs", make_op("SafeDequeueBlobs", {"empty"}, {"x", "s"})},
      {"SafeDequeueBlobs_many", make_op("SafeDequeueBlobs", {"empty"}, {"x", "s"}, {make_arg("num_records", 4)})},
      {"WeightedSampleDequeueBlobs", make_op("WeightedSampleDequeueBlobs", {"empty", "empty2"}, {"x", "s"})},
      {"EnqueueBlobs", make_op("EnqueueBlobs", {"full", "a"}, {"a"})},
      {"SafeEnqueueBlobs", make_op("SafeEnqueueBlobs", {"full", "a"}, {"a", "s"})},
  };
}

PlanDef blocked_plan(const OperatorDef& blocking, bool with_failing_sibling) {
  PlanDef plan;
  NetDef init;
  init.name = "init";
  init.op.push_back(make_op("CreateBlobsQueue", {}, {"empty"}));
  init.op.push_back(make_op("CreateBlobsQueue", {}, {"empty2"}));
  init.op.push_back(make_op("CreateBlobsQueue", {}, {"full"}));
  init.op.push_back(make_op("ConstantFill", {}, {"a"}, {make_arg("shape", std::vector<int64_t>{1})}));
  init.op.push_back(make_op("SafeEnqueueBlobs", {"full", "a"}, {"a", "s0"}));
  init.op.push_back(make_op("ConstantFill", {}, {"a"}, {make_arg("shape", std::vector<int64_t>{1})}));
  register_init_done();
  init.op.push_back(make_op("QueueTestInitDone", {}, {}));
  NetDef blocked;
  blocked.name = "blocked";
  blocked.op.push_back(blocking);
  plan.network = {init, blocked};
  ExecutionStepDef init_step;
  init_step.name = "init";
  init_step.network = {"init"};
  ExecutionStepDef blocked_step;
  blocked_step.name = "blocked";
  blocked_step.network = {"blocked"};
  ExecutionStepDef work;
  work.name = "work";
  work.substep.push_back(blocked_step);
  if (with_failing_sibling) {
    NetDef fail;
    fail.name = "fail";
    // Long enough for the blocked sibling to start blocking first, even under TSan.
    fail.op.push_back(make_op("QueueTestFailAfter", {}, {}, {make_arg("ms", 100)}));
    plan.network.push_back(fail);
    ExecutionStepDef fail_step;
    fail_step.name = "fail";
    fail_step.network = {"fail"};
    work.substep.push_back(fail_step);
    work.concurrent_substeps = true;
  }
  plan.execution_step = {init_step, work};
  return plan;
}

TEST(QueueOpsCancel, CancelTokenWakesABlockedQueueOperator) {
  for (const auto& c : blocking_cases()) {
    SCOPED_TRACE(c.name);
    Workspace ws;
    RunOptions opts;
    opts.cancel = std::make_shared<CancelToken>();
    // Cancel once the blocked operator runs: a cancel that lands before it starts (a slow init
    // under TSan) skips it, and then nothing closes its queue.
    const int inits = g_init_runs.load(std::memory_order_acquire);
    std::thread canceller([&] {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (g_init_runs.load(std::memory_order_acquire) == inits && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(50ms);
      opts.cancel->cancel();
    });
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(run_plan(ws, blocked_plan(c.op, false), opts));  // cancelled: no error
    canceller.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    // cancel() closed the queue the operator was blocked on.
    const std::string qname = c.op.input[0];
    EXPECT_TRUE(queue_of(ws, qname).is_closed());
  }
}

TEST(QueueOpsCancel, SiblingFailureWakesABlockedQueueOperator) {
  register_fail_after();
  for (const auto& c : blocking_cases()) {
    SCOPED_TRACE(c.name);
    Workspace ws;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      run_plan(ws, blocked_plan(c.op, true));
      ADD_FAILURE() << "expected the sibling's error";
    } catch (const InvalidInput& e) {  // the sibling's error, with its type, is what the run ends with
      EXPECT_NE(std::string(e.what()).find("queue test: the sibling failed"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("\"fail\""), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    EXPECT_TRUE(queue_of(ws, c.op.input[0]).is_closed());
  }
}

TEST(QueueOpsCancel, CancelBeforeRunStillPreventsBlocking) {
  Workspace ws;
  create_queue(ws, "q", 1);
  auto op = create_op(ws, "DequeueBlobs", {"q"}, {"x"});
  op->cancel();            // arrives before run() bound the queue
  EXPECT_TRUE(op->run());  // closes the queue on binding, does not block; not an error after cancel
  EXPECT_TRUE(queue_of(ws, "q").is_closed());
}

TEST(QueueOpsCancel, CancelFromAnotherThreadWhileBlocked) {
  Workspace ws;
  create_queue(ws, "q", 1);
  auto op = create_op(ws, "SafeDequeueBlobs", {"q"}, {"x", "s"});
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    op->cancel();
  });
  ASSERT_TRUE(op->run());
  t.join();
  EXPECT_TRUE(status(ws, "s"));
}

}  // namespace
}  // namespace moka
