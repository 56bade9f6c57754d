// Conformance: port of caffe2/python/operator_test/counter_ops_test.py (docs/testing.md §1), without Save/Load.
#include <gtest/gtest.h>

#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/registry.h"

namespace moka {
namespace {

bool fetch_bool(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<bool>(); }
int64_t fetch_int(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

// Ports CounterOpsTest.test_counter_ops. The serialization half (Save to minidb, 10x CountDown,
// Load, RetrieveCount == 22) belongs to the storage layer and is ported with Save/Load.
TEST(Conformance, CounterOpsTestCounterOps) {
  Workspace ws;
  auto run = [&](std::string type, std::vector<std::string> in, std::vector<std::string> out,
                 std::vector<Argument> args = {}) {
    run_operator_once(ws, make_op(std::move(type), std::move(in), std::move(out), std::move(args)));
  };
  run("CreateCounter", {}, {"c"}, {make_arg("init_count", 1)});

  run("CountDown", {"c"}, {"t1"});
  EXPECT_FALSE(fetch_bool(ws, "t1"));  // 1 -> 0
  EXPECT_EQ(ws.blob("t1").get<Tensor>().shape(), std::vector<int64_t>{});

  run("CountDown", {"c"}, {"t2"});
  EXPECT_TRUE(fetch_bool(ws, "t2"));  // 0 -> -1

  run("CountUp", {"c"}, {"t21"});
  EXPECT_EQ(fetch_int(ws, "t21"), -1);  // -1 -> 0

  run("RetrieveCount", {"c"}, {"t22"});
  EXPECT_EQ(fetch_int(ws, "t22"), 0);

  run("ResetCounter", {"c"}, {}, {make_arg("init_count", 1)});
  run("CountDown", {"c"}, {"t3"});
  EXPECT_FALSE(fetch_bool(ws, "t3"));  // 1 -> 0

  run("ResetCounter", {"c"}, {"t31"}, {make_arg("init_count", 5)});
  EXPECT_EQ(fetch_int(ws, "t31"), 0);

  run("ResetCounter", {"c"}, {"t32"});
  EXPECT_EQ(fetch_int(ws, "t32"), 5);

  run("ConstantFill", {}, {"t4"}, {make_arg("value", false), make_arg("dtype", 5)});
  EXPECT_EQ(fetch_bool(ws, "t4"), fetch_bool(ws, "t1"));

  run("ConstantFill", {}, {"t5"}, {make_arg("value", true), make_arg("dtype", 5)});
  EXPECT_EQ(fetch_bool(ws, "t5"), fetch_bool(ws, "t2"));

  run("And", {"t1", "t2"}, {"t6"});
  EXPECT_FALSE(fetch_bool(ws, "t6"));

  run("And", {"t2", "t5"}, {"t7"});
  EXPECT_TRUE(fetch_bool(ws, "t7"));
}

}  // namespace
}  // namespace moka
