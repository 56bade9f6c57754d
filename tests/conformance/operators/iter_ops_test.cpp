// Conformance: hypothesis_test.py's step tests (docs/testing.md §1) with the execution step emulated by
// plain loops and threads over operators; the plan-executor versions are ported with the exec layer.
#include <gtest/gtest.h>

#include <thread>

#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"

namespace moka {
namespace {

std::unique_ptr<OperatorBase> make(Workspace& ws, std::string type, std::vector<std::string> in,
                                   std::vector<std::string> out) {
  register_all_operators();
  return OperatorRegistry::global().create(make_op(std::move(type), std::move(in), std::move(out)), &ws);
}

// test_should_stop_as_criteria_net_execution_step: [criteria: GE(iter, num_iters) -> stop, net: Iter],
// should_stop_blob = stop, checked after every net.
TEST(Conformance, HypothesisShouldStopAsCriteriaNetExecutionStep) {
  for (int64_t initial : {0, 1, 37, 100}) {
    for (int64_t max_iters : {0, 1, 50, 100}) {
      Workspace ws;
      ws.create_blob("iter")->get_mutable<Tensor>() = Tensor::vector<int64_t>({initial});
      ws.create_blob("num_iters")->get_mutable<Tensor>() = Tensor::vector<int64_t>({max_iters});
      auto criteria = make(ws, "GE", {"iter", "num_iters"}, {"stop"});
      auto net = make(ws, "Iter", {"iter"}, {"iter"});
      const Blob& stop = ws.blob("stop");
      for (;;) {
        ASSERT_TRUE(criteria->run());
        if (stop.get<Tensor>().values<bool>()[0]) break;
        ASSERT_TRUE(net->run());
      }
      const Tensor& iter = ws.blob("iter").get<Tensor>();
      EXPECT_EQ(iter.dtype(), DType::Int64);
      EXPECT_EQ(iter.values<int64_t>()[0], std::max(initial, max_iters)) << initial << " " << max_iters;
    }
  }
}

// test_iter_count_with_execution_step: a step running an Iter net num_iters times.
TEST(Conformance, HypothesisIterCountWithExecutionStep) {
  for (int64_t initial : {0, 3, 100}) {
    for (int64_t num_iters : {0, 1, 100}) {
      Workspace ws;
      ws.create_blob("iter")->get_mutable<Tensor>() = Tensor::vector<int64_t>({initial});
      auto net = make(ws, "Iter", {"iter"}, {"iter"});
      for (int64_t k = 0; k < num_iters; ++k) ASSERT_TRUE(net->run());
      const Tensor& iter = ws.blob("iter").get<Tensor>();
      EXPECT_EQ(iter.dtype(), DType::Int64);
      EXPECT_EQ(iter.values<int64_t>()[0], initial + num_iters);
    }
  }
}

// test_atomic_iter_with_concurrent_steps: num_nets concurrent substeps, each AtomicIter num_iters times.
// Adapted: the stat registry is process-wide and other tests publish stats too, so the key is looked up
// rather than assumed to be the first exported one.
TEST(Conformance, HypothesisAtomicIterWithConcurrentSteps) {
  for (int64_t num_nets : {0, 1, 5}) {
    const int64_t initial = 7, num_iters = 100;
    Workspace ws;
    ws.create_blob("iter")->get_mutable<Tensor>() = Tensor::vector<int64_t>({initial});
    run_operator_once(ws, make_op("CreateMutex", {}, {"iter_mutex"}));
    (void)StatRegistry::global().export_all(true);
    std::vector<std::thread> steps;
    for (int64_t n = 0; n < num_nets; ++n) {
      steps.emplace_back([&] {
        auto op = make(ws, "AtomicIter", {"iter_mutex", "iter"}, {"iter"});
        for (int64_t k = 0; k < num_iters; ++k) op->run();
      });
    }
    for (auto& t : steps) t.join();
    run_operator_once(ws, make_op("StatRegistryExport", {}, {"stats_key", "stats_val", "stats_ts"}));
    EXPECT_EQ(ws.blob("iter").get<Tensor>().values<int64_t>()[0], initial + num_iters * num_nets);
    if (num_iters * num_nets > 0) {
      auto keys = ws.blob("stats_key").get<Tensor>().values<std::string>();
      auto vals = ws.blob("stats_val").get<Tensor>().values<int64_t>();
      auto it = std::find(keys.begin(), keys.end(), "atomic_iter/stats/iter/num_iter");
      ASSERT_NE(it, keys.end());
      EXPECT_EQ(vals[static_cast<std::size_t>(it - keys.begin())], num_iters * num_nets);
    }
  }
}

}  // namespace
}  // namespace moka
