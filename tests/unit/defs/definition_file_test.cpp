// Unit tests for read_definition_file: whole small files, the size limit for regular files and for
// streams without a size (/dev/zero, a FIFO: reading stops at the limit), directories and missing files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include "moka/core/error.h"
#include "moka/defs/definition_file.h"
#include "moka/defs/json.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

std::string message_of_read(const std::string& path, std::size_t limit = kMaxDefinitionFileBytes) {
  try {
    (void)read_definition_file(path, "plan", limit);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidInput for " << path;
  return {};
}

TEST(DefinitionFile, ReadsAWholeFile) {
  testing::TempDir dir;
  const std::string text = std::string(200000, 'x') + "end";
  std::ofstream(dir / "plan.json") << text;
  EXPECT_EQ(read_definition_file(dir / "plan.json", "plan"), text);
  std::ofstream(dir / "empty.json");
  EXPECT_EQ(read_definition_file(dir / "empty.json", "plan"), "");
}

TEST(DefinitionFile, TheLimitIs64MiB) { EXPECT_EQ(kMaxDefinitionFileBytes, std::size_t{64} << 20); }

TEST(DefinitionFile, ARegularFileOverTheLimitIsRefusedByItsSize) {
  testing::TempDir dir;
  const std::string path = dir / "big.json";
  // A sparse file one byte over the real limit: refused before anything is read.
  std::ofstream(path).close();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kMaxDefinitionFileBytes + 1)), 0);
  EXPECT_EQ(message_of_read(path),
            path + ": plan file is 67108865 bytes, larger than the limit of 64 MiB (67108864 bytes)");
  std::ofstream(dir / "small.json") << "12345";
  EXPECT_EQ(message_of_read(dir / "small.json", 4),
            dir / "small.json" + ": plan file is 5 bytes, larger than the limit of 4 bytes");
  EXPECT_EQ(read_definition_file(dir / "small.json", "plan", 5), "12345");
}

TEST(DefinitionFile, AStreamStopsAtTheLimit) {
  // /dev/zero never ends: reading stops one chunk past the limit.
  const std::string msg = message_of_read("/dev/zero", 1 << 20);
  EXPECT_EQ(msg, "/dev/zero: plan file is larger than the limit of 1 MiB (1048576 bytes); reading stopped there");
}

TEST(DefinitionFile, AFifoIsReadUpToTheLimit) {
  testing::TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A writer that would write 8 MiB; the reader gives up after 1 MiB and closes, which ends the writer.
  std::signal(SIGPIPE, SIG_IGN);  // the writer's write after the reader closed fails with EPIPE instead
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    const std::string chunk(65536, ' ');
    for (int i = 0; i < 128; ++i)
      if (::write(fd, chunk.data(), chunk.size()) < 0) break;  // EPIPE once the reader is gone
    ::close(fd);
  });
  const std::string msg = message_of_read(fifo, 1 << 20);
  writer.join();
  EXPECT_NE(msg.find("larger than the limit of 1 MiB"), std::string::npos) << msg;
}

TEST(DefinitionFile, ADirectoryIsNamedAsSuch) {
  testing::TempDir dir;
  EXPECT_EQ(message_of_read(dir.path()), dir.path() + ": is a directory, not a plan file");
}

TEST(DefinitionFile, AMissingFileSaysItCannotBeOpened) {
  EXPECT_EQ(message_of_read("/no/such/plan.json"),
            "/no/such/plan.json: cannot open plan file: No such file or directory");
}

TEST(DefinitionFile, LoadersGoThroughTheLimit) {
  EXPECT_THROW(load_plan_file("/dev/zero"), InvalidInput);
  try {
    (void)load_job_file("/no/such/job.json");
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open job file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moka
