// Unit tests of TransactionSink and CursorValueSource (moka/storage/db_streams.h) on every DB backend.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/db_streams.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

class DbStreams : public ::testing::TestWithParam<std::string> {};

Tensor iota_floats(int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0.5f);
  return Tensor::from_vector<float>({n}, v);
}

// A chunked tensor goes in as one put per record and comes back record by record through cursors.
TEST_P(DbStreams, ChunkedTensorRoundTrip) {
  testing::TempDir dir;
  const std::string path = dir.str() + "/db";
  Blob src;
  src.get_mutable<Tensor>() = iota_floats(1000);
  uint64_t written = 0;
  {
    auto db = open_db(GetParam(), path, DbMode::New);
    auto txn = db->new_transaction();
    TransactionSink sink(*txn);
    SerializeOptions opt;
    opt.chunk_size = 300;  // 4 records
    serialize_blob("w", src, sink, opt);
    written = sink.bytes();
    txn->commit();
    db->close();
  }
  auto db = open_db(GetParam(), path, DbMode::Read);
  auto cursor = db->new_cursor();
  Blob dst;
  BlobAssembler assembler(dst);
  int records = 0;
  uint64_t read = 0;
  for (cursor->seek_to_first(); cursor->valid(); cursor->next()) {
    CursorValueSource in(*cursor);
    EXPECT_EQ(in.position(), 0u);
    assembler.add(in);
    EXPECT_EQ(in.position(), in.size()) << "the record is read to its end";
    EXPECT_EQ(in.remaining(), 0u);
    read += in.size();
    ++records;
  }
  assembler.finish();
  EXPECT_EQ(records, 4);
  EXPECT_EQ(read, written);
  const Tensor& t = dst.get<Tensor>();
  ASSERT_EQ(t.numel(), 1000);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(t.data<float>()[i], static_cast<float>(i) + 0.5f);
}

// Short reads at the end of a value, and a value read in odd pieces, give the stored bytes.
TEST_P(DbStreams, PiecewiseReadsOfAValue) {
  testing::TempDir dir;
  const std::string path = dir.str() + "/db";
  std::string value(10007, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 31 + 7);
  {
    auto db = open_db(GetParam(), path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("k", value);
    txn->commit();
    db->close();
  }
  auto db = open_db(GetParam(), path, DbMode::Read);
  auto cursor = db->new_cursor();
  cursor->seek_to_first();
  ASSERT_TRUE(cursor->valid());
  CursorValueSource in(*cursor);
  ASSERT_EQ(in.size(), value.size());
  std::string got;
  std::vector<std::byte> buf(997);
  for (std::size_t n; (n = in.read(buf)) > 0;) got.append(reinterpret_cast<const char*>(buf.data()), n);
  EXPECT_EQ(got, value);
  EXPECT_EQ(in.read(buf), 0u) << "0 only at the end, and again after it";
}

INSTANTIATE_TEST_SUITE_P(Backends, DbStreams, ::testing::Values("minidb", "leveldb", "lmdb"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace moka
