// Unit tests of TextFileReader (the Reader over a text file): every row through a pipe of several threads, passes,
// reset, ReaderWithLimit batches, and the schema it refuses.
#include "moka/data/text_file_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using moka::testing::invalid_input;

std::string write_rows(const testing::TempDir& dir, int64_t n) {
  const std::string path = dir / "rows.tsv";
  std::ofstream out(path);
  for (int64_t i = 0; i < n; ++i) out << i << '\t' << (i * 2) << ".5\tname" << i << '\n';
  return path;
}

schema::Struct row_schema() {
  return schema::Struct({{"id", schema::Scalar(DType::Int64)},
                         {"value", schema::Scalar(DType::Float)},
                         {"name", schema::Scalar(DType::String)}});
}

// Pipes the reader into a fresh Dataset with `threads` threads and returns the sorted ids and the value sum.
std::pair<std::vector<int64_t>, double> pipe_all(LocalSession& session, const std::shared_ptr<Reader>& reader,
                                                 int threads) {
  Net init("dst_init");
  Dataset dst = [&] {
    NameScope scope("dst");
    Dataset d(reader->schema().clone_schema(), "dst");
    d.init_empty(init);
    return d;
  }();
  session.run(init);
  TaskGroup tg([&] { pipe(reader, {.output = dst.writer(), .num_runtime_threads = threads}); });
  session.run(tg);
  const schema::Field fetched = schema::FetchRecord(dst.content(), session.workspace());
  auto ids = fetched["id"].value()->values<int64_t>();
  auto values = fetched["value"].value()->values<float>();
  std::vector<int64_t> out(ids.begin(), ids.end());
  std::sort(out.begin(), out.end());
  return {out, std::accumulate(values.begin(), values.end(), 0.0)};
}

TEST(TextFileReader, EveryRowOnceThroughFourThreads) {
  testing::TempDir dir;
  const std::string path = write_rows(dir, 10000);
  LocalSession session;
  Net init("reader_init");
  auto reader = std::make_shared<TextFileReader>(init, path, row_schema(), TextFileReaderOptions{.batch_size = 64});
  session.run(init);
  const auto [ids, sum] = pipe_all(session, reader, 4);
  std::vector<int64_t> want(10000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(ids, want);
  EXPECT_DOUBLE_EQ(sum, 10000.0 * 9999.0 + 0.5 * 10000.0);
}

TEST(TextFileReader, PassesAndReset) {
  testing::TempDir dir;
  const std::string path = write_rows(dir, 10);
  LocalSession session;
  Net init("reader_init");
  auto reader = std::make_shared<TextFileReader>(init, path, row_schema(),
                                                 TextFileReaderOptions{.num_passes = 2, .batch_size = 3});
  session.run(init);
  EXPECT_EQ(pipe_all(session, reader, 2).first.size(), 20u);
  EXPECT_TRUE(pipe_all(session, reader, 2).first.empty());  // every pass done
  Net reset("reset");
  reader->reset(reset);
  session.run(reset);
  EXPECT_EQ(pipe_all(session, reader, 1).first.size(), 20u);
}

TEST(TextFileReader, ReaderWithLimitReadsBatchesOfTheFile) {
  testing::TempDir dir;
  const std::string path = write_rows(dir, 25);
  LocalSession session;
  Net init("reader_init");
  auto reader = std::make_shared<TextFileReader>(init, path, row_schema(), TextFileReaderOptions{.batch_size = 4});
  session.run(init);
  auto limited = std::make_shared<ReaderWithLimit>(reader, 2);  // 2 batches of 4 rows per run
  std::vector<int64_t> first = pipe_all(session, limited, 1).first;
  EXPECT_EQ(first, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::vector<int64_t> second = pipe_all(session, limited, 1).first;
  EXPECT_EQ(second, (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(TextFileReader, RefusesWhatItCannotRead) {
  Net init("init");
  EXPECT_NE(invalid_input([&] {
              TextFileReader(init, "x.tsv", schema::Scalar(DType::Float));
            }).find("Schema must be a schema.Struct"),
            std::string::npos);
  EXPECT_NE(
      invalid_input([&] {
        TextFileReader(init, "x.tsv", schema::Struct({{"a", schema::Struct({{"b", schema::Scalar(DType::Float)}})}}));
      }).find("Only scalar fields are supported in TextFileReader (field \"a\""),
      std::string::npos);
  EXPECT_NE(invalid_input([&] {
              TextFileReader(init, "x.tsv", schema::Struct({{"a", schema::Scalar()}}));
            }).find("field \"a\" has no dtype"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] {
              TextFileReader(init, "x.tsv", row_schema(), {.batch_size = 0});
            }).find("batch_size = 0 must be positive"),
            std::string::npos);
  // A missing file is found when the init net runs, naming it.
  testing::TempDir dir;
  LocalSession session;
  Net init2("init2");
  TextFileReader r(init2, dir / "nope.tsv", row_schema());
  try {
    session.run(init2);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope.tsv' does not exist"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moka
