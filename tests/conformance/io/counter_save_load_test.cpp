// Conformance: port of caffe2/python/operator_test/counter_ops_test.py test_counter_ops (caffe2-tests.md
// §11.1) in full, including its serialization half (Save to minidb, CountDown x10, Load).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/ops/registry.h"

namespace moka {
namespace {

bool fetch_bool(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<bool>(); }
int64_t fetch_int(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

// Ports CounterOpsTest.test_counter_ops (§11.1), each operator run once (RunOperatorOnce).
TEST(Caffe2CounterOps, test_counter_ops) {
  Workspace ws;
  auto run = [&](std::string type, std::vector<std::string> in, std::vector<std::string> out,
                 std::vector<Argument> args = {}) {
    run_operator_once(ws, make_op(std::move(type), std::move(in), std::move(out), std::move(args)));
  };
  run("CreateCounter", {}, {"c"}, {make_arg("init_count", 1)});
  run("CountDown", {"c"}, {"t1"});
  EXPECT_FALSE(fetch_bool(ws, "t1"));  // 1 -> 0
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

  // Serialization: tmp file as in the Python test (a name that does not exist yet).
  std::string dir = ::testing::TempDir() + "moka-counter-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string tmp_file = dir + "/serialized_c.minidb";
  run("CreateCounter", {}, {"serialized_c"}, {make_arg("init_count", 22)});
  run("Save", {"serialized_c"}, {},
      {make_arg("db", tmp_file), make_arg("db_type", "minidb"), make_arg("absolute_path", 1)});
  for (int i = 0; i < 10; ++i) run("CountDown", {"serialized_c"}, {"t8"});
  run("RetrieveCount", {"serialized_c"}, {"t8"});
  EXPECT_EQ(fetch_int(ws, "t8"), 12);
  run("Load", {}, {"serialized_c"},
      {make_arg("db", tmp_file), make_arg("db_type", "minidb"), make_arg("absolute_path", 1)});
  run("RetrieveCount", {"serialized_c"}, {"t8"});
  EXPECT_EQ(fetch_int(ws, "t8"), 22);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace moka
