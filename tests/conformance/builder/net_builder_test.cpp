// Conformance: ports of caffe2/python/net_builder_test.py (docs/testing.md §1) that need only a
// NetBuilder and the plan executor: test_ops exactly, and test_loops without the
// Task/LocalSession wrapper.
#include <gtest/gtest.h>

#include <tuple>

#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"
#include "moka/builder/plan.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"

namespace moka {
namespace {

using ops::Const;

const Tensor& fetch(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>(); }

// net_builder_test.py module helpers, line by line.
BlobRef test_loop() {
  BlobRef x = Const(5);
  BlobRef y = Const(0);
  ops::loop([&] {
    ops::stop_if(ops::EQ({x, Const(0)}));
    ops::Add({x, Const(-1)}, {x});
    ops::Add({y, Const(1)}, {y});
  });
  return y;
}

void test_inner_stop(const BlobRef& x) { ops::stop_if(ops::LT({x, Const(5)})); }

std::tuple<BlobRef, BlobRef, BlobRef, BlobRef> test_outer() {
  BlobRef x = Const(10);
  auto g1 = ops::stop_guard([&] { test_inner_stop(x); });
  BlobRef y = Const(3);
  auto g2 = ops::stop_guard([&] { test_inner_stop(y); });
  auto g4 = ops::stop_guard([&] { Const(0); });
  auto g3 = ops::stop_guard([&] {});
  return {g1.has_stopped(), g2.has_stopped(), g3.has_stopped(), g4.has_stopped()};
}

BlobRef test_if(const BlobRef& x) {
  BlobRef y = Const(1);
  ops::If(ops::GT({x, Const(50)}), [&] { Const(2, {.blob_out = y}); });
  ops::If(ops::LT({x, Const(50)}), [&] {
    Const(3, {.blob_out = y});
    ops::stop();
    Const(4, {.blob_out = y});
  });
  return y;
}

// Ports TestNetBuilder.test_ops: loop, stop guards and If in one
// builder, run as a plan on a fresh workspace.
TEST(Caffe2NetBuilder, test_ops) {
  BlobRef y, z, w, a, b, p, q;
  NetBuilder nb([&] {
    y = test_loop();
    std::tie(z, w, a, b) = test_outer();
    p = test_if(Const(75));
    q = test_if(Const(25));
  });
  Plan plan("name");
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(fetch(ws, y).item<int64_t>(), 5);
  EXPECT_EQ(fetch(ws, z).item<bool>(), false);
  EXPECT_EQ(fetch(ws, w).item<bool>(), true);
  EXPECT_EQ(fetch(ws, a).item<bool>(), false);
  EXPECT_EQ(fetch(ws, b).item<bool>(), false);
  EXPECT_EQ(fetch(ws, p).item<int64_t>(), 2);
  EXPECT_EQ(fetch(ws, q).item<int64_t>(), 3);
}

// Ports TestNetBuilder.test_loops. Caffe2 builds this inside a Task and
// fetches final_output()s through a LocalSession; Task and LocalSession are not part of this
// slice, so the same body is built in a NetBuilder and run with run_plan, and the blobs are
// read from the workspace. The loop/If/Elif/Else structure is the test's.
TEST(Caffe2NetBuilder, test_loops) {
  BlobRef total, total_large, total_small, total_tiny;
  NetBuilder nb([&] {
    total = Const(0);
    total_large = Const(0);
    total_small = Const(0);
    total_tiny = Const(0);
    ops::loop(10, [&](ops::Loop& loop) {
      BlobRef outer = ops::Mul({loop.iter(), Const(10)});
      ops::loop(loop.iter(), [&](ops::Loop& inner) {
        BlobRef val = ops::Add({outer, inner.iter()});
        ops::If(ops::GE({val, Const(80)}), [&] {
          ops::Add({total_large, val}, {total_large});
        }).Elif(ops::GE({val, Const(50)}), [&] {
            ops::Add({total_small, val}, {total_small});
          }).Else([&] {
          ops::Add({total_tiny, val}, {total_tiny});
        });
        ops::Add({total, val}, {total});
      });
    });
  });

  // The reference: the same loops in plain C++.
  int64_t expected[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < 10; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      const int64_t val = i * 10 + j;
      expected[0] += val;
      if (val >= 80) {
        expected[1] += val;
      } else if (val >= 50) {
        expected[2] += val;
      } else {
        expected[3] += val;
      }
    }
  }
  ASSERT_EQ(expected[0], 2970);
  ASSERT_EQ(expected[1], 1514);
  ASSERT_EQ(expected[2], 1146);
  ASSERT_EQ(expected[3], 310);

  Plan plan("test_loops");
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(fetch(ws, total).item<int64_t>(), 2970);
  EXPECT_EQ(fetch(ws, total_large).item<int64_t>(), 1514);
  EXPECT_EQ(fetch(ws, total_small).item<int64_t>(), 1146);
  EXPECT_EQ(fetch(ws, total_tiny).item<int64_t>(), 310);
}

}  // namespace
}  // namespace moka
