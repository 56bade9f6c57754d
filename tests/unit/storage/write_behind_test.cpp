// Tests for WriteBehind (src/storage/write_behind.h), minidb's writer thread, and for minidb's use of it:
// writes land at their offsets in submission order, memory in flight stays bounded, a failed write
// is reported by the next call (and by every later one), and minidb files stay exact when a record
// header straddles two buffers or a write fails on the writer thread.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../../../src/storage/write_behind.h"
#include "moka/core/error.h"
#include "moka/storage/db.h"
#include "support/invalid_input.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

using detail::WriteBehind;
using moka::testing::error_of;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string random_bytes(std::size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& ch : s) ch = static_cast<char>(rng() & 0xff);
  return s;
}

struct File {
  explicit File(const std::string& p, int flags = O_RDWR | O_CREAT | O_TRUNC) : path(p) {
    fd = ::open(p.c_str(), flags | O_CLOEXEC, 0644);
  }
  ~File() {
    if (fd >= 0) ::close(fd);
  }
  std::string path;
  int fd = -1;
};

TEST(WriteBehind, WritesLandAtTheirOffsetsAndALaterWriteWins) {
  moka::testing::TempDir dir("moka-write-behind-test");
  File f(dir.str() + "/f");
  ASSERT_GE(f.fd, 0);
  std::string expected(3 << 20, '\0');
  {
    WriteBehind w(f.fd, "test file", 1 << 20);  // a bound smaller than what is queued: write() waits for room
    for (int i = 0; i < 24; ++i) {
      const std::size_t off = static_cast<std::size_t>(i) * (128 << 10);
      const std::string piece = random_bytes(128 << 10, static_cast<uint32_t>(i));
      expected.replace(off, piece.size(), piece);
      w.write(off, piece);
    }
    // Overwrite a range that straddles two earlier writes: queued after them, it must win.
    const std::string patch(1000, 'x');
    expected.replace((128 << 10) - 500, patch.size(), patch);
    w.write((128 << 10) - 500, patch);
    w.wait();
    EXPECT_EQ(file_bytes(f.path), expected);
    // A spare buffer is the storage of a finished write, emptied.
    const std::string spare = w.spare_buffer();
    EXPECT_TRUE(spare.empty());
    EXPECT_GE(spare.capacity(), 1000u);
  }
}

TEST(WriteBehind, TheDestructorFinishesQueuedWrites) {
  moka::testing::TempDir dir("moka-write-behind-test");
  File f(dir.str() + "/f");
  ASSERT_GE(f.fd, 0);
  const std::string bytes = random_bytes(8 << 20, 7);
  {
    WriteBehind w(f.fd, "test file", 16 << 20);
    for (std::size_t off = 0; off < bytes.size(); off += 1 << 20) w.write(off, bytes.substr(off, 1 << 20));
  }
  EXPECT_EQ(file_bytes(f.path), bytes);
}

TEST(WriteBehind, AFailedWriteIsReportedByWaitAndEveryLaterCall) {
  moka::testing::TempDir dir("moka-write-behind-test");
  { File create(dir.str() + "/ro"); }
  File ro(dir.str() + "/ro", O_RDONLY);  // pwrite fails with EBADF
  ASSERT_GE(ro.fd, 0);
  WriteBehind w(ro.fd, "minidb file 'ro.tmp'", 1 << 20);
  w.write(0, "abc");
  w.write(3, "def");  // dropped: an earlier write failed
  const std::string msg = error_of([&] { w.wait(); });
  EXPECT_NE(msg.find("minidb file 'ro.tmp': write at offset 0 failed"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { w.write(6, "x"); }), msg);
  EXPECT_EQ(error_of([&] { w.wait(); }), msg);
}

// minidb streams a record's header as a placeholder and fills it in at end_put. With 4 MiB write
// buffers handed to the writer thread, the placeholder can straddle a buffer that already went and
// the one still being filled: both halves must be right. Shifts put the second record's header
// across the first buffer boundary at every position; the files must equal those put() writes.
TEST(MiniDbWriteBehind, AHeaderStraddlingTwoBuffersIsFilledInBothHalves) {
  moka::testing::TempDir dir("moka-write-behind-test");
  constexpr std::size_t kBuffer = 4 << 20, kFileHeader = 32, kRecordHeader = 32;
  // Record 2 ends before the second buffer fills, so its header is still split at end_put.
  const std::string big = random_bytes(1 << 20, 11);
  for (const int shift : {-33, -32, -31, -16, -1, 0, 1}) {
    // Record 1 = header + key "a" + value; record 2's header starts at kBuffer + shift.
    const std::size_t first =
        static_cast<std::size_t>(static_cast<long>(kBuffer) + shift) - kFileHeader - kRecordHeader - 1;
    const std::string v1 = random_bytes(first, 12);
    const auto write = [&](const std::string& path, bool streamed) {
      auto db = open_db("minidb", path, DbMode::New);
      auto txn = db->new_transaction();
      txn->put("a", v1);
      if (streamed) {
        txn->begin_put("b", big.size());
        for (std::size_t pos = 0; pos < big.size(); pos += 256 << 10)
          txn->put_part(std::string_view(big).substr(pos, 256 << 10));
        txn->end_put();
      } else {
        txn->put("b", big);
      }
      txn->commit();
      db->close();
    };
    const std::string put_path = dir.str() + "/put" + std::to_string(shift);
    const std::string streamed_path = dir.str() + "/streamed" + std::to_string(shift);
    write(put_path, false);
    write(streamed_path, true);
    EXPECT_TRUE(file_bytes(put_path) == file_bytes(streamed_path)) << "shift " << shift;
    auto db = open_db("minidb", streamed_path, DbMode::Read);
    db->verify();
    auto c = db->new_cursor();
    c->seek("b");
    ASSERT_TRUE(c->valid());
    EXPECT_TRUE(c->value() == big) << "shift " << shift;
  }
}

// A write that fails on the writer thread (the file size limit here) fails a later call of the
// transaction naming the temporary file; nothing is published, and the DB refuses further work.
TEST(MiniDbWriteBehind, AWriteFailingOnTheWriterThreadFailsTheSaveNamingTheFile) {
  moka::testing::TempDir dir("moka-write-behind-test");
  const std::string path = dir.str() + "/db";
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);  // the write fails with EFBIG instead of killing us
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 6 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string msg;
  {
    auto db = open_db("minidb", path, DbMode::New);
    auto txn = db->new_transaction();
    const std::string part = random_bytes(1 << 20, 5);
    msg = error_of([&] {
      txn->begin_put("big", 32u << 20);
      for (int i = 0; i < 32; ++i) txn->put_part(part);
      txn->end_put();
      txn->commit();
    });
    txn.reset();
    auto txn2 = db->new_transaction();
    const std::string again = error_of([&] {
      txn2->put("k", "v");
      txn2->commit();
    });
    EXPECT_NE(again.find("an earlier write failed"), std::string::npos) << again;
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old, nullptr), 0);
  EXPECT_NE(msg.find("write at offset"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path + ".tmp-"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& e : std::filesystem::directory_iterator(dir.str()))
    ADD_FAILURE() << "left behind: " << e.path();  // the temporary file is removed too
}

}  // namespace
}  // namespace moka
