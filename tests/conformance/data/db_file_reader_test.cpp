// Conformance: ports of dataio_test.py TestDBFileReader (docs/testing.md §1): CachedReader builds
// a LevelDB cache once and serves later reads from it; DBFileReader reads such a file directly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "moka/data/cached_reader.h"
#include "moka/moka.h"

namespace moka {
namespace {

using schema::Field;

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// dataio_test.make_source_dataset(ws, size): rows 0..size-1 in column "label", blobs under NameScope("src").
Dataset make_source_dataset(LocalSession& session, int64_t size) {
  NameScope scope("src");
  schema::Struct src_values({{"label", schema::Scalar(Tensor::vector<int64_t>(range(size)))}});
  Net src_init("src_init");
  Field src_blobs = schema::NewRecord(src_init, src_values);
  Dataset src_ds(src_blobs, "src");
  schema::FeedRecord(src_blobs, src_values, session.workspace());
  return src_ds;
}

// TestDBFileReader._build_source_reader.
std::shared_ptr<Reader> build_source_reader(LocalSession& session, int64_t size) {
  return make_source_dataset(session, size).reader();
}

// TestDBFileReader._read_all_data: pipe the reader into an empty clone with 8 runtime threads; the labels, sorted.
std::vector<int64_t> read_all_data(LocalSession& session, const std::shared_ptr<Reader>& reader) {
  Net dst_init("dst_init");
  Dataset dst_ds = [&] {
    NameScope scope("dst");
    Dataset ds(reader->schema().clone_schema(), "dst");
    ds.init_empty(dst_init);
    return ds;
  }();
  session.run(dst_init);
  TaskGroup tg([&] { pipe(reader, {.output = dst_ds.writer(), .num_runtime_threads = 8}); });
  session.run(tg);
  Field dst = schema::FetchRecord(dst_ds.content(), session.workspace());
  auto v = dst["label"].value()->values<int64_t>();
  std::vector<int64_t> out(v.begin(), v.end());
  std::sort(out.begin(), out.end());
  return out;
}

// TestDBFileReader._make_temp_path: a fresh name in a fresh directory (nothing exists there yet).
class TempPath {
 public:
  TempPath() {
    dir_ = ::testing::TempDir() + "moka-dbfile-XXXXXX";
    if (::mkdtemp(dir_.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = dir_ + "/cache_db";
  }
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// TestDBFileReader._delete_path.
void delete_path(const std::string& path) { std::filesystem::remove_all(path); }

// Ports TestDBFileReader.test_cached_reader.
TEST(Caffe2DBFileReader, test_cached_reader) {
  LocalSession session;
  TempPath tmp;
  const std::string& db_path = tmp.path();

  // Read data for the first time.
  auto cached_reader1 = std::make_shared<CachedReader>(build_source_reader(session, 100), db_path, "LevelDB",
                                                       CachedReaderOptions{.loop_over = false});
  session.run(cached_reader1->build_cache_step());
  EXPECT_EQ(read_all_data(session, cached_reader1), range(100));

  // Read data from cache: the 200-row source is never read.
  auto cached_reader2 = std::make_shared<CachedReader>(build_source_reader(session, 200), db_path);
  ExecutionStep step2 = cached_reader2->build_cache_step();
  session.run(step2);
  EXPECT_EQ(read_all_data(session, cached_reader2), range(100));

  delete_path(db_path);

  // We removed the cache, so the data comes from the original reader.
  auto cached_reader3 = std::make_shared<CachedReader>(build_source_reader(session, 300), db_path);
  session.run(cached_reader3->build_cache_step());
  EXPECT_EQ(read_all_data(session, cached_reader3), range(300));

  delete_path(db_path);
}

// Ports TestDBFileReader.test_db_file_reader.
TEST(Caffe2DBFileReader, test_db_file_reader) {
  LocalSession session;
  TempPath tmp;
  const std::string& db_path = tmp.path();

  // Build a cache DB file.
  auto cached_reader = std::make_shared<CachedReader>(build_source_reader(session, 100), db_path, "LevelDB");
  session.run(cached_reader->build_cache_step());

  // Read data from the cache DB file.
  auto db_file_reader = std::make_shared<DBFileReader>(db_path, "LevelDB");
  EXPECT_EQ(db_file_reader->name(), "cache_db_db_file_reader");
  EXPECT_EQ(db_file_reader->schema().field_names(), std::vector<std::string>{"label"});
  EXPECT_EQ(read_all_data(session, db_file_reader), range(100));

  delete_path(db_path);
}

}  // namespace
}  // namespace moka
