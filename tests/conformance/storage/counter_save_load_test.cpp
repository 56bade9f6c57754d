// Conformance: the serialization half of caffe2/python/operator_test/counter_ops_test.py test_counter_ops
// (docs/testing.md §1): Save to minidb, CountDown x10, Load. The counter half is ported in
// tests/conformance/operators/counter_ops_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/registry.h"

namespace moka {
namespace {

int64_t fetch_int(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

// Ports the serialization part of CounterOpsTest.test_counter_ops, each operator run once.
TEST(Caffe2CounterOps, test_counter_ops_serialization) {
  Workspace ws;
  auto run = [&](std::string type, std::vector<std::string> in, std::vector<std::string> out,
                 std::vector<Argument> args = {}) {
    run_operator_once(ws, make_op(std::move(type), std::move(in), std::move(out), std::move(args)));
  };
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
