// The fast load path: Cursor::value_unhashed / read_value (minidb leaves out its value hash because
// load_blobs verifies the blob records' own checksums, and reads values straight into the caller's
// memory) still refuses every damaged byte of a checkpoint, naming the file and the record; and
// every XXH3 implementation the CPU runs hashes alike.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "../../../src/storage/xxh3_fast.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/operators/counter.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"
#include "support/invalid_input.h"
#include "support/minidb_pread_path.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using moka::testing::error_of;

struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-minidb-fastload") {}
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

TEST(Xxh3Fast, EveryRunnableImplementationGivesTheSameHashes) {
  std::vector<char> data(3u << 20);
  uint32_t s = 7;
  for (auto& c : data) c = static_cast<char>((s = s * 1664525u + 1013904223u) >> 24);
  const auto impls = detail::xxh3_runnable_impls();
  ASSERT_FALSE(impls.empty());
  EXPECT_STREQ(impls.front()->name, "baseline");
  const detail::Xxh3Impl& base = *impls.front();
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (size_t n : {1023u, 1024u, 1025u, 4096u, 65537u, 1u << 20, 3u << 20}) lengths.push_back(n);
  for (const detail::Xxh3Impl* impl : impls) {
    for (size_t n : lengths) {
      for (uint64_t seed : {uint64_t{0}, uint64_t{12345}}) {
        const uint64_t want = base.hash(data.data(), n, seed);
        ASSERT_EQ(impl->hash(data.data(), n, seed), want) << impl->name << " n=" << n;
        // Streaming in uneven pieces gives the one-shot value.
        detail::Xxh3Stream st(seed, *impl);
        for (size_t pos = 0; pos < n;) {
          const size_t piece = std::min<size_t>(n - pos, 1 + (pos * 7919) % 300007);
          st.update(data.data() + pos, piece);
          pos += piece;
        }
        ASSERT_EQ(st.digest(), want) << impl->name << " streamed n=" << n;
      }
    }
  }
  EXPECT_EQ(detail::xxh3_64_fast(data.data(), 100, 1), base.hash(data.data(), 100, 1));
  EXPECT_EQ(xxh3_64(std::as_bytes(std::span(data)).first(5000), 3), base.hash(data.data(), 5000, 3));
}

TEST(MiniDbValueUnhashed, SkipsOnlyTheValueHash) {
  TempDir dir;
  const std::string path = dir.path() + "/v.minidb";
  {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("key", std::string(1000, 'v'));
    txn->commit();
    db->close();
  }
  std::string bytes = read_file(path);
  const size_t value_at = bytes.find(std::string(1000, 'v'));
  const size_t key_at = bytes.find("keyvvv");
  ASSERT_NE(value_at, std::string::npos);
  ASSERT_NE(key_at, std::string::npos);
  for (bool unhashed_first : {false, true}) {
    std::string damaged = bytes;
    damaged[value_at + 500] = 'w';
    write_file(path, damaged);
    auto db = open_db("minidb", path, DbMode::Read);
    auto c = db->new_cursor();
    ASSERT_TRUE(c->valid());
    if (unhashed_first) {
      // The value bytes are the caller's to check; everything else was checked.
      EXPECT_EQ(c->value_unhashed().size(), 1000u);
      EXPECT_EQ(c->value_unhashed()[500], 'w');
    }
    // value() still hashes, also after value_unhashed() on the same record.
    const std::string msg = error_of([&] { (void)c->value(); });
    EXPECT_NE(msg.find("payload checksum mismatch"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("key 'key'"), std::string::npos) << msg;
  }
  // A damaged key or record header fails value_unhashed too.
  for (size_t pos : {key_at + 1, key_at - 20}) {
    std::string damaged = bytes;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x01);
    write_file(path, damaged);
    auto db = open_db("minidb", path, DbMode::Read);
    auto c = db->new_cursor();
    const std::string msg = error_of([&] { (void)c->value_unhashed(); });
    EXPECT_NE(msg.find(path), std::string::npos) << "flip at " << pos << ": " << msg;
  }
}

TEST(MiniDbValueUnhashed, OtherBackendsReturnTheValue) {
  TempDir dir;
  for (const char* type : {"leveldb", "lmdb"}) {
    const std::string path = dir.path() + "/o." + type;
    {
      auto db = open_db(type, path, DbMode::New);
      auto txn = db->new_transaction();
      txn->put("a", "alpha");
      txn->commit();
      db->close();
    }
    auto r = open_db(type, path, DbMode::Read);
    auto c = r->new_cursor();
    ASSERT_TRUE(c->valid());
    EXPECT_EQ(c->value_unhashed(), "alpha") << type;
  }
}

// load_blobs reads records with value_unhashed: a flip of any byte of the file must still fail the
// load, name the file, and leave the blobs untouched or empty; a flip inside a record names its key.
TEST(MiniDbValueUnhashed, LoadRefusesEveryByteFlipOfACheckpoint) {
  TempDir dir;
  const std::string path = dir.path() + "/ckpt.minidb";
  Workspace ws;
  {
    Tensor t(DType::Int64, {40});
    for (int64_t i = 0; i < 40; ++i) t.mutable_data<int64_t>()[i] = 0x0102030405060708 * (i + 1);
    ws.create_blob("w")->get_mutable<Tensor>() = t;
    ws.create_blob("c")->emplace<Counter>(42);
    SaveSpec s;
    s.blob_names = {"c", "w"};
    s.db = path;
    s.db_type = "minidb";
    s.absolute_path = true;
    s.chunk_size = 16;  // three chunks
    save_blobs(ws, s);
  }
  const std::string bytes = read_file(path);
  const Tensor want = ws.blob("w").get<Tensor>();
  const char* payload = reinterpret_cast<const char*>(want.raw_data());
  const size_t payload_at = bytes.find(std::string(payload, 16 * 8));  // chunk 0's payload
  ASSERT_NE(payload_at, std::string::npos);
  LoadSpec l;
  l.blob_names = {"c", "w"};
  l.dbs = {path};
  l.db_type = "minidb";
  l.absolute_path = true;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x04);
    write_file(path, damaged);
    Workspace out;
    const std::string msg = error_of([&] { load_blobs(out, l); });
    ASSERT_NE(msg.find(path), std::string::npos) << "flip of byte " << i << ": " << msg;
    if (i >= payload_at && i < payload_at + 16 * 8) {
      EXPECT_NE(msg.find("w#%0"), std::string::npos) << "flip of byte " << i << ": " << msg;
    }
    for (const char* b : {"c", "w"}) {
      const Blob* blob = out.get_blob(b);
      if (blob == nullptr || !blob->is_initialized()) continue;
      // A blob that was loaded must be exactly what was saved (its records were intact).
      if (std::string(b) == "c") {
        EXPECT_EQ(blob->get<Counter>().retrieve(), 42) << "flip of byte " << i;
      } else {
        EXPECT_TRUE(blob->get<Tensor>() == want) << "flip of byte " << i;
      }
    }
  }
  write_file(path, bytes);
  Workspace out;
  load_blobs(out, l);
  EXPECT_TRUE(out.blob("w").get<Tensor>() == want);
  EXPECT_EQ(out.blob("c").get<Counter>().retrieve(), 42);
}

// Blobs larger than minidb's 4 KiB value prefix: the last read of each record also brings the next
// record's header, key and prefix (one system call per record). Damage anywhere in that
// read-ahead part is still refused, naming the file and the key of the record it belongs to.
TEST(MiniDbValueUnhashed, LoadRefusesByteFlipsInTheReadAheadOfTheNextRecord) {
  TempDir dir;
  const std::string path = dir.path() + "/ahead.minidb";
  Workspace ws;
  std::vector<std::string> names = {"blob_a", "blob_b", "blob_c"};
  for (size_t b = 0; b < names.size(); ++b) {
    Tensor t(DType::Float, {3000 + static_cast<int64_t>(b)});
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = static_cast<float>(i * 3 + b);
    ws.create_blob(names[b])->get_mutable<Tensor>() = t;
  }
  SaveSpec s;
  s.blob_names = names;
  s.db = path;
  s.db_type = "minidb";
  s.absolute_path = true;
  save_blobs(ws, s);
  const std::string bytes = read_file(path);
  LoadSpec l;
  l.blob_names = names;
  l.dbs = {path};
  l.db_type = "minidb";
  l.absolute_path = true;
  {
    Workspace out;
    load_blobs(out, l);
    for (const auto& n : names) EXPECT_TRUE(out.blob(n).get<Tensor>() == ws.blob(n).get<Tensor>()) << n;
  }
  // blob_b's minidb record: 32-byte record header, the key, then the blob record ("MKBR...").
  const size_t key_at = bytes.find("blob_b#%0MKBR");
  ASSERT_NE(key_at, std::string::npos);
  const size_t record_at = key_at - 32;
  const size_t value_at = key_at + 9;
  const size_t value_end = bytes.find("blob_c#%0MKBR") - 32;
  std::vector<size_t> flips;
  for (size_t i = record_at; i < value_at + 300; ++i) flips.push_back(i);  // headers, key, payload start
  for (size_t i = value_end - 20; i < value_end; ++i) flips.push_back(i);  // payload end, checksum
  flips.push_back(value_at + 4096 + 50);                                   // just past the prefix
  for (size_t i : flips) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    write_file(path, damaged);
    Workspace out;
    const std::string msg = error_of([&] { load_blobs(out, l); });
    EXPECT_NE(msg.find(path), std::string::npos) << "flip of byte " << i << ": " << msg;
    EXPECT_NE(msg.find("blob_b"), std::string::npos) << "flip of byte " << i << ": " << msg;
    const Blob* b = out.get_blob("blob_b");
    EXPECT_TRUE(b == nullptr || !b->is_initialized()) << "flip of byte " << i;
  }
}

// read_value and the readers must not depend on the read path: MinidbPreadPath switches to pread.
using PreadPath = moka::testing::MinidbPreadPath;

TEST(MiniDbReadValue, AnyRangeEqualsTheValue) {
  TempDir dir;
  std::map<std::string, std::string> entries;
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{100'000}}) {
    std::string v(n, '\0');
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>('a' + (i * 31 + n) % 26);
    entries["k" + std::to_string(n)] = v;
  }
  for (const char* type : {"minidb", "leveldb"}) {
    const std::string path = dir.path() + "/r." + type;
    {
      auto db = open_db(type, path, DbMode::New);
      auto txn = db->new_transaction();
      for (const auto& [k, v] : entries) txn->put(k, v);
      txn->commit();
      db->close();
    }
    for (bool use_pread : {false, true}) {
      std::unique_ptr<PreadPath> p;
      if (use_pread) p = std::make_unique<PreadPath>();
      auto db = open_db(type, path, DbMode::Read);
      for (auto c = db->new_cursor(); c->valid(); c->next()) {
        const std::string& want = entries.at(std::string(c->key()));
        ASSERT_EQ(c->value_size(), want.size());
        // Uneven pieces across the 4 KiB prefix boundary, in order, then out of order.
        std::string got(want.size(), '\0');
        for (size_t pos = 0; pos < want.size();) {
          const size_t n = std::min<size_t>(want.size() - pos, 1 + (pos * 13) % 5000);
          c->read_value(pos, std::as_writable_bytes(std::span(got.data() + pos, n)));
          pos += n;
        }
        EXPECT_EQ(got, want) << type << " " << c->key();
        if (want.size() > 10) {
          std::string tail(10, '\0');
          c->read_value(want.size() - 10, std::as_writable_bytes(std::span(tail)));
          EXPECT_EQ(tail, want.substr(want.size() - 10));
        }
        EXPECT_EQ(c->value(), want);
        std::string one(1, '\0');
        const std::string msg = error_of([&] { c->read_value(want.size(), std::as_writable_bytes(std::span(one))); });
        EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
      }
    }
  }
}

TEST(MiniDbReadValue, ChecksHeaderAndKeyButLeavesTheValueToTheCaller) {
  TempDir dir;
  const std::string path = dir.path() + "/h.minidb";
  {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("key", std::string(10'000, 'v'));
    txn->commit();
    db->close();
  }
  const std::string bytes = read_file(path);
  const size_t key_at = bytes.find("keyvvv");
  ASSERT_NE(key_at, std::string::npos);
  std::byte b[16];
  for (size_t pos : {key_at + 1, key_at - 20, key_at - 30}) {
    std::string damaged = bytes;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x01);
    write_file(path, damaged);
    auto db = open_db("minidb", path, DbMode::Read);
    auto c = db->new_cursor();
    const std::string msg = error_of([&] { c->read_value(9'000, b); });
    EXPECT_NE(msg.find(path), std::string::npos) << "flip at " << pos << ": " << msg;
    EXPECT_NE(msg.find("key 'key'"), std::string::npos) << "flip at " << pos << ": " << msg;
  }
  // Value bytes are not hashed here (the caller's checksums cover them); value() still hashes.
  std::string damaged = bytes;
  damaged[key_at + 3 + 9'000] = 'w';
  write_file(path, damaged);
  {
    auto db = open_db("minidb", path, DbMode::Read);
    auto c = db->new_cursor();
    c->read_value(9'000, std::span(b, 1));
    EXPECT_EQ(static_cast<char>(b[0]), 'w');
    EXPECT_NE(error_of([&] { (void)c->value(); }).find("payload checksum mismatch"), std::string::npos);
  }
  // A file cut short after it was opened: an error naming it, not a crash or short data.
  write_file(path, bytes);
  auto db = open_db("minidb", path, DbMode::Read);
  auto c = db->new_cursor();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(key_at + 100)), 0);
  const std::string msg = error_of([&] { c->read_value(5'000, b); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

}  // namespace
}  // namespace moka
