// Tests of committed checkpoints: manifests, verification, resume choice and retention, on every DB backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/storage/db.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka-manifest-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-manifest") {}
};

void write_db(const std::string& type, const std::string& path, int64_t value) {
  auto db = open_db(type, path, DbMode::New);
  auto txn = db->new_transaction();
  txn->put("a", fmt::format("value-{}", value));
  txn->put("b", std::string(1000, static_cast<char>('a' + value % 26)));
  txn->commit();
  db->close();
}

std::string node_db(const TempDir& dir, const std::string& node, int64_t epoch) {
  return fmt::format("{}/{}.{}", dir.path(), node, epoch);
}

// Writes and commits epochs [0, n) for two nodes.
void commit_epochs(const TempDir& dir, const std::string& type, int64_t n) {
  for (int64_t e = 0; e < n; ++e) {
    write_db(type, node_db(dir, "trainer_0", e), e);
    write_db(type, node_db(dir, "reader", e), e + 100);
    commit_checkpoint(dir.path(), e, type,
                      {{"trainer_0", node_db(dir, "trainer_0", e)}, {"reader", node_db(dir, "reader", e)}});
  }
}

void flip_byte(const std::string& path, std::streamoff offset_from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-offset_from_end, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  f.seekp(-offset_from_end, std::ios::end);
  c = static_cast<char>(c ^ 0x40);
  f.write(&c, 1);
}

class ManifestBackends : public ::testing::TestWithParam<std::string> {};

TEST(UncommitCheckpoint, RemovesTheManifestAndFailsNamingOneItCannotRemove) {
  TempDir dir;
  commit_epochs(dir, "minidb", 2);
  uncommit_checkpoint(dir.path(), 1);
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0}));
  uncommit_checkpoint(dir.path(), 7);  // nothing committed there: nothing to do
  // A manifest path that unlink() cannot remove (a non-empty directory stands there).
  fs::create_directories(manifest_path(dir.path(), 5) + "/x");
  try {
    uncommit_checkpoint(dir.path(), 5);
    FAIL() << "an unremovable manifest was reported as uncommitted";
  } catch (const RuntimeError& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot uncommit checkpoint epoch 5: removing " + manifest_path(dir.path(), 5)),
        std::string::npos)
        << e.what();
  }
}

TEST_P(ManifestBackends, CommittedEpochsVerifyAndDigestIsBackendIndependent) {
  TempDir dir;
  commit_epochs(dir, GetParam(), 3);
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2}));
  const auto m = verify_checkpoint(dir.path(), 2);
  EXPECT_EQ(m.epoch, 2);
  EXPECT_EQ(m.db_type, GetParam());
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[0].node, "trainer_0");
  EXPECT_EQ(m.files[0].digest.records, 2u);
  EXPECT_EQ(m.files[0].digest.bytes, 2u + 7u + 1000u);

  TempDir other;
  write_db("minidb", other.path() + "/x", 2);
  EXPECT_EQ(digest_db("minidb", other.path() + "/x"), m.files[0].digest);

  const auto choice = find_resume_epoch(dir.path());
  ASSERT_TRUE(choice.epoch.has_value());
  EXPECT_EQ(*choice.epoch, 2);
  EXPECT_TRUE(choice.skipped.empty());
}

TEST_P(ManifestBackends, ReplacedNodeDbFailsVerificationAndResumeFallsBack) {
  TempDir dir;
  commit_epochs(dir, GetParam(), 3);
  // A different but valid DB where epoch 2's reader file was: digest mismatch.
  write_db(GetParam(), node_db(dir, "reader", 2), 7);
  EXPECT_THROW(verify_checkpoint(dir.path(), 2), CorruptData);
  const auto choice = find_resume_epoch(dir.path());
  ASSERT_TRUE(choice.epoch.has_value());
  EXPECT_EQ(*choice.epoch, 1);
  ASSERT_EQ(choice.skipped.size(), 1u);
  EXPECT_EQ(choice.skipped[0].first, 2);
  EXPECT_NE(choice.skipped[0].second.find("reader.2"), std::string::npos) << choice.skipped[0].second;
  EXPECT_NE(choice.skipped[0].second.find("does not match"), std::string::npos) << choice.skipped[0].second;
}

TEST_P(ManifestBackends, MissingNodeDbIsSkipped) {
  TempDir dir;
  commit_epochs(dir, GetParam(), 2);
  fs::remove_all(node_db(dir, "trainer_0", 1));
  const auto choice = find_resume_epoch(dir.path());
  ASSERT_TRUE(choice.epoch.has_value());
  EXPECT_EQ(*choice.epoch, 0);
  ASSERT_EQ(choice.skipped.size(), 1u);
  EXPECT_NE(choice.skipped[0].second.find("trainer_0.1"), std::string::npos) << choice.skipped[0].second;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, ManifestBackends, ::testing::Values("minidb", "leveldb", "lmdb"));

TEST(CheckpointManifest, BitFlipAndTruncationInMinidbNameTheFile) {
  TempDir dir;
  commit_epochs(dir, "minidb", 3);
  flip_byte(node_db(dir, "trainer_0", 2), 10);
  fs::resize_file(node_db(dir, "reader", 1), fs::file_size(node_db(dir, "reader", 1)) - 3);
  const auto choice = find_resume_epoch(dir.path());
  ASSERT_TRUE(choice.epoch.has_value());
  EXPECT_EQ(*choice.epoch, 0);
  ASSERT_EQ(choice.skipped.size(), 2u);
  EXPECT_EQ(choice.skipped[0].first, 2);
  EXPECT_NE(choice.skipped[0].second.find("trainer_0.2"), std::string::npos) << choice.skipped[0].second;
  EXPECT_EQ(choice.skipped[1].first, 1);
  EXPECT_NE(choice.skipped[1].second.find("reader.1"), std::string::npos) << choice.skipped[1].second;
}

TEST(CheckpointManifest, UncommittedEpochsDoNotExist) {
  TempDir dir;
  commit_epochs(dir, "minidb", 2);
  write_db("minidb", node_db(dir, "trainer_0", 2), 2);                      // saved, crash before the manifest
  std::ofstream(dir.path() + "/moka-manifest.3.json.tmp-0000abcd") << "{";  // torn temporary manifest
  std::ofstream(dir.path() + "/moka-manifest.007.json") << "{}";            // not a canonical name
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*find_resume_epoch(dir.path()).epoch, 1);
  EXPECT_THROW(verify_checkpoint(dir.path(), 2), NotFound);
  EXPECT_TRUE(committed_epochs(dir.path() + "/missing").empty());
  EXPECT_FALSE(find_resume_epoch(dir.path() + "/missing").epoch.has_value());
}

TEST(CheckpointManifest, CorruptManifestIsSkippedWithItsName) {
  TempDir dir;
  commit_epochs(dir, "minidb", 2);
  std::ofstream(manifest_path(dir.path(), 1), std::ios::trunc) << "{\"format\": \"moka-checkpoint-manifest\"";
  const auto choice = find_resume_epoch(dir.path());
  EXPECT_EQ(*choice.epoch, 0);
  ASSERT_EQ(choice.skipped.size(), 1u);
  EXPECT_NE(choice.skipped[0].second.find("moka-manifest.1.json"), std::string::npos) << choice.skipped[0].second;
}

TEST(CheckpointManifest, JsonRoundTripAndInvalidManifests) {
  CheckpointManifest m{.epoch = 5,
                       .db_type = "lmdb",
                       .files = {{.node = "n", .db = "n.5", .digest = {3, 40, 0xfedcba9876543210ull}}},
                       .stop = true,
                       .job = "xxh3:0123456789abcdef"};
  const std::string good = to_json(m);
  EXPECT_EQ(manifest_from_json(good, "m"), m);
  // Each change of the good text, checksum kept: a change of any value is refused.
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  const std::vector<std::string> bad = {
      "",
      "[]",
      R"({"format":"other","version":2,"epoch":1,"db_type":"minidb","files":[]})",
      R"({"format":"moka-checkpoint-manifest","version":1,"epoch":1,"db_type":"minidb","files":[]})",
      R"({"format":"moka-checkpoint-manifest","version":2,"epoch":1,"db_type":"minidb","files":[]})",
      edited("\"stop\": true", "\"stop\": false"),
      edited("\"epoch\": 5", "\"epoch\": 6"),
      edited("\"records\": 3", "\"records\": 4"),
      edited("\"db\": \"n.5\"", "\"db\": \"/x/n.5\""),
      edited("\"checksum\"", "\"no_checksum\""),
  };
  for (const auto& text : bad) {
    try {
      manifest_from_json(text, "where.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const CorruptData& e) {
      EXPECT_NE(std::string(e.what()).find("where.json"), std::string::npos) << e.what();
    }
  }
  // A manifest naming a file outside its directory, an empty file list, a node twice: refused even
  // with a checksum that matches (as a buggy or hostile writer would make it).
  for (auto files : std::vector<std::vector<CheckpointFile>>{
           {{.node = "n", .db = "../n.5", .digest = {}}},
           {{.node = "n", .db = "/abs/n.5", .digest = {}}},
           {},
           {{.node = "n", .db = "n.5", .digest = {}}, {.node = "n", .db = "m.5", .digest = {}}}}) {
    CheckpointManifest b = m;
    b.files = files;
    EXPECT_THROW(manifest_from_json(to_json(b), "b"), CorruptData);
  }
}

TEST(CheckpointManifest, CommitRejectsBadInput) {
  TempDir dir;
  write_db("minidb", node_db(dir, "a", 0), 0);
  EXPECT_THROW(commit_checkpoint(dir.path(), -1, "minidb", {{"a", node_db(dir, "a", 0)}}), InvalidInput);
  EXPECT_THROW(commit_checkpoint(dir.path(), 0, "minidb", {}), InvalidInput);
  EXPECT_THROW(commit_checkpoint(dir.path(), 0, "minidb", {{"a", node_db(dir, "a", 0)}, {"a", node_db(dir, "a", 0)}}),
               InvalidInput);
  try {
    commit_checkpoint(dir.path(), 0, "minidb", {{"a", node_db(dir, "a", 0)}, {"b", node_db(dir, "b", 0)}});
    ADD_FAILURE() << "committed an epoch with a missing DB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b.0"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(committed_epochs(dir.path()).empty());
}

TEST(CheckpointManifest, RetentionKeepsLastNAndEveryKthAndNeverTheNewest) {
  TempDir dir;
  commit_epochs(dir, "minidb", 8);
  EXPECT_TRUE(apply_retention(dir.path(), {.keep_last = 0}).empty());
  EXPECT_EQ(apply_retention(dir.path(), {.keep_last = 2, .keep_every = 3}), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 3, 6, 7}));
  EXPECT_FALSE(fs::exists(node_db(dir, "trainer_0", 4)));
  EXPECT_FALSE(fs::exists(node_db(dir, "reader", 5)));
  EXPECT_TRUE(fs::exists(node_db(dir, "reader", 6)));
  EXPECT_EQ(apply_retention(dir.path(), {.keep_last = 1}), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{7}));
  verify_checkpoint(dir.path(), 7);
  EXPECT_THROW(apply_retention(dir.path(), {.keep_last = -1}), InvalidInput);
}

TEST(CheckpointManifest, RetentionLeavesUnreadableManifests) {
  TempDir dir;
  commit_epochs(dir, "minidb", 3);
  std::ofstream(manifest_path(dir.path(), 0), std::ios::trunc) << "garbage";
  EXPECT_EQ(apply_retention(dir.path(), {.keep_last = 1}), (std::vector<int64_t>{1}));
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 2}));
}

TEST(CheckpointManifest, AtomicWriteReplacesAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.path() + "/f";
  write_file_atomically(path, "one");
  write_file_atomically(path, "two!");
  std::ifstream in(path);
  std::string s;
  in >> s;
  EXPECT_EQ(s, "two!");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(write_file_atomically(dir.path() + "/no/such/dir/f", "x"), RuntimeError);
}

}  // namespace
}  // namespace moka
