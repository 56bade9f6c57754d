// Unit tests: the DB interface, one suite run against every backend (minidb, leveldb, lmdb), plus
// minidb's corruption detection (truncation, bit flips) and crash safety (no file before commit).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/storage/db.h"
#include "support/invalid_input.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka-db-test-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-db-test") {}
};
using Entries = std::map<std::string, std::string>;  // std::less<std::string> is bytewise, like every backend

// The message of the moka::Error fn throws; fails the test when it throws none.
using moka::testing::error_of;

void write_all(DB& db, const Entries& entries) {
  auto txn = db.new_transaction();
  for (const auto& [k, v] : entries) txn->put(k, v);
  txn->commit();
}

Entries read_all(DB& db) {
  Entries out;
  std::string prev;
  bool first = true;
  for (auto c = db.new_cursor(); c->valid(); c->next()) {
    const std::string k(c->key());
    if (!first) {
      EXPECT_LT(prev, k) << "keys out of order";
    }
    first = false;
    prev = k;
    out[k] = std::string(c->value());
  }
  return out;
}

Entries read_path(const std::string& type, const std::string& path) {
  auto db = open_db(type, path, DbMode::Read);
  return read_all(*db);
}

std::string fmt_key(int i) {
  std::string digits = std::to_string(i);
  return "key" + std::string(5 - std::min<size_t>(5, digits.size()), '0') + digits;
}

std::string fmt_tmp(const std::string& path, pid_t pid) { return path + ".tmp-" + std::to_string(pid); }

std::string bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& ch : s) ch = static_cast<char>(rng() & 0xff);
  return s;
}

class DbSuite : public ::testing::TestWithParam<std::string> {
 protected:
  std::string type() const { return GetParam(); }
  std::string db_path() const { return dir_.path() + "/db"; }
  TempDir dir_;
};

TEST_P(DbSuite, PutCommitAndReadBackManyKeys) {
  Entries want;
  for (int i = 0; i < 500; ++i)
    want[fmt_key(i)] = i % 7 == 0 ? std::string() : bytes(static_cast<size_t>(i * 13 % 4000), i);
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, want);
    db->close();
  }
  EXPECT_EQ(read_path(type(), db_path()), want);
}

TEST_P(DbSuite, BinaryKeysAndValuesWithNulsInBytewiseOrder) {
  // Every backend orders keys bytewise (memcmp; a prefix first): \x00 < "a" < "ab" < "b" < \xff.
  Entries want{{std::string("\0", 1), "nul key"},
               {std::string("a\0b", 3), std::string("v\0\0w", 4)},
               {"a", std::string(1, '\0')},
               {"ab", "x"},
               {"b", ""},
               {std::string("\xff\xfe", 2), bytes(1000, 1)},
               {std::string("\x80", 1), "high bit"}};
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    auto txn = db->new_transaction();
    // Put in reverse order: the order read back is the backend's, not the insertion order.
    for (auto it = want.rbegin(); it != want.rend(); ++it) txn->put(it->first, it->second);
    txn->commit();
    db->close();
  }
  auto db = open_db(type(), db_path(), DbMode::Read);
  std::vector<std::string> keys;
  for (auto c = db->new_cursor(); c->valid(); c->next()) keys.emplace_back(c->key());
  std::vector<std::string> expected;
  for (const auto& [k, v] : want) expected.push_back(k);
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(read_all(*db), want);
}

TEST_P(DbSuite, A64MiBValue) {
  const std::string big = bytes(64u << 20, 7);
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    auto txn = db->new_transaction();
    txn->put("a_small", "s");
    txn->put("big", big);
    txn->put("z_small", "");
    txn->commit();
    db->close();
  }
  auto db = open_db(type(), db_path(), DbMode::Read);
  auto c = db->new_cursor();
  c->seek("big");
  ASSERT_TRUE(c->valid());
  EXPECT_EQ(c->key(), "big");
  ASSERT_EQ(c->value().size(), big.size());
  EXPECT_TRUE(c->value() == big);
  c->next();
  ASSERT_TRUE(c->valid());
  EXPECT_EQ(c->key(), "z_small");
  EXPECT_EQ(c->value(), "");
}

TEST_P(DbSuite, SeekFindsTheFirstKeyNotLess) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"b", "1"}, {"d", "2"}, {"f", "3"}});
    db->close();
  }
  auto db = open_db(type(), db_path(), DbMode::Read);
  auto c = db->new_cursor();
  ASSERT_TRUE(c->valid());  // a new cursor starts at the first key
  EXPECT_EQ(c->key(), "b");
  c->seek("a");
  EXPECT_EQ(c->key(), "b");
  c->seek("c");
  EXPECT_EQ(c->key(), "d");
  EXPECT_EQ(c->value(), "2");
  c->next();
  EXPECT_EQ(c->key(), "f");
  c->seek("d");
  EXPECT_EQ(c->key(), "d");
  c->seek("g");
  EXPECT_FALSE(c->valid());
  EXPECT_THROW(c->next(), Error);
  c->seek("");
  EXPECT_EQ(c->key(), "b");
  c->seek_to_first();
  EXPECT_EQ(c->key(), "b");
}

TEST_P(DbSuite, ReadModeRefusesWritesAndReopensRepeatedly) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"k", "v"}});
    db->close();
  }
  for (int i = 0; i < 3; ++i) {
    auto db = open_db(type(), db_path(), DbMode::Read);
    EXPECT_EQ(db->db_type(), type());
    EXPECT_EQ(db->mode(), DbMode::Read);
    EXPECT_EQ(read_all(*db), (Entries{{"k", "v"}}));
    EXPECT_NE(error_of([&] { db->new_transaction(); }).find(db_path()), std::string::npos);
  }
}

TEST_P(DbSuite, ReadOfAMissingPathIsNotFoundNamingIt) {
  const std::string missing = dir_.path() + "/nope";
  try {
    open_db(type(), missing, DbMode::Read);
    FAIL() << "no error";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(type()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(missing));  // reading never creates anything
}

TEST_P(DbSuite, NewReplacesAnExistingDb) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"old1", "a"}, {"old2", "b"}});
    db->close();
  }
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"new", "c"}});
    db->close();
  }
  EXPECT_EQ(read_path(type(), db_path()), (Entries{{"new", "c"}}));
  {
    auto db = open_db(type(), db_path(), DbMode::New);  // New + close, nothing written: an empty DB
    db->close();
  }
  EXPECT_TRUE(db_exists(type(), db_path()));
  EXPECT_EQ(read_path(type(), db_path()), Entries{});
}

TEST_P(DbSuite, WriteModeAddsAndOverwritesAndCreates) {
  {
    auto db = open_db(type(), db_path(), DbMode::Write);  // creates when missing
    write_all(*db, {{"a", "1"}, {"b", "2"}});
    db->close();
  }
  {
    auto db = open_db(type(), db_path(), DbMode::Write);
    write_all(*db, {{"b", "two"}, {"c", "3"}});
    db->close();
  }
  EXPECT_EQ(read_path(type(), db_path()), (Entries{{"a", "1"}, {"b", "two"}, {"c", "3"}}));
}

TEST_P(DbSuite, SeveralCommitsAndUncommittedPutsAreDropped) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    auto txn = db->new_transaction();
    txn->put("a", "1");
    txn->commit();
    txn->put("b", "2");
    txn->put("a", "one");
    txn->commit();
    txn->put("lost", "x");  // never committed
    txn.reset();
    db->close();
  }
  EXPECT_EQ(read_path(type(), db_path()), (Entries{{"a", "one"}, {"b", "2"}}));
}

TEST_P(DbSuite, CommittedDataSurvivesDestroyingTheDbWithoutClose) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"a", "1"}});
  }
  EXPECT_EQ(read_path(type(), db_path()), (Entries{{"a", "1"}}));
}

TEST_P(DbSuite, DbExists) {
  EXPECT_FALSE(db_exists(type(), db_path()));
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"a", "1"}});
    db->close();
  }
  EXPECT_TRUE(db_exists(type(), db_path()));
  EXPECT_FALSE(db_exists(type(), dir_.path() + "/other"));
}

TEST_P(DbSuite, TypeNamesAreCaseInsensitive) {
  std::string upper = type();
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto db = open_db(upper, db_path(), DbMode::New);
  write_all(*db, {{"a", "1"}});
  db->close();
  EXPECT_EQ(read_path(type(), db_path()), (Entries{{"a", "1"}}));
}

TEST_P(DbSuite, AnUncreatablePathIsAnErrorNamingIt) {
  const std::string file = dir_.path() + "/plain_file";
  std::ofstream(file) << "not a directory";
  for (const std::string& bad : {file + "/db", dir_.path() + "/no/such/parent/db"}) {
    for (DbMode mode : {DbMode::New, DbMode::Write}) {
      const std::string msg = error_of([&] { open_db(type(), bad, mode); });
      EXPECT_NE(msg.find(bad), std::string::npos) << msg;
    }
  }
  EXPECT_FALSE(fs::exists(dir_.path() + "/no"));
}

TEST_P(DbSuite, AClosedDbRefusesNewWork) {
  auto db = open_db(type(), db_path(), DbMode::New);
  db->close();
  db->close();  // idempotent
  EXPECT_THROW(db->new_transaction(), Error);
}

TEST_P(DbSuite, VerifyPassesOnAGoodDb) {
  {
    auto db = open_db(type(), db_path(), DbMode::New);
    write_all(*db, {{"a", bytes(10000, 3)}, {"b", ""}});
    db->close();
  }
  auto db = open_db(type(), db_path(), DbMode::Read);
  EXPECT_NO_THROW(db->verify());
}

INSTANTIATE_TEST_SUITE_P(Backends, DbSuite, ::testing::Values("minidb", "leveldb", "lmdb"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// ---- registry -------------------------------------------------------------------------------

TEST(DbRegistry, UnknownTypeListsTheKnownOnes) {
  TempDir dir;
  try {
    open_db("rocksdb", dir.path() + "/x", DbMode::New);
    FAIL() << "no error";
  } catch (const NotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Cannot find db implementation of type rocksdb"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dir.path() + "/x"), std::string::npos) << msg;
    EXPECT_NE(msg.find("leveldb, lmdb, minidb"), std::string::npos) << msg;
  }
  EXPECT_THROW(db_exists("rocksdb", dir.path() + "/x"), NotFound);
  const auto types = registered_db_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "minidb"), types.end());
}

TEST(DbRegistry, LmdbRejectsEmptyKeysClearly) {
  TempDir dir;
  auto db = open_db("lmdb", dir.path() + "/db", DbMode::New);
  auto txn = db->new_transaction();
  txn->put("ok", "1");
  EXPECT_THROW(txn->put("", "v"), InvalidInput);
  EXPECT_THROW(txn->commit(), RuntimeError);  // the failed put aborted the transaction
}

// ---- minidb: corruption and crash safety -----------------------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Opens and reads every value: either the exact original entries, or a moka::Error naming the file.
// Returns whether an error was raised.
bool read_fails_naming(const std::string& path, const Entries& original) {
  try {
    auto db = open_db("minidb", path, DbMode::Read);
    Entries got = read_all(*db);
    EXPECT_EQ(got, original) << "wrong data read from a damaged file";
    db->verify();
    return false;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return true;
  }
}

class MiniDbDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = {{"alpha", "first value"},
                 {"beta", std::string(300, 'b')},
                 {"empty", ""},
                 {std::string("k\0ey", 4), std::string("\0\1\2", 3)}};
    auto db = open_db("minidb", good_, DbMode::New);
    write_all(*db, original_);
    db->close();
    bytes_ = read_file(good_);
  }
  TempDir dir_;
  std::string good_ = dir_.path() + "/good.minidb";
  std::string bad_ = dir_.path() + "/bad.minidb";
  Entries original_;
  std::string bytes_;
};

TEST_F(MiniDbDamage, EveryTruncationIsDetectedAtOpen) {
  for (size_t len = 0; len < bytes_.size(); ++len) {
    write_file(bad_, bytes_.substr(0, len));
    const std::string msg = error_of([&] { open_db("minidb", bad_, DbMode::Read); });
    EXPECT_NE(msg.find(bad_), std::string::npos) << "length " << len << ": " << msg;
    EXPECT_FALSE(db_exists("minidb", bad_));
  }
}

TEST_F(MiniDbDamage, EveryByteFlipIsDetected) {
  for (size_t i = 0; i < bytes_.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string damaged = bytes_;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      write_file(bad_, damaged);
      EXPECT_TRUE(read_fails_naming(bad_, original_)) << "flip of byte " << i << " with mask " << int(mask);
    }
  }
}

TEST_F(MiniDbDamage, ErrorsNameTheRecord) {
  // Damage the payload of "beta" (its value is 300 'b's): the error says which record.
  const auto at = bytes_.find(std::string(300, 'b'));
  ASSERT_NE(at, std::string::npos);
  std::string damaged = bytes_;
  damaged[at + 10] = 'c';
  write_file(bad_, damaged);
  auto db = open_db("minidb", bad_, DbMode::Read);  // the index is intact: open succeeds
  auto c = db->new_cursor();
  c->seek("beta");
  try {
    (void)c->value();
    FAIL() << "no error";
  } catch (const CorruptData& e) {
    EXPECT_NE(std::string(e.what()).find("key 'beta'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  c->seek("alpha");
  EXPECT_EQ(c->value(), "first value");                               // other records still read
  EXPECT_THROW(open_db("minidb", bad_, DbMode::Write), CorruptData);  // appending verifies everything
}

TEST_F(MiniDbDamage, RandomMultiByteDamageOnALargerFile) {
  Entries big{{"w", bytes(1 << 20, 9)}, {"x", bytes(5000, 10)}, {"y", ""}};
  {
    auto db = open_db("minidb", good_, DbMode::New);
    write_all(*db, big);
    db->close();
  }
  const std::string clean = read_file(good_);
  std::mt19937 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    std::string damaged = clean;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    write_file(bad_, damaged);
    EXPECT_TRUE(read_fails_naming(bad_, big)) << "trial " << trial;
  }
}

TEST_F(MiniDbDamage, DeadRecordsAreCoveredByVerify) {
  // An overwritten value stays in the file as a dead record; reads never touch it, verify() does.
  {
    auto db = open_db("minidb", good_, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("k", std::string(100, 'o'));
    txn->put("k", "new");
    txn->commit();
    db->close();
  }
  std::string damaged = read_file(good_);
  damaged[damaged.find(std::string(100, 'o')) + 5] = 'X';
  write_file(bad_, damaged);
  auto db = open_db("minidb", bad_, DbMode::Read);
  EXPECT_EQ(read_all(*db), (Entries{{"k", "new"}}));
  const std::string msg = error_of([&] { db->verify(); });
  EXPECT_NE(msg.find(bad_), std::string::npos) << msg;
}

TEST(MiniDbCrash, NoFileAtThePathBeforeCommit) {
  TempDir dir;
  const std::string path = dir.path() + "/db.minidb";
  {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("a", bytes(10 << 20, 1));
    EXPECT_FALSE(fs::exists(path));  // everything goes to <path>.tmp-<pid> until commit
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path())) << "the temporary file was left behind";
}

TEST(MiniDbCrash, AKilledWriterLeavesOnlyATmpFileAndTheOldDb) {
  TempDir dir;
  const std::string path = dir.path() + "/db.minidb";
  {
    auto db = open_db("minidb", path, DbMode::New);
    write_all(*db, {{"old", "committed"}});
    db->close();
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child replaces the DB but dies before committing: no destructors run, like SIGKILL.
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    txn->put("new", bytes(6 << 20, 2));
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(fs::exists(fmt_tmp(path, child)));                          // the crash debris...
  EXPECT_EQ(read_path("minidb", path), (Entries{{"old", "committed"}}));  // ...never shadows the DB
}

TEST(MiniDbCrash, ATmpFileAloneIsNoDb) {
  TempDir dir;
  const std::string path = dir.path() + "/db.minidb";
  write_file(path + ".tmp-12345", "half written");
  EXPECT_FALSE(db_exists("minidb", path));
  EXPECT_THROW(open_db("minidb", path, DbMode::Read), NotFound);
}

TEST(MiniDb, ADirectoryOrAForeignFileIsRefused) {
  TempDir dir;
  const std::string msg = error_of([&] { open_db("minidb", dir.path(), DbMode::New); });
  EXPECT_NE(msg.find(dir.path()), std::string::npos) << msg;
  const std::string foreign = dir.path() + "/foreign";
  write_file(foreign, std::string(200, 'x'));
  EXPECT_THROW(open_db("minidb", foreign, DbMode::Read), CorruptData);
  EXPECT_THROW(open_db("minidb", dir.path(), DbMode::Read), Error);
}

TEST(MiniDb, WriterCursorSeesTheLastCommit) {
  TempDir dir;
  const std::string path = dir.path() + "/db.minidb";
  auto db = open_db("minidb", path, DbMode::New);
  EXPECT_FALSE(db->new_cursor()->valid());
  auto txn = db->new_transaction();
  EXPECT_THROW(db->new_transaction(), RuntimeError);  // one transaction at a time
  txn->put("a", "1");
  txn->commit();
  auto c = db->new_cursor();
  ASSERT_TRUE(c->valid());
  EXPECT_EQ(c->value(), "1");
}

// ---- leveldb: damage is an error or the right data, never wrong data -------------------------

// close() moves the commits into a table; a writer that died before close() left them in the log
// only. Both layouts are damaged in turn.
class LevelDbDamage : public ::testing::TestWithParam<bool> {};

TEST_P(LevelDbDamage, FlippedFilesNeverYieldWrongData) {
  const bool closed = GetParam();
  TempDir dir;
  const std::string path = dir.path() + "/db";
  const Entries want{{"a", bytes(20000, 1)}, {"b", bytes(20000, 2)}};
  {
    auto db = open_db("leveldb", path, DbMode::New);
    write_all(*db, want);
    if (closed) db->close();
  }
  const std::string pristine = dir.path() + "/pristine";
  fs::copy(path, pristine);
  for (const auto& entry : fs::directory_iterator(pristine)) {
    const std::string name = entry.path().filename();
    if (name.find(".log") == std::string::npos && name.find(".ldb") == std::string::npos) continue;
    const std::string data = read_file(entry.path());
    if (data.size() < 100) continue;
    for (size_t at : {size_t{20}, data.size() / 2, data.size() - 30}) {
      fs::remove_all(path);
      fs::copy(pristine, path);
      std::string damaged = data;
      damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
      write_file(path + "/" + name, damaged);
      try {
        auto db = open_db("leveldb", path, DbMode::Read);
        const Entries got = read_all(*db);
        // LevelDB may skip a damaged log record silently only without paranoid checks; ours are on,
        // so what is read must be exact (a partial read would fail this too).
        EXPECT_EQ(got, want) << name << " byte " << at;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WriterClosedOrNot, LevelDbDamage, ::testing::Bool());

// A reader of a closed DB must not replay the writer's log: that replay rewrote every byte into a
// table at the reader's open (for a 256 MiB save, most of the load's time).
TEST(LevelDb, CloseLeavesTheCommitsInATableNotOnlyInTheLog) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  const Entries want{{"a", bytes(300000, 1)}, {"b", bytes(300000, 2)}};
  auto sizes = [&](const std::string& ext) {
    uintmax_t n = 0;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ext) n += e.file_size();
    return n;
  };
  {
    auto db = open_db("leveldb", path, DbMode::New);
    write_all(*db, want);
    EXPECT_GE(sizes(".log"), 600000u);  // committed: in the synced log
    db->close();
  }
  EXPECT_LT(sizes(".log"), 1000u);
  EXPECT_GE(sizes(".ldb"), 600000u);
  auto db = open_db("leveldb", path, DbMode::Read);
  EXPECT_EQ(read_all(*db), want);
}

}  // namespace
}  // namespace moka
