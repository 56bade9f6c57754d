// Unit tests of the utility operators: Copy, Print, GetAllBlobNames (a storage operator), CreateMutex, Iter,
// AtomicIter, StatRegistryExport.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "moka/operators/counter.h"
#include "moka/operators/mutex.h"
#include "moka/operators/stats.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;
using Strs = std::vector<std::string>;

TEST(UtilityOps, CopyTensorsOfAnyDtype) {
  Workspace ws;
  feed(ws, "s", Tensor::vector<std::string>({"a", "b"}));
  feed(ws, "f", Tensor::from_vector<float>({2, 1}, {1, 2}));
  run_op(ws, "Copy", {"s"}, {"s2"});
  run_op(ws, "Copy", {"f"}, {"f2"});
  EXPECT_EQ(fetch(ws, "s2"), fetch(ws, "s"));
  EXPECT_EQ(fetch(ws, "f2"), fetch(ws, "f"));
  EXPECT_NE(fetch(ws, "f2").data<float>(), fetch(ws, "f").data<float>());  // a deep copy
  run_op(ws, "Copy", {"f"}, {"f"});
  EXPECT_EQ(fetch(ws, "f"), Tensor::from_vector<float>({2, 1}, {1, 2}));
}

TEST(UtilityOps, CopyErrors) {
  Workspace ws;
  ws.create_blob("c")->emplace<Counter>(1);
  ws.create_blob("empty");
  expect_error<TypeError>([&] { run_op(ws, "Copy", {"c"}, {"o"}); }, {"\"c\"", "Counter"});
  expect_error<TypeError>([&] { run_op(ws, "Copy", {"empty"}, {"o"}); }, {"\"empty\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Copy", {"c"}, {"o", "p"}); }, {"Copy", "output"});
}

TEST(UtilityOps, PrintToStderr) {
  Workspace ws;
  feed(ws, "x", Tensor::vector<int64_t>({1, 2, 3}));
  ws.create_blob("c")->emplace<Counter>(1);
  testing::internal::CaptureStderr();
  run_op(ws, "Print", {"x"}, {});
  run_op(ws, "Print", {"x"}, {}, {make_arg("limit", 2)});
  run_op(ws, "Print", {"c"}, {});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("x: int64[3] {1, 2, 3}\n"), std::string::npos) << err;
  EXPECT_NE(err.find("x: int64[3] {1, 2, ... (1 more)}\n"), std::string::npos) << err;
  EXPECT_NE(err.find("c: Counter\n"), std::string::npos) << err;
}

TEST(UtilityOps, PrintToFileEveryN) {
  const auto dir = std::filesystem::temp_directory_path() / ("moka_print_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    Workspace ws;
    ws.set_root_folder(dir.string());
    feed(ws, "net/x", Tensor::scalar<int64_t>(0));
    auto print = create_op(ws, "Print", {"net/x"}, {}, {make_arg("to_file", 1), make_arg("every_n", 2)});
    for (int64_t k = 0; k < 5; ++k) {
      ws.blob("net/x").get_mutable<Tensor>().mutable_data<int64_t>()[0] = k;
      ASSERT_TRUE(print->run());
    }
  }
  std::ifstream in(dir / "net#x.log");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "net/x: int64[] {0}\nnet/x: int64[] {2}\nnet/x: int64[] {4}\n");
  std::filesystem::remove_all(dir);
}

TEST(UtilityOps, PrintArgumentErrors) {
  Workspace ws;
  feed(ws, "x", Tensor::scalar<int64_t>(0));
  expect_error<InvalidInput>([&] { create_op(ws, "Print", {"x"}, {}, {make_arg("every_n", 0)}); },
                             {"Print", "\"every_n\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Print", {"x"}, {}, {make_arg("limit", -1)}); },
                             {"Print", "\"limit\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Print", {"x"}, {}, {make_arg("to_file", 2)}); },
                             {"Print", "\"to_file\""});
  ws.set_root_folder("/nonexistent/moka/dir");
  expect_error<RuntimeError>([&] { create_op(ws, "Print", {"x"}, {}, {make_arg("to_file", 1)}); },
                             {"Print", "/nonexistent/moka/dir/x.log"});
  expect_error<InvalidInput>([&] { create_op(ws, "Print", {}, {}); }, {"Print", "1 input"});
}

TEST(UtilityOps, GetAllBlobNames) {
  Workspace root;
  feed(root, "b", Tensor::scalar<int64_t>(0));
  Workspace child(&root);
  feed(child, "a", Tensor::scalar<int64_t>(0));
  child.create_local_blob("z");
  run_op(child, "GetAllBlobNames", {}, {"names"});
  EXPECT_EQ(test::vals<std::string>(fetch(child, "names")), (Strs{"a", "b", "names", "z"}));
  run_op(child, "GetAllBlobNames", {}, {"local"}, {make_arg("include_shared", false)});
  EXPECT_EQ(test::vals<std::string>(fetch(child, "local")), (Strs{"a", "local", "names", "z"}));
  expect_error<InvalidInput>([&] { create_op(child, "GetAllBlobNames", {}, {"n"}, {make_arg("include_shared", 3)}); },
                             {"\"include_shared\""});
}

TEST(UtilityOps, GetAllBlobNamesSerializableOnlyLeavesOutWhatSaveCannotWrite) {
  // What a checkpoint lists: a queue, a mutex and an empty blob cannot be saved, a tensor and a counter can.
  Workspace ws;
  feed(ws, "t", Tensor::scalar<int64_t>(0));
  run_op(ws, "CreateCounter", {}, {"counter"});
  run_op(ws, "CreateBlobsQueue", {}, {"queue"}, {make_arg("capacity", 2), make_arg("num_blobs", 1)});
  run_op(ws, "CreateMutex", {}, {"mu"});
  ws.create_local_blob("empty");
  run_op(ws, "GetAllBlobNames", {}, {"names"}, {make_arg("serializable_only", true)});
  EXPECT_EQ(test::vals<std::string>(fetch(ws, "names")), (Strs{"counter", "names", "t"}));
  run_op(ws, "GetAllBlobNames", {}, {"all"});
  EXPECT_EQ(test::vals<std::string>(fetch(ws, "all")), (Strs{"all", "counter", "empty", "mu", "names", "queue", "t"}));
}

TEST(UtilityOps, CreateMutexKeepsExistingMutex) {
  Workspace ws;
  auto op = create_op(ws, "CreateMutex", {}, {"mu"});
  ASSERT_TRUE(op->run());
  const BlobMutex* first = &ws.blob("mu").get<BlobMutex>();
  ASSERT_TRUE(op->run());
  EXPECT_EQ(&ws.blob("mu").get<BlobMutex>(), first);
  EXPECT_EQ(ws.blob("mu").type_name(), "BlobMutex");
}

TEST(UtilityOps, IterStartsAtZeroAndCounts) {
  Workspace ws;
  auto op = create_op(ws, "Iter", {}, {"iter"});
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "iter"), Tensor::vector<int64_t>({3}));
  // In place with an existing counter.
  feed(ws, "it2", Tensor::vector<int64_t>({41}));
  run_op(ws, "Iter", {"it2"}, {"it2"});
  EXPECT_EQ(fetch(ws, "it2"), Tensor::vector<int64_t>({42}));
  // Without an input an existing counter continues.
  run_op(ws, "Iter", {}, {"it2"});
  EXPECT_EQ(fetch(ws, "it2"), Tensor::vector<int64_t>({43}));
}

TEST(UtilityOps, IterErrors) {
  Workspace ws;
  feed(ws, "max", Tensor::vector<int64_t>({std::numeric_limits<int64_t>::max()}));
  feed(ws, "neg", Tensor::vector<int64_t>({-1}));
  feed(ws, "f", Tensor::vector<float>({1}));
  feed(ws, "two", Tensor::vector<int64_t>({1, 2}));
  expect_error<RuntimeError>([&] { run_op(ws, "Iter", {"max"}, {"max"}); },
                             {"Iter", "Overflow will happen!", "\"max\""});
  EXPECT_EQ(fetch(ws, "max").item<int64_t>(), std::numeric_limits<int64_t>::max());
  expect_error<RuntimeError>([&] { run_op(ws, "Iter", {"neg"}, {"neg"}); }, {"Iter", "negative", "\"neg\""});
  expect_error<TypeError>([&] { run_op(ws, "Iter", {"f"}, {"f"}); }, {"Iter", "\"f\"", "int64"});
  expect_error<TypeError>([&] { run_op(ws, "Iter", {}, {"two"}); }, {"Iter", "\"two\"", "one element"});
  expect_error<InvalidInput>([&] { create_op(ws, "Iter", {"neg"}, {"other"}); }, {"Iter", "in place", "\"neg\""});
  ws.create_blob("empty");
  expect_error<TypeError>([&] { run_op(ws, "Iter", {"empty"}, {"empty"}); }, {"\"empty\""});
}

TEST(UtilityOps, AtomicIterCountsAndPublishesStat) {
  Workspace ws;
  run_op(ws, "CreateMutex", {}, {"mu"});
  feed(ws, "utility_test_iter", Tensor::vector<int64_t>({5}));
  const std::string key = "atomic_iter/stats/utility_test_iter/num_iter";
  const int64_t before = StatRegistry::global().get(key);
  auto op = create_op(ws, "AtomicIter", {"mu", "utility_test_iter"}, {"utility_test_iter"});
  constexpr int kThreads = 4, kIters = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Each thread runs its own operator instance, as concurrent substeps do.
    threads.emplace_back([&] {
      auto mine = create_op(ws, "AtomicIter", {"mu", "utility_test_iter"}, {"utility_test_iter"});
      for (int k = 0; k < kIters; ++k) mine->run();
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(op->run());
  EXPECT_EQ(fetch(ws, "utility_test_iter").item<int64_t>(), 5 + kThreads * kIters + 1);
  EXPECT_EQ(StatRegistry::global().get(key) - before, kThreads * kIters + 1);
}

TEST(UtilityOps, AtomicIterErrors) {
  Workspace ws;
  feed(ws, "iter", Tensor::vector<int64_t>({0}));
  feed(ws, "notmu", Tensor::vector<int64_t>({0}));
  run_op(ws, "CreateMutex", {}, {"mu"});
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "AtomicIter", {"mu", "iter"}, {"other"});
      },
      {"AtomicIter", "in place", "\"iter\""});
  expect_error<InvalidInput>([&] { create_op(ws, "AtomicIter", {"iter"}, {"iter"}); }, {"AtomicIter", "2 input"});
  expect_error<TypeError>([&] { run_op(ws, "AtomicIter", {"notmu", "iter"}, {"iter"}); }, {"\"notmu\"", "BlobMutex"});
}

TEST(UtilityOps, StatRegistryExport) {
  Workspace ws;
  StatRegistry::global().set("utility_test/b", 2);
  StatRegistry::global().set("utility_test/a", 1);
  run_op(ws, "StatRegistryExport", {}, {"k", "v", "ts"}, {make_arg("reset", false)});
  const auto keys = vals<std::string>(fetch(ws, "k"));
  const auto values = vals<int64_t>(fetch(ws, "v"));
  ASSERT_EQ(keys.size(), values.size());
  EXPECT_EQ(fetch(ws, "ts").shape(), fetch(ws, "k").shape());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  auto at = [&](const std::string& key) {
    auto it = std::find(keys.begin(), keys.end(), key);
    return it == keys.end() ? int64_t{-1} : values[static_cast<std::size_t>(it - keys.begin())];
  };
  EXPECT_EQ(at("utility_test/a"), 1);
  EXPECT_EQ(at("utility_test/b"), 2);
  EXPECT_GT(vals<int64_t>(fetch(ws, "ts")).at(0), 0);
  run_op(ws, "StatRegistryExport", {}, {"k", "v", "ts"});  // reset defaults to 1
  EXPECT_EQ(StatRegistry::global().get("utility_test/a"), 0);
  expect_error<InvalidInput>(
      [&] {
        create_op(ws, "StatRegistryExport", {}, {"k", "v"});
      },
      {"StatRegistryExport", "3 output"});
}

}  // namespace
}  // namespace moka
