// Unit tests of the streamed put (Transaction::begin_put / put_part / end_put) on every DB backend:
// values round-trip whatever their parts, sequence and size errors abandon the put without a trace,
// and minidb writes a streamed record byte for byte as put() would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "moka/core/error.h"
#include "moka/storage/db.h"
#include "support/invalid_input.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using moka::testing::error_of;
using Entries = std::map<std::string, std::string>;

std::string random_bytes(std::size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& ch : s) ch = static_cast<char>(rng() & 0xff);
  return s;
}

// Streams value in parts of part_size bytes (the last one shorter).
void stream_put(Transaction& txn, std::string_view key, std::string_view value, std::size_t part_size) {
  txn.begin_put(key, value.size());
  for (std::size_t pos = 0; pos < value.size(); pos += part_size)
    txn.put_part(value.substr(pos, std::min(part_size, value.size() - pos)));
  txn.end_put();
}

Entries read_all(const std::string& type, const std::string& path) {
  auto db = open_db(type, path, DbMode::Read);
  db->verify();
  Entries out;
  for (auto c = db->new_cursor(); c->valid(); c->next()) out[std::string(c->key())] = std::string(c->value());
  return out;
}

class StreamedPut : public ::testing::TestWithParam<std::string> {
 protected:
  std::string type() const { return GetParam(); }
  moka::testing::TempDir dir_{"moka-streamed-put-test"};
  std::string path_ = dir_.str() + "/db";
};

// Sizes around minidb's thresholds: empty, tiny, the 32 KiB direct-write size, and values larger
// than its 4 MiB write buffer (the record header reaches the file before the value ends).
TEST_P(StreamedPut, ValuesRoundTripWhateverTheirParts) {
  const std::vector<std::pair<std::size_t, std::size_t>> cases = {
      {0, 1}, {1, 1}, {31, 7}, {32 << 10, 32 << 10}, {(32 << 10) + 5, 1000}, {5 << 20, 256 << 10}, {9 << 20, 3 << 20}};
  Entries expected;
  {
    auto db = open_db(type(), path_, DbMode::New);
    auto txn = db->new_transaction();
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto [size, part] = cases[i];
      const std::string key = "s" + std::to_string(i);
      expected[key] = random_bytes(size, static_cast<uint32_t>(i));
      stream_put(*txn, key, expected[key], part);
      // Ordinary puts in between.
      const std::string plain = "p" + std::to_string(i);
      expected[plain] = random_bytes(100 + i, 1000 + static_cast<uint32_t>(i));
      txn->put(plain, expected[plain]);
    }
    txn->commit();
    db->close();
  }
  EXPECT_EQ(read_all(type(), path_), expected);
}

TEST_P(StreamedPut, ASecondStreamedPutOfAKeyReplacesTheFirst) {
  {
    auto db = open_db(type(), path_, DbMode::New);
    auto txn = db->new_transaction();
    stream_put(*txn, "k", "first value", 4);
    stream_put(*txn, "k", "second", 2);
    txn->commit();
    db->close();
  }
  EXPECT_EQ(read_all(type(), path_), (Entries{{"k", "second"}}));
}

TEST_P(StreamedPut, CallsOutOfSequenceAreErrorsNamingTheOpenKey) {
  auto db = open_db(type(), path_, DbMode::New);
  auto txn = db->new_transaction();
  EXPECT_NE(error_of([&] { txn->put_part("x"); }).find("no put is open"), std::string::npos);
  EXPECT_NE(error_of([&] { txn->end_put(); }).find("no put is open"), std::string::npos);
  txn->begin_put("open-key", 4);
  txn->put_part("ab");
  for (const auto& [call, fn] :
       std::vector<std::pair<std::string, std::function<void()>>>{{"begin_put", [&] { txn->begin_put("other", 1); }},
                                                                  {"put", [&] { txn->put("other", "v"); }},
                                                                  {"commit", [&] { txn->commit(); }}}) {
    const std::string msg = error_of(fn);
    EXPECT_NE(msg.find(call), std::string::npos) << msg;
    EXPECT_NE(msg.find("'open-key' is still open (2 of 4 bytes"), std::string::npos) << msg;
  }
  // The open put survived the refused calls and completes.
  txn->put_part("cd");
  txn->end_put();
  txn->commit();
  txn.reset();  // LevelDB stays locked while its transaction holds it
  db.reset();
  EXPECT_EQ(read_all(type(), path_), (Entries{{"open-key", "abcd"}}));
}

// A part beyond the declared size, or end_put before it, abandons the put: nothing of it is
// committed, the transaction goes on, and the DB verifies. Large sizes make minidb take back bytes
// that already reached the file.
TEST_P(StreamedPut, APartBeyondTheDeclaredSizeAbandonsThePut) {
  const std::string big = random_bytes(5 << 20, 7);
  auto db = open_db(type(), path_, DbMode::New);
  auto txn = db->new_transaction();
  txn->put("before", "b");
  txn->begin_put("too-long", big.size());
  txn->put_part(big);
  const std::string msg = error_of([&] { txn->put_part("!"); });
  EXPECT_NE(msg.find("key 'too-long': a 1-byte part after 5242880 bytes exceeds the declared value size 5242880"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([&] { txn->put_part("x"); }).find("no put is open"), std::string::npos);
  txn->put("after", "a");
  txn->commit();
  txn.reset();  // LevelDB stays locked while its transaction holds it
  db.reset();
  EXPECT_EQ(read_all(type(), path_), (Entries{{"after", "a"}, {"before", "b"}}));
}

TEST_P(StreamedPut, EndPutBeforeTheDeclaredSizeAbandonsThePut) {
  const std::string big = random_bytes(6 << 20, 8);
  auto db = open_db(type(), path_, DbMode::New);
  auto txn = db->new_transaction();
  txn->begin_put("short", big.size() + 10);
  txn->put_part(big);
  const std::string msg = error_of([&] { txn->end_put(); });
  EXPECT_NE(msg.find("key 'short': end_put after 6291456 of the declared 6291466 value bytes; the put is abandoned"),
            std::string::npos)
      << msg;
  stream_put(*txn, "next", big, 1 << 20);
  txn->commit();
  txn.reset();  // LevelDB stays locked while its transaction holds it
  db.reset();
  EXPECT_EQ(read_all(type(), path_), (Entries{{"next", big}}));
}

// A declared size no value reaches (here 2^62 bytes) allocates nothing up front; end_put reports
// the put short and abandons it.
TEST_P(StreamedPut, AnAbsurdDeclaredSizeIsReportedShort) {
  auto db = open_db(type(), path_, DbMode::New);
  auto txn = db->new_transaction();
  txn->begin_put("huge", uint64_t{1} << 62);
  txn->put_part("abc");
  const std::string msg = error_of([&] { txn->end_put(); });
  EXPECT_NE(msg.find("end_put after 3 of the declared 4611686018427387904 value bytes"), std::string::npos) << msg;
  txn->put("k", "v");
  txn->commit();
  txn.reset();
  db.reset();
  EXPECT_EQ(read_all(type(), path_), (Entries{{"k", "v"}}));
}

// An exception between begin_put and end_put (a serializer failing mid-record) leaves the put open;
// dropping the transaction drops it, and the DB takes new transactions.
TEST_P(StreamedPut, ATransactionDroppedMidPutLeavesNoTrace) {
  const std::string big = random_bytes(5 << 20, 9);
  auto db = open_db(type(), path_, DbMode::New);
  {
    auto txn = db->new_transaction();
    txn->put("kept", "k");
    txn->commit();
    txn->begin_put("dropped", big.size());
    txn->put_part(std::string_view(big).substr(0, 4 << 20));
  }
  auto txn = db->new_transaction();
  txn->put("later", "l");
  txn->commit();
  txn.reset();  // LevelDB stays locked while its transaction holds it
  db.reset();
  EXPECT_EQ(read_all(type(), path_), (Entries{{"kept", "k"}, {"later", "l"}}));
}

INSTANTIATE_TEST_SUITE_P(Backends, StreamedPut, ::testing::Values("minidb", "leveldb", "lmdb"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// minidb fills in a streamed record's header at end_put (in its buffer, or with a pwrite once the
// header reached the file): the file must be the one put() writes, byte for byte.
TEST(MiniDbStreamedPut, TheFileIsByteIdenticalToOneWrittenWithPut) {
  moka::testing::TempDir dir("moka-streamed-put-test");
  const std::vector<std::size_t> sizes = {0, 10, 40 << 10, 5 << 20, 100, 9 << 20, 3};
  const auto write = [&](const std::string& path, bool streamed) {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::string key = "key" + std::to_string(i);
      const std::string value = random_bytes(sizes[i], static_cast<uint32_t>(i));
      if (streamed) {
        stream_put(*txn, key, value, 256 << 10);
      } else {
        txn->put(key, value);
      }
    }
    txn->commit();
    db->close();
  };
  write(dir.str() + "/put", false);
  write(dir.str() + "/streamed", true);
  const std::string a = file_bytes(dir.str() + "/put");
  const std::string b = file_bytes(dir.str() + "/streamed");
  ASSERT_GT(a.size(), std::size_t{14} << 20);
  EXPECT_TRUE(a == b) << "the files differ";
}

// close() with a put still open publishes what was committed before it, without the open record
// (a placeholder header left in the file would make it corrupt).
TEST(MiniDbStreamedPut, CloseDropsAnOpenPut) {
  moka::testing::TempDir dir("moka-streamed-put-test");
  const std::string path = dir.str() + "/db";
  const std::string big = random_bytes(5 << 20, 3);
  auto db = open_db("minidb", path, DbMode::New);
  auto txn = db->new_transaction();
  txn->put("committed", "c");
  txn->commit();
  txn->begin_put("open", big.size());
  txn->put_part(big);
  db->close();
  const std::string msg = error_of([&] { txn->end_put(); });
  EXPECT_NE(msg.find("closed"), std::string::npos) << msg;
  txn.reset();
  EXPECT_EQ(read_all("minidb", path), (Entries{{"committed", "c"}}));
}

// Appending (Write mode) after an abandoned put: the next commit's file verifies and holds the old
// and the new keys only.
TEST(MiniDbStreamedPut, AnAbandonedPutInWriteModeLeavesTheDbWhole) {
  moka::testing::TempDir dir("moka-streamed-put-test");
  const std::string path = dir.str() + "/db";
  {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("old", "o");
    txn->commit();
    db->close();
  }
  const std::string big = random_bytes(6 << 20, 4);
  {
    auto db = open_db("minidb", path, DbMode::Write);
    auto txn = db->new_transaction();
    txn->begin_put("abandoned", big.size() * 2);
    txn->put_part(big);
    EXPECT_NE(error_of([&] { txn->end_put(); }).find("abandoned"), std::string::npos);
    stream_put(*txn, "new", big, 1 << 20);
    txn->commit();
    db->close();
  }
  EXPECT_EQ(read_all("minidb", path), (Entries{{"new", big}, {"old", "o"}}));
}

}  // namespace
}  // namespace moka
