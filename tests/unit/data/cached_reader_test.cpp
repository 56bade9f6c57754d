// Unit tests of DBFileReader / CachedReader beyond the Caffe2 ports: every backend, overwrite, given
// field names, default names, and the error paths (unknown db_type, missing file, read before setup).
#include "moka/data/cached_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using moka::testing::invalid_input;
using schema::Field;

std::vector<int64_t> iota_vec(int64_t from, int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::shared_ptr<Reader> source(LocalSession& session, int64_t from, int64_t n) {
  NameScope scope("src");
  schema::Struct values({{"label", schema::Scalar(Tensor::vector<int64_t>(iota_vec(from, n)))},
                         {"name", schema::Scalar(Tensor::vector<std::string>(
                                      std::vector<std::string>(static_cast<std::size_t>(n), "row")))}});
  Net init("src_init");
  Field blobs = schema::NewRecord(init, values);
  schema::FeedRecord(blobs, values, session.workspace());
  return Dataset(blobs, "src").reader();
}

std::vector<int64_t> read_all(LocalSession& session, const std::shared_ptr<Reader>& reader) {
  Net init("dst_init");
  Dataset dst = [&] {
    NameScope scope("dst");
    Dataset d(reader->schema().clone_schema(), "dst");
    d.init_empty(init);
    return d;
  }();
  session.run(init);
  TaskGroup tg([&] { pipe(reader, {.output = dst.writer(), .num_runtime_threads = 4}); });
  session.run(tg);
  const Field fetched = schema::FetchRecord(dst.content(), session.workspace());  // owns the tensors
  auto v = fetched["label"].value()->values<int64_t>();
  std::vector<int64_t> out(v.begin(), v.end());
  std::sort(out.begin(), out.end());
  return out;
}

class CachedReaderTest : public ::testing::TestWithParam<std::string> {
 protected:
  CachedReaderTest() {
    dir_ = ::testing::TempDir() + "moka-cached-XXXXXX";
    if (::mkdtemp(dir_.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  }
  ~CachedReaderTest() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_P(CachedReaderTest, EveryBackendCachesAndOverwrites) {
  LocalSession session;
  const std::string db = dir_ + "/cache." + GetParam();
  auto first =
      std::make_shared<CachedReader>(source(session, 0, 50), db, GetParam(), CachedReaderOptions{.batch_size = 7});
  EXPECT_EQ(first->name(), "cache_db_file_reader");
  session.run(first->build_cache_step());
  EXPECT_TRUE(std::filesystem::exists(db));
  EXPECT_EQ(read_all(session, first), iota_vec(0, 50));
  // Cache reused...
  auto second = std::make_shared<CachedReader>(source(session, 100, 20), db, GetParam());
  session.run(second->build_cache_step());
  EXPECT_EQ(read_all(session, second), iota_vec(0, 50));
  // ... unless overwritten.
  session.run(second->build_cache_step(/*overwrite=*/true));
  EXPECT_EQ(read_all(session, second), iota_vec(100, 20));
  // A DBFileReader sees the columns (sorted key names) and the same rows; or only those asked for.
  auto plain = std::make_shared<DBFileReader>(db, GetParam(), DBFileReaderOptions{.name = "plain", .batch_size = 3});
  EXPECT_EQ(plain->schema().field_names(), (std::vector<std::string>{"label", "name"}));
  EXPECT_EQ(read_all(session, plain), iota_vec(100, 20));
  auto only = std::make_shared<DBFileReader>(db, GetParam(), DBFileReaderOptions{.field_names = {"label"}});
  EXPECT_EQ(only->schema().field_names(), std::vector<std::string>{"label"});
  EXPECT_EQ(read_all(session, only), iota_vec(100, 20));
}

INSTANTIATE_TEST_SUITE_P(Backends, CachedReaderTest, ::testing::Values("minidb", "leveldb", "lmdb"));

TEST(CachedReaderErrors, BadArguments) {
  LocalSession session;
  EXPECT_NE(invalid_input([&] { DBFileReader("/tmp/x.db", "nosuchdb"); }).find("db_type [nosuchdb] is not available."),
            std::string::npos);
  const std::string missing = ::testing::TempDir() + "moka-definitely-missing.db";
  EXPECT_NE(invalid_input([&] { DBFileReader(missing, "minidb"); }).find("db_path [" + missing + "] does not exist"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { CachedReader(nullptr, missing, "minidb"); }).find("original_reader can't be None"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] {
              CachedReader(source(session, 0, 1), missing, "minidb", {.batch_size = 0});
            }).find("batch_size must be > 0"),
            std::string::npos);
  // Given field names, the file is not needed until setup; read() before setup is refused.
  DBFileReader r(missing, "MiniDB", {.field_names = {"label"}});
  EXPECT_EQ(r.name(), "moka-definitely-missing_db_file_reader");
  Net net("read");
  EXPECT_NE(invalid_input([&] { r.read(net); }).find("setup_ex must be called first"), std::string::npos);
  Net init("init");
  EXPECT_NE(invalid_input([&] { r.setup_ex(init, std::nullopt); }).find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace moka
