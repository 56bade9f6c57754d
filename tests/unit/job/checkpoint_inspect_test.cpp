// Unit tests of moka/job/checkpoint_inspect.h beyond what the CLI tests drive: which names in a checkpoint
// directory are epochs, retention marks against retention_drops, and a blob whose record is damaged while
// its DB still opens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

TEST(CheckpointInspect, OnlyNodeDbNamesWithoutAManifestAreUncommittedEpochs) {
  moka::testing::TempDir dir("moka_inspect");
  for (const char* name : {"shard.v2.7", "reader.7", "moka.lock", "trainer.snapshot.7", "trainer.7.tmp-0011aabb",
                           "notes.txt", "trainer.07", "trainer.-1", ".7"})
    touch(dir.fs_path() / name);
  const auto epochs = list_checkpoint_dir(dir.str());
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].epoch, 7);
  EXPECT_FALSE(epochs[0].committed);
  EXPECT_EQ(epochs[0].nodes, (std::vector<std::string>{"reader", "shard.v2"}));
  EXPECT_EQ(epochs[0].bytes, 2u);
  EXPECT_FALSE(epochs[0].usable());
}

TEST(CheckpointInspect, RetentionMarksWhatApplyRetentionDeletes) {
  EXPECT_EQ(retention_drops({0, 1, 2, 3, 4, 5}, {.keep_last = 2, .keep_every = 3}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(retention_drops({0, 1, 2}, {}), std::vector<int64_t>{});
  EXPECT_EQ(retention_drops({4}, {.keep_last = 1}), std::vector<int64_t>{});
  EXPECT_THROW(retention_drops({1}, {.keep_last = -1}), InvalidInput);
}

TEST(CheckpointInspect, ADamagedRecordInAnLmdbIsNamedWithItsBlob) {
  // LMDB has no checksums of its own: the DB opens and walks, and the record's checksum names the blob.
  moka::testing::TempDir dir("moka_inspect");
  const std::string path = (dir.fs_path() / "n.1").string();
  Workspace ws;
  ws.create_blob("a")->reset(std::make_unique<Tensor>(Tensor::vector<int64_t>({1, 2, 3})));
  ws.create_blob("b")->reset(std::make_unique<Tensor>(Tensor::vector<float>({0.5f})));
  SaveSpec spec;
  spec.blob_names = {"a", "b"};
  spec.db = path;
  spec.db_type = "lmdb";
  spec.absolute_path = true;
  save_blobs(ws, spec);
  auto good = inspect_checkpoint_db("lmdb", path);
  ASSERT_EQ(good.size(), 2u);
  EXPECT_EQ(good[0].name, "a");
  EXPECT_EQ(good[0].dtype, "int64");
  EXPECT_EQ(good[0].shape, (std::vector<int64_t>{3}));
  EXPECT_TRUE(good[0].problem.empty()) << good[0].problem;
  // Flip the last byte of a's value: find the int64 payload 3 (little-endian) in data.mdb.
  const fs::path data = fs::path(path) / "data.mdb";
  std::string bytes((std::istreambuf_iterator<char>(std::ifstream(data, std::ios::binary).rdbuf())), {});
  const std::string three("\x03\x00\x00\x00\x00\x00\x00\x00", 8);
  const std::size_t at = bytes.find(std::string("\x01\x00\x00\x00\x00\x00\x00\x00", 8) +
                                    std::string("\x02\x00\x00\x00\x00\x00\x00\x00", 8) + three);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 16] = '\x07';
  std::ofstream(data, std::ios::binary | std::ios::trunc) << bytes;
  const auto bad = inspect_checkpoint_db("lmdb", path);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_NE(bad[0].problem.find("checksum"), std::string::npos) << bad[0].problem;
  EXPECT_NE(bad[0].xxh3, good[0].xxh3);
  EXPECT_TRUE(bad[1].problem.empty()) << bad[1].problem;
  EXPECT_EQ(bad[1].xxh3, good[1].xxh3);
}

}  // namespace
}  // namespace moka
