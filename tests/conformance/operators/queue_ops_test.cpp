// Conformance: hypothesis_test.py test_safe_blobs_queue and test_weighted_sample_blobs_queue
// (docs/testing.md §1), built as plan definitions and run by the plan executor. The hypothesis ranges are
// swept over their corners plus a fixed pseudo-random sample, so every run checks the same cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/defs/plan_def.h"
#include "moka/exec/plan_executor.h"
#include "moka/operators/counter.h"

namespace moka {
namespace {

struct Params {
  int a, b, capacity, num_blobs;  // safe: a = producers, b = consumers; weighted: a = queues, b = num_iter
};

// Every corner of the ranges, then `extra` cases drawn with a fixed seed.
std::vector<Params> sweep(int a_lo, int a_hi, int b_lo, int b_hi, int extra, uint32_t seed) {
  std::vector<Params> out;
  for (int a : {a_lo, a_hi})
    for (int b : {b_lo, b_hi})
      for (int c : {1, 5})
        for (int n : {1, 3}) out.push_back({a, b, c, n});
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < extra; ++i) out.push_back({pick(a_lo, a_hi), pick(b_lo, b_hi), pick(1, 5), pick(1, 3)});
  return out;
}

ExecutionStepDef net_step(std::string name, std::vector<std::string> nets) {
  ExecutionStepDef s;
  s.name = std::move(name);
  s.network = std::move(nets);
  return s;
}

ExecutionStepDef seq_step(std::string name, std::vector<ExecutionStepDef> subs, bool concurrent = false) {
  ExecutionStepDef s;
  s.name = std::move(name);
  s.substep = std::move(subs);
  if (concurrent) s.concurrent_substeps = true;
  return s;
}

NetDef net(std::string name, std::vector<OperatorDef> ops) {
  NetDef n;
  n.name = std::move(name);
  n.op = std::move(ops);
  return n;
}

OperatorDef fill_float(const std::string& out, double value, std::vector<int64_t> shape) {
  return make_op("ConstantFill", {}, {out}, {make_arg("shape", std::move(shape)), make_arg("value", value)});
}

// Ports test_safe_blobs_queue: producers SafeEnqueue (i+1)*10 records each, then the queue is closed;
// consumers SafeDequeue and count until their dequeue fails. Every record is counted exactly once.
TEST(Conformance, HypothesisSafeBlobsQueue) {
  for (const Params& p : sweep(1, 10, 1, 10, 48, 20181)) {
    const int num_producers = p.a, num_consumers = p.b;
    SCOPED_TRACE(::testing::Message() << "producers=" << num_producers << " consumers=" << num_consumers
                                      << " capacity=" << p.capacity << " num_blobs=" << p.num_blobs);
    PlanDef plan;
    std::vector<OperatorDef> init_ops{make_op("CreateBlobsQueue", {}, {"queue"},
                                              {make_arg("capacity", p.capacity), make_arg("num_blobs", p.num_blobs)}),
                                      fill_float("one", 1.0, {})};
    for (int i = 0; i < num_consumers; ++i) init_ops.push_back(fill_float(fmt::format("counter_{}", i), 0.0, {}));
    plan.network.push_back(net("init", init_ops));

    std::vector<ExecutionStepDef> producer_steps;
    int64_t expected = 0;
    for (int i = 0; i < num_producers; ++i) {
      std::vector<OperatorDef> ops;
      std::vector<std::string> blobs{"queue"};
      for (int j = 0; j < p.num_blobs; ++j) {
        blobs.push_back(fmt::format("producer_{}_blob_{}", i, j));
        ops.push_back(fill_float(blobs.back(), 1.0, {1}));
      }
      std::vector<std::string> outs(blobs.begin() + 1, blobs.end());
      outs.push_back(fmt::format("producer_{}_status", i));
      ops.push_back(make_op("SafeEnqueueBlobs", blobs, outs));
      plan.network.push_back(net(fmt::format("producer_{}", i), ops));
      ExecutionStepDef s = net_step(fmt::format("producer_{}", i), {fmt::format("producer_{}", i)});
      s.num_iter = (i + 1) * 10;
      expected += (i + 1) * 10;
      producer_steps.push_back(s);
    }
    plan.network.push_back(net("producer_exit", {make_op("CloseBlobsQueue", {"queue"}, {})}));
    ExecutionStepDef producer = seq_step(
        "producer", {seq_step("producers", producer_steps, true), net_step("producer_exit", {"producer_exit"})});

    std::vector<ExecutionStepDef> consumer_steps;
    for (int i = 0; i < num_consumers; ++i) {
      std::vector<std::string> outs;
      for (int j = 0; j < p.num_blobs; ++j) outs.push_back(fmt::format("consumer_{}_blob_{}", i, j));
      const std::string status = fmt::format("consumer_{}_status", i);
      outs.push_back(status);
      plan.network.push_back(net(fmt::format("consumer_{}", i), {make_op("SafeDequeueBlobs", {"queue"}, outs)}));
      const std::string counter = fmt::format("counter_{}", i);
      plan.network.push_back(net(fmt::format("count_{}", i), {make_op("Add", {counter, "one"}, {counter})}));
      ExecutionStepDef s =
          net_step(fmt::format("consumer_{}", i), {fmt::format("consumer_{}", i), fmt::format("count_{}", i)});
      s.should_stop_blob = status;  // checked after every net: a failed dequeue is not counted
      consumer_steps.push_back(s);
    }
    ExecutionStepDef consumer = seq_step("consumer", consumer_steps, true);

    plan.execution_step = {net_step("init", {"init"}), seq_step("worker", {consumer, producer}, true)};
    Workspace ws;
    ASSERT_NO_THROW(run_plan(ws, plan));
    double total = 0;
    for (int i = 0; i < num_consumers; ++i) total += ws.blob(fmt::format("counter_{}", i)).get<Tensor>().item<float>();
    EXPECT_EQ(total, static_cast<double>(expected));
  }
}

// Ports test_weighted_sample_blobs_queue: one queue per producer (num_iter SafeEnqueues, then it closes its
// queue); the consumer WeightedSampleDequeues until a read fails, counting every iteration (Caffe2 appended
// the status to a Python list), then closes all queues. num_iter + 1 <= count <= num_iter * num_queues + 1.
TEST(Conformance, HypothesisWeightedSampleBlobsQueue) {
  std::mt19937 rng(4242);
  for (const Params& p : sweep(1, 5, 5, 10, 48, 20182)) {
    const int num_queues = p.a, num_iter = p.b;
    SCOPED_TRACE(::testing::Message() << "queues=" << num_queues << " num_iter=" << num_iter
                                      << " capacity=" << p.capacity << " num_blobs=" << p.num_blobs);
    PlanDef plan;
    std::vector<OperatorDef> init_ops{make_op("CreateCounter", {}, {"iterations"})};
    std::vector<std::string> queues;
    for (int i = 0; i < num_queues; ++i) {
      queues.push_back(fmt::format("queue_{}", i));
      init_ops.push_back(make_op("CreateBlobsQueue", {}, {queues.back()},
                                 {make_arg("capacity", p.capacity), make_arg("num_blobs", p.num_blobs)}));
    }
    plan.network.push_back(net("init", init_ops));

    std::vector<ExecutionStepDef> producer_steps;
    for (int i = 0; i < num_queues; ++i) {
      std::vector<OperatorDef> ops;
      std::vector<std::string> ins{queues[static_cast<std::size_t>(i)]};
      for (int j = 0; j < p.num_blobs; ++j) {
        ins.push_back(fmt::format("producer_{}_blob_{}", i, j));
        ops.push_back(fill_float(ins.back(), 1.0, {1}));
      }
      std::vector<std::string> outs(ins.begin() + 1, ins.end());
      outs.push_back(fmt::format("producer_{}_status", i));
      ops.push_back(make_op("SafeEnqueueBlobs", ins, outs));
      plan.network.push_back(net(fmt::format("producer_{}", i), ops));
      const std::string& queue = queues[static_cast<std::size_t>(i)];
      plan.network.push_back(net(fmt::format("producer_{}_exit", i), {make_op("CloseBlobsQueue", {queue}, {})}));
      ExecutionStepDef enqueue = net_step(fmt::format("producer_{}_enqueue", i), {fmt::format("producer_{}", i)});
      enqueue.num_iter = num_iter;
      producer_steps.push_back(
          seq_step(fmt::format("producer_{}", i),
                   {enqueue, net_step(fmt::format("producer_{}_close", i), {fmt::format("producer_{}_exit", i)})}));
    }
    ExecutionStepDef producer = seq_step("producer", producer_steps, true);

    std::vector<double> weights;
    for (int i = 0; i < num_queues; ++i) weights.push_back(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
    const int table_idx_blob = std::uniform_int_distribution<int>(-1, p.num_blobs - 1)(rng);
    std::vector<std::string> outs;
    for (int j = 0; j < p.num_blobs; ++j) outs.push_back(fmt::format("consumer_blob_{}", j));
    outs.push_back("consumer_status");
    plan.network.push_back(
        net("consumer", {make_op("WeightedSampleDequeueBlobs", queues, outs,
                                 {make_arg("weights", weights), make_arg("table_idx_blob", table_idx_blob)}),
                         make_op("CountUp", {"iterations"}, {"previous"})}));
    std::vector<OperatorDef> close_all;
    for (const auto& q : queues) close_all.push_back(make_op("CloseBlobsQueue", {q}, {}));
    plan.network.push_back(net("producer_exit", close_all));
    ExecutionStepDef consume = net_step("consume", {"consumer"});
    consume.should_stop_blob = "consumer_status";
    ExecutionStepDef consumer = seq_step("consumer", {consume, net_step("producer_exit", {"producer_exit"})});

    plan.execution_step = {net_step("init", {"init"}), seq_step("worker", {producer, consumer}, true)};
    Workspace ws;
    ASSERT_NO_THROW(run_plan(ws, plan));
    const int64_t count = ws.blob("iterations").get<Counter>().retrieve();
    EXPECT_LE(num_iter + 1, count);
    EXPECT_LE(count, int64_t{num_iter} * num_queues + 1);
  }
}

}  // namespace
}  // namespace moka
