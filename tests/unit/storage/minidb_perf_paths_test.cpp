// minidb's two read paths: the mapped file (default) and pread into a buffer (MOKA_MINIDB_NO_MMAP=1,
// or when mmap fails) return the same data and detect the same damage; a file truncated after it was
// opened is an error naming it, not a crash (SIGBUS).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "moka/core/error.h"
#include "moka/storage/db.h"
#include "support/invalid_input.h"
#include "support/minidb_pread_path.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka-minidb-paths-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-minidb-paths") {}
};
using Entries = std::map<std::string, std::string>;

using PreadPath = moka::testing::MinidbPreadPath;

using moka::testing::error_of;

void write_entries(const std::string& path, const Entries& entries) {
  auto db = open_db("minidb", path, DbMode::New);
  auto txn = db->new_transaction();
  for (const auto& [k, v] : entries) txn->put(k, v);
  txn->commit();
  db->close();
}

Entries read_entries(const std::string& path) {
  auto db = open_db("minidb", path, DbMode::Read);
  Entries out;
  for (auto c = db->new_cursor(); c->valid(); c->next()) out[std::string(c->key())] = std::string(c->value());
  db->verify();
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Values around page and piece boundaries, an empty one, and one larger than the 8 MiB scan piece.
Entries mixed_entries() {
  Entries e;
  e["a-empty"] = "";
  e["b-small"] = "x";
  e["c-page"] = std::string(4096, 'p');
  e["d-page+1"] = std::string(4097, 'q');
  std::string big(9u << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  e["e-9MiB"] = big;
  e[std::string("f\0nul", 5)] = std::string("\0\1\2", 3);
  return e;
}

TEST(MiniDbReadPaths, MappedAndPreadReadTheSameEntries) {
  TempDir dir;
  const std::string path = dir.path() + "/m.minidb";
  const Entries original = mixed_entries();
  write_entries(path, original);
  EXPECT_EQ(read_entries(path), original);
  PreadPath pread;
  EXPECT_EQ(read_entries(path), original);
}

TEST(MiniDbReadPaths, SeekAndValuesStayValidUntilTheCursorMoves) {
  TempDir dir;
  const std::string path = dir.path() + "/m.minidb";
  const Entries original = mixed_entries();
  write_entries(path, original);
  for (bool use_pread : {false, true}) {
    std::unique_ptr<PreadPath> p;
    if (use_pread) p = std::make_unique<PreadPath>();
    auto db = open_db("minidb", path, DbMode::Read);
    auto c1 = db->new_cursor();
    auto c2 = db->new_cursor();
    c1->seek("c");
    c2->seek("e");
    ASSERT_TRUE(c1->valid() && c2->valid());
    const std::string_view v1 = c1->value();
    const std::string_view v2 = c2->value();
    EXPECT_EQ(std::string(v1), original.at("c-page")) << "pread " << use_pread;
    EXPECT_EQ(std::string(v2), original.at("e-9MiB")) << "pread " << use_pread;
    // The DB closed, cursors alive: the file (mapping) stays with the cursors.
    db->close();
    db.reset();
    EXPECT_EQ(std::string(c2->value()), original.at("e-9MiB"));
  }
}

TEST(MiniDbReadPaths, PreadPathDetectsEveryTruncationAndByteFlip) {
  TempDir dir;
  const std::string good = dir.path() + "/good.minidb";
  const std::string bad = dir.path() + "/bad.minidb";
  const Entries original = {{"alpha", "first value"}, {"beta", std::string(300, 'b')}, {"empty", ""}};
  write_entries(good, original);
  const std::string bytes = read_file(good);
  PreadPath pread;
  for (size_t len = 0; len < bytes.size(); ++len) {
    write_file(bad, bytes.substr(0, len));
    const std::string msg = error_of([&] { open_db("minidb", bad, DbMode::Read); });
    EXPECT_NE(msg.find(bad), std::string::npos) << "length " << len << ": " << msg;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    write_file(bad, damaged);
    const std::string msg = error_of([&] { (void)read_entries(bad); });
    EXPECT_NE(msg.find(bad), std::string::npos) << "flip of byte " << i << ": " << msg;
  }
}

TEST(MiniDbReadPaths, AFileTruncatedAfterOpenIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.path() + "/t.minidb";
  Entries original;
  original["a"] = std::string(1u << 20, 'a');
  original["b"] = std::string(1u << 20, 'b');
  write_entries(path, original);
  for (bool use_pread : {false, true}) {
    std::unique_ptr<PreadPath> p;
    if (use_pread) p = std::make_unique<PreadPath>();
    write_entries(path, original);
    auto db = open_db("minidb", path, DbMode::Read);
    auto c = db->new_cursor();
    ASSERT_TRUE(c->valid());
    // Another process cuts the file in place (moka's writers never do: they rename a new file).
    ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
    const std::string msg = error_of([&] { (void)c->value(); });
    EXPECT_NE(msg.find(path), std::string::npos) << "pread " << use_pread << ": " << msg;
    c->next();
    const std::string msg2 = error_of([&] { (void)c->value(); });
    EXPECT_NE(msg2.find(path), std::string::npos) << "pread " << use_pread << ": " << msg2;
  }
}

}  // namespace
}  // namespace moka
