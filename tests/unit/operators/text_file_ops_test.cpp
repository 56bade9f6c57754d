// Unit tests of TextFileReaderInstance and its operators CreateTextFileReader / TextFileReaderRead: parsing of every
// dtype, batches across passes, bad lines named by file and line, positions, and the checkpoint record of a reader.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "moka/operators/text_file_reader.h"
#include "moka/storage/blob_serializer.h"
#include "ops_test_util.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using test::expect_error;
using test::fetch;
using test::run_op;
using test::vals;

std::string write_file(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<Argument> create_args(const std::string& path, std::vector<int64_t> types, int64_t passes = 1) {
  return {make_arg("filename", path), make_arg("field_types", std::move(types)), make_arg("num_passes", passes)};
}

constexpr int64_t kFloat = 1, kString = 4, kBool = 5, kInt32 = 2, kInt64 = 10, kDouble = 13;

TEST(TextFileOps, ReadsEveryDtypeInBatches) {
  testing::TempDir dir;
  const std::string path =
      write_file(dir, "d.tsv", "1.5\t7\tx y\t1\t-3\t0.25\n-2\t8\tz\tfalse\t4\t1e3\r\n\n3\t9\t\ttrue\t+5\t-0\n");
  Workspace ws;
  run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kFloat, kInt64, kString, kBool, kInt32, kDouble}));
  run_op(ws, "TextFileReaderRead", {"r"}, {"f", "i", "s", "b", "i32", "d"}, {make_arg("batch_size", int64_t{2})});
  EXPECT_EQ(vals<float>(fetch(ws, "f")), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(vals<int64_t>(fetch(ws, "i")), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(vals<std::string>(fetch(ws, "s")), (std::vector<std::string>{"x y", "z"}));
  EXPECT_EQ(vals<bool>(fetch(ws, "b")), (std::vector<bool>{true, false}));
  EXPECT_EQ(vals<int32_t>(fetch(ws, "i32")), (std::vector<int32_t>{-3, 4}));
  EXPECT_EQ(vals<double>(fetch(ws, "d")), (std::vector<double>{0.25, 1000}));
  // The blank line is skipped; the last row has an empty string column.
  run_op(ws, "TextFileReaderRead", {"r"}, {"f", "i", "s", "b", "i32", "d"}, {make_arg("batch_size", int64_t{2})});
  EXPECT_EQ(fetch(ws, "f").shape(), (std::vector<int64_t>{1}));
  EXPECT_EQ(vals<std::string>(fetch(ws, "s")), (std::vector<std::string>{""}));
  EXPECT_EQ(vals<int32_t>(fetch(ws, "i32")), (std::vector<int32_t>{5}));
  run_op(ws, "TextFileReaderRead", {"r"}, {"f", "i", "s", "b", "i32", "d"}, {make_arg("batch_size", int64_t{2})});
  EXPECT_EQ(fetch(ws, "f").numel(), 0);
  EXPECT_EQ(fetch(ws, "s").numel(), 0);
}

TEST(TextFileOps, PassesContinueWithinABatchAndCreateAgainRewinds) {
  testing::TempDir dir;
  const std::string path = write_file(dir, "d.tsv", "1\n2\n3");  // no final newline
  Workspace ws;
  run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kInt64}, 3));
  run_op(ws, "TextFileReaderRead", {"r"}, {"v"}, {make_arg("batch_size", int64_t{4})});
  EXPECT_EQ(vals<int64_t>(fetch(ws, "v")), (std::vector<int64_t>{1, 2, 3, 1}));
  run_op(ws, "TextFileReaderRead", {"r"}, {"v"}, {make_arg("batch_size", int64_t{10})});
  EXPECT_EQ(vals<int64_t>(fetch(ws, "v")), (std::vector<int64_t>{2, 3, 1, 2, 3}));
  run_op(ws, "TextFileReaderRead", {"r"}, {"v"}, {make_arg("batch_size", int64_t{10})});
  EXPECT_EQ(fetch(ws, "v").numel(), 0);
  const auto* before = &ws.blob("r").get<TextFileReaderInstance>();
  run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kInt64}, 3));
  EXPECT_EQ(&ws.blob("r").get<TextFileReaderInstance>(), before);  // rewound in place
  run_op(ws, "TextFileReaderRead", {"r"}, {"v"}, {make_arg("batch_size", int64_t{2})});
  EXPECT_EQ(vals<int64_t>(fetch(ws, "v")), (std::vector<int64_t>{1, 2}));
}

TEST(TextFileOps, LargeFileAcrossBufferRefills) {
  testing::TempDir dir;
  std::string text;
  constexpr int kRows = 300000;  // about 3 MiB: several 1 MiB refills, rows split across them
  for (int i = 0; i < kRows; ++i) text += std::to_string(i) + "\t" + std::to_string(i * 0.5) + "\n";
  const std::string path = write_file(dir, "big.tsv", text);
  TextFileReaderInstance r({.filename = path, .field_types = {DType::Int64, DType::Double}});
  Tensor a, b;
  std::vector<Tensor*> out{&a, &b};
  int64_t next = 0;
  double sum = 0;
  for (int64_t n; (n = r.read(7777, out)) > 0;) {
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(a.data<int64_t>()[k], next) << "row " << next;
      sum += b.data<double>()[k];
      ++next;
    }
  }
  EXPECT_EQ(next, kRows);
  EXPECT_DOUBLE_EQ(sum, 0.5 * (kRows - 1.0) * kRows / 2.0);
  EXPECT_EQ(r.position().line, kRows);
  EXPECT_EQ(r.position().offset, static_cast<int64_t>(text.size()));
}

TEST(TextFileOps, BadLinesNameFileLineFieldAndTextAndTheReaderStays) {
  testing::TempDir dir;
  const std::string path = write_file(dir, "bad.tsv", "1\t2\n3\t4\n5\n7\tx\n");
  TextFileReaderInstance r({.filename = path, .field_types = {DType::Int64, DType::Float}, .field_names = {"a", "b"}});
  Tensor a, b;
  std::vector<Tensor*> out{&a, &b};
  EXPECT_EQ(r.read(1, out), 1);
  for (int attempt = 0; attempt < 2; ++attempt)
    expect_error<InvalidInput>([&] { r.read(5, out); }, {"bad.tsv:3:", "expected 2 columns (a, b), found 1"});
  EXPECT_EQ(r.position().line, 1);
  Workspace ws;
  const std::string path2 = write_file(dir, "bad2.tsv", "1\t2.5\n7\t1.5x\n");
  run_op(ws, "CreateTextFileReader", {}, {"r"},
         {make_arg("filename", path2), make_arg("field_types", std::vector<int64_t>{kInt64, kFloat}),
          make_arg("field_names", std::vector<std::string>{"id", "score"})});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "TextFileReaderRead", {"r"}, {"x", "y"}, {make_arg("batch_size", int64_t{5})});
      },
      {"bad2.tsv:2:", "field 1 (\"score\")", "\"1.5x\"", "float32"});
  const std::string path3 = write_file(dir, "bad3.tsv", "300\n");
  TextFileReaderInstance r3({.filename = path3, .field_types = {DType::Int8}});
  Tensor c;
  std::vector<Tensor*> out3{&c};
  expect_error<InvalidInput>([&] { r3.read(1, out3); }, {"bad3.tsv:1:", "\"300\" is not a int8 value"});
}

TEST(TextFileOps, BadArgumentsAndInputs) {
  testing::TempDir dir;
  const std::string path = write_file(dir, "d.tsv", "1\n");
  Workspace ws;
  expect_error<NotFound>(
      [&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(dir / "missing.tsv", {kInt64})); },
      {"missing.tsv", "does not exist"});
  expect_error<InvalidInput>([&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(dir.path(), {kInt64})); },
                             {"not a regular file"});
  expect_error<InvalidInput>([&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {})); },
                             {"field_types arg must be non-empty"});
  expect_error<InvalidInput>([&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {3})); },
                             {"field_types[0]", "3"});
  expect_error<InvalidInput>([&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kInt64}, 0)); },
                             {"num_passes", "must be positive"});
  auto args = create_args(path, {kInt64});
  args.push_back(make_arg("delimiter", std::string("ab")));
  expect_error<InvalidInput>([&] { run_op(ws, "CreateTextFileReader", {}, {"r"}, args); }, {"delimiter", "\"ab\""});
  run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kInt64}));
  expect_error<InvalidInput>([&] { run_op(ws, "TextFileReaderRead", {"r"}, {"a", "b"}); }, {"2 outputs", "1 fields"});
  expect_error<InvalidInput>(
      [&] { run_op(ws, "TextFileReaderRead", {"r"}, {"a"}, {make_arg("batch_size", int64_t{0})}); },
      {"batch_size", "must be positive"});
  test::feed(ws, "t", Tensor::scalar<int64_t>(1));
  expect_error<TypeError>([&] { run_op(ws, "TextFileReaderRead", {"t"}, {"a"}); },
                          {"input 0 (\"t\")", "expected a TextFileReaderInstance"});
}

TEST(TextFileOps, CommaDelimiterAndSpacesAroundNumbers) {
  testing::TempDir dir;
  const std::string path = write_file(dir, "d.csv", "1, 2.5,a b\n");
  Workspace ws;
  auto args = create_args(path, {kInt64, kDouble, kString});
  args.push_back(make_arg("delimiter", std::string(",")));
  run_op(ws, "CreateTextFileReader", {}, {"r"}, args);
  run_op(ws, "TextFileReaderRead", {"r"}, {"a", "b", "c"});
  EXPECT_EQ(vals<int64_t>(fetch(ws, "a")), (std::vector<int64_t>{1}));
  EXPECT_EQ(vals<double>(fetch(ws, "b")), (std::vector<double>{2.5}));
  EXPECT_EQ(vals<std::string>(fetch(ws, "c")), (std::vector<std::string>{"a b"}));
}

TEST(TextFileOps, CheckpointRecordResumesWhereTheReaderStood) {
  testing::TempDir dir;
  const std::string path = write_file(dir, "d.tsv", "1\n2\n3\n4\n5\n");
  Workspace ws;
  run_op(ws, "CreateTextFileReader", {}, {"r"}, create_args(path, {kInt64}, 2));
  run_op(ws, "TextFileReaderRead", {"r"}, {"v"}, {make_arg("batch_size", int64_t{7})});  // pass 1, after row 2
  EXPECT_EQ(vals<int64_t>(fetch(ws, "v")), (std::vector<int64_t>{1, 2, 3, 4, 5, 1, 2}));
  ASSERT_TRUE(is_serializable(ws.blob("r")));
  const std::string bytes = serialize_blob_to_string("r", ws.blob("r"));
  Blob restored;
  EXPECT_EQ(deserialize_blob(bytes, restored), "r");
  const auto& r = restored.get<TextFileReaderInstance>();
  EXPECT_EQ(r.spec(), ws.blob("r").get<TextFileReaderInstance>().spec());
  EXPECT_EQ(r.position(), (TextFileReaderPosition{.pass = 1, .offset = 4, .line = 2}));
  Tensor v;
  std::vector<Tensor*> out{&v};
  EXPECT_EQ(restored.get_checked_mutable<TextFileReaderInstance>().read(10, out), 3);
  EXPECT_EQ(vals<int64_t>(v), (std::vector<int64_t>{3, 4, 5}));
  // The file changed under the checkpoint: the position is no longer the start of a line.
  write_file(dir, "d.tsv", "10\n20\n30\n");
  Blob again;
  expect_error<InvalidInput>([&] { deserialize_blob(bytes, again); }, {"d.tsv", "not the start of a line"});
  write_file(dir, "d.tsv", "1\n");
  expect_error<InvalidInput>([&] { deserialize_blob(bytes, again); }, {"d.tsv", "only 2 bytes"});
  std::filesystem::remove(path);
  // Load names the blob and the file (the deserializer's error is wrapped as a rejected payload).
  expect_error<InvalidInput>([&] { deserialize_blob(bytes, again); }, {"blob \"r\"", "d.tsv", "does not exist"});
}

}  // namespace
}  // namespace moka
