// A checkpoint directory is self-contained and never lies: copied or moved it resumes from its own
// files, retention never deletes outside it, node names cannot escape it, an edited manifest is
// refused, the backend and the job are facts of the checkpoint, runs do not overwrite committed
// checkpoints silently, and damaged LMDB files are named errors (not SIGBUS) with a fall-back.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "moka/core/error.h"
#include "moka/core/workspace.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/job/run_job.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"
#include "unit/durability/run_job_support.h"

namespace moka {
namespace {

namespace fs = std::filesystem;
using namespace run_job_test;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// The message of the exception `f` throws as E (a failure when it throws nothing).
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return {};
}

JobRunResult run_to_end(const JobDef& job, const std::string& dir, JobRunOptions opt = {}) {
  NodeWorkspaces nodes;
  opt.checkpoint_dir = dir;
  return run_job(job, nodes, opt);
}

// Item 3: manifests name their files relative to the directory.
TEST(CheckpointDir, ACopiedDirectoryResumesFromItsOwnFilesAndRetentionStaysInside) {
  TempDir root;
  const std::string a = root / "A", b = root / "B";
  run_to_end(small_job(5), a);
  for (const auto& f : verify_checkpoint(a, 5).files) EXPECT_EQ(f.db.find('/'), std::string::npos) << f.db;
  fs::copy(a, b, fs::copy_options::recursive);
  const auto files_of_a = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(a)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto before = files_of_a();
  // B resumes from epoch 3 with --keep-last 2: it deletes its own old epochs, none of A's.
  NodeWorkspaces nodes;
  const JobRunResult r =
      run_job(small_job(5), nodes, {.checkpoint_dir = b, .resume_from_epoch = 3, .retention = {.keep_last = 2}});
  EXPECT_EQ(r.resumed_from, 3);
  EXPECT_EQ(committed_epochs(b), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(files_of_a(), before);
  // With A gone, B still resumes from its own files.
  fs::remove_all(a);
  NodeWorkspaces again;
  const JobRunResult r2 = run_job(small_job(5), again, {.checkpoint_dir = b, .resume_latest = true});
  EXPECT_EQ(r2.resumed_from, 5);
  EXPECT_EQ(i64(again, "trainer", "count"), 15);
}

TEST(CheckpointDir, ManifestsNamingFilesOutsideTheDirectoryAreRefused) {
  TempDir dir;
  run_to_end(small_job(2), dir.path());
  // A manifest rewritten (with a valid checksum) to point at another directory's file.
  CheckpointManifest m = verify_checkpoint(dir.path(), 2);
  for (const std::string& outside : std::vector<std::string>{"/etc/passwd", "../other/trainer.2", "..", ""}) {
    m.files[0].db = outside;
    write(manifest_path(dir.path(), 2), to_json(m));
    const std::string why = message_of<CorruptData>([&] { verify_checkpoint(dir.path(), 2); });
    EXPECT_NE(why.find("not a file name inside the checkpoint directory"), std::string::npos) << why;
  }
  // Retention keeps such an epoch (its manifest cannot be read) and deletes nothing outside.
  EXPECT_THROW(commit_checkpoint(dir.path(), 9, "minidb", {{"trainer", "/tmp/elsewhere/trainer.9"}}), InvalidInput);
}

// Item 4: node names that would make paths outside the directory.
TEST(CheckpointDir, NodeNamesThatEscapeTheDirectoryAreRefusedBeforeAnythingRuns) {
  TempDir root;
  const std::string dir = root / "ckpt";
  for (const std::string& node : std::vector<std::string>{"../escape", "a/b", "..", ".", "", "nl\nx"}) {
    JobDef job = small_job(2);
    job.nodes_to_checkpoint = {node};
    const std::string why = message_of<InvalidInput>([&] { run_to_end(job, dir); });
    EXPECT_FALSE(why.empty());
    EXPECT_FALSE(fs::exists(root / "escape.0"));
  }
  EXPECT_THROW(check_checkpoint_node_name("../x"), InvalidInput);
  EXPECT_NO_THROW(check_checkpoint_node_name("trainer_0"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "moka-manifest.0.json"));
}

// Item 5: what the definition gets wrong is reported before init_group runs.
TEST(CheckpointDir, AMisspeltNodeToCheckpointOrABadLaterGroupFailsBeforeAnythingRuns) {
  TempDir dir;
  JobDef misspelt = small_job(2);
  misspelt.nodes_to_checkpoint = {"trainer", "raeder"};
  std::string why = message_of<InvalidInput>([&] { run_to_end(misspelt, dir.path()); });
  EXPECT_NE(why.find("raeder"), std::string::npos) << why;
  JobDef bad_exit = small_job(2);
  bad_exit.exit_group.nodes[0].plan.network[0].op[0].type = "NoSuchOperator";
  why = message_of<InvalidInput>([&] { run_to_end(bad_exit, dir.path()); });
  EXPECT_NE(why.find("NoSuchOperator"), std::string::npos) << why;
  JobDef ghost_stop = small_job(2);
  ghost_stop.stop_conditions[0].node = "ghost";
  why = message_of<InvalidInput>([&] { run_to_end(ghost_stop, dir.path()); });
  EXPECT_NE(why.find("ghost"), std::string::npos) << why;
  EXPECT_TRUE(committed_epochs(dir.path()).empty()) << "init_group ran and was checkpointed";
}

// Item 6: the manifest's own checksum.
TEST(CheckpointDir, AnEditedManifestIsNotTrustedAndResumeFallsBack) {
  TempDir dir;
  run_to_end(small_job(3), dir.path());
  const fs::path p = manifest_path(dir.path(), 2);
  std::string text = read(p);
  const auto at = text.find("\"stop\": false");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 13, "\"stop\": true");
  write(p, text);
  const std::string why = message_of<CorruptData>([&] { verify_checkpoint(dir.path(), 2); });
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
  // Resuming epoch 2 exactly is refused; latest still resumes 3.
  EXPECT_THROW(run_to_end(small_job(3), dir.path(), {.resume_from_epoch = 2}), CorruptData);
  EXPECT_EQ(run_to_end(small_job(3), dir.path(), {.resume_latest = true}).resumed_from, 3);
}

// Same class as item 6: a manifest too big to be one, or a FIFO in its place, is damage (read
// within a limit, never waited on) and resume falls back.
TEST(CheckpointDir, AnOversizedManifestOrAFifoInItsPlaceIsRefusedAndResumeFallsBack) {
  TempDir dir;
  run_to_end(small_job(3), dir.path());
  const fs::path newest = manifest_path(dir.path(), 3);
  fs::resize_file(newest, (std::uintmax_t{64} << 20) + 1);  // sparse: nothing is written
  std::string why = message_of<CorruptData>([&] { verify_checkpoint(dir.path(), 3); });
  EXPECT_NE(why.find("larger than the limit"), std::string::npos) << why;
  EXPECT_EQ(run_to_end(small_job(3), dir.path(), {.resume_latest = true}).resumed_from, 2);

  // That run committed epoch 3 again, over the oversized file.
  ASSERT_NO_THROW(verify_checkpoint(dir.path(), 3));
  fs::remove(newest);
  ASSERT_EQ(::mkfifo(newest.c_str(), 0600), 0);
  why = message_of<CorruptData>([&] { verify_checkpoint(dir.path(), 3); });
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  EXPECT_EQ(run_to_end(small_job(3), dir.path(), {.resume_latest = true}).resumed_from, 2);
}

// Item 7: the backend is recorded in the checkpoint and nothing is deleted on a mismatch.
TEST(CheckpointDir, AResumeWithAnotherDbTypeIsRefusedAndLosesNothing) {
  TempDir dir;
  run_to_end(small_job(3), dir.path(), {.db_type = "lmdb"});
  const auto before = committed_epochs(dir.path());
  for (const auto& resume : {std::optional<int64_t>(2), std::optional<int64_t>()}) {
    const std::string why = message_of<InvalidInput>([&] {
      run_to_end(small_job(3), dir.path(),
                 {.db_type = "minidb", .resume_from_epoch = resume, .resume_latest = !resume});
    });
    EXPECT_NE(why.find("'lmdb', not 'minidb'"), std::string::npos) << why;
    EXPECT_EQ(committed_epochs(dir.path()), before);
  }
  // Without a db_type the checkpoint's own is used, and the epochs it saves are lmdb too.
  const JobRunResult r = run_to_end(small_job(3), dir.path(), {.resume_from_epoch = 1});
  EXPECT_EQ(r.resumed_from, 1);
  EXPECT_EQ(verify_checkpoint(dir.path(), 3).db_type, "lmdb");
}

// Item 8: a run from scratch over committed checkpoints, and a resume with another job.
TEST(CheckpointDir, ARunFromScratchOverCommittedCheckpointsIsRefusedUnlessStartingOver) {
  TempDir dir;
  run_to_end(small_job(4), dir.path());
  const std::string why = message_of<InvalidInput>([&] { run_to_end(small_job(2), dir.path()); });
  EXPECT_NE(why.find("newest: epoch 4"), std::string::npos) << why;
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // Starting over discards every old epoch: none of the old run's epochs 3 and 4 is left to resume.
  run_to_end(small_job(2), dir.path(), {.existing = ExistingCheckpoints::discard});
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "trainer.4"));
}

TEST(CheckpointDir, AResumeWithAnotherJobIsRefusedUnlessAccepted) {
  TempDir dir;
  run_to_end(small_job(4), dir.path());
  const JobDef other = small_job(4, /*weights=*/999);
  const std::string why = message_of<InvalidInput>([&] { run_to_end(other, dir.path(), {.resume_latest = true}); });
  EXPECT_NE(why.find("written by another job"), std::string::npos) << why;
  // The same job, parsed again from its own JSON, is the same job.
  EXPECT_EQ(run_to_end(job_from_json(to_json(small_job(4))), dir.path(), {.resume_latest = true}).resumed_from, 4);
  EXPECT_EQ(run_to_end(other, dir.path(), {.resume_from_epoch = 2, .accept_changed_job = true}).resumed_from, 2);
}

// Item 9: nothing verifies.
TEST(CheckpointDir, WhenNoCommittedEpochVerifiesResumeLatestRefusesAndSaysWhy) {
  TempDir dir;
  run_to_end(small_job(2), dir.path());
  for (int64_t e = 0; e <= 2; ++e) fs::resize_file(fs::path(dir.path()) / fmt::format("trainer.{}", e), 10);
  const std::string why =
      message_of<InvalidInput>([&] { run_to_end(small_job(2), dir.path(), {.resume_latest = true}); });
  EXPECT_NE(why.find("3 committed epoch(s) and none of them verifies"), std::string::npos) << why;
  EXPECT_NE(why.find("epoch 0:"), std::string::npos) << why;
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2}));
  const JobRunResult r =
      run_to_end(small_job(2), dir.path(), {.resume_latest = true, .existing = ExistingCheckpoints::discard});
  EXPECT_FALSE(r.resumed_from.has_value());
  verify_checkpoint(dir.path(), 2);
}

TEST(CheckpointDir, ManifestsWithoutFilesOrWithoutACheckpointedNodeAreSkipped) {
  TempDir dir;
  run_to_end(small_job(3), dir.path());
  CheckpointManifest m = verify_checkpoint(dir.path(), 3);
  m.files.pop_back();  // no "reader"
  write(manifest_path(dir.path(), 3), to_json(m));
  CheckpointManifest empty = verify_checkpoint(dir.path(), 2);
  empty.files.clear();
  write(manifest_path(dir.path(), 2), to_json(empty));
  std::vector<std::pair<int64_t, std::string>> skipped;
  JobRunOptions opt{.resume_latest = true};
  opt.on_resume = [&](const ResumeChoice& c) { skipped = c.skipped; };
  EXPECT_EQ(run_to_end(small_job(3), dir.path(), opt).resumed_from, 1);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].second.find("no file for node 'reader'"), std::string::npos) << skipped[0].second;
  EXPECT_NE(skipped[1].second.find("\"files\" is empty"), std::string::npos) << skipped[1].second;
}

// Item 1: LMDB maps its file; a truncated one must be an error, never SIGBUS.
TEST(CheckpointDir, ATruncatedLmdbCheckpointIsANamedErrorAndResumeFallsBack) {
  TempDir dir;
  run_to_end(small_job(3, /*weights=*/200000), dir.path(), {.db_type = "lmdb"});
  const fs::path data = fs::path(dir.path()) / "trainer.3" / "data.mdb";
  ASSERT_GT(fs::file_size(data), 16384u);
  fs::resize_file(data, 16384);
  const std::string why =
      message_of<CorruptData>([&] { digest_db("lmdb", (fs::path(dir.path()) / "trainer.3").string()); });
  EXPECT_NE(why.find("is truncated"), std::string::npos) << why;
  EXPECT_THROW(run_to_end(small_job(3, 200000), dir.path(), {.resume_from_epoch = 3}), CorruptData);
  // A plan's Load of that DB: the same named error.
  Workspace ws;
  LoadSpec spec;
  spec.dbs = {(fs::path(dir.path()) / "trainer.3").string()};
  spec.db_type = "lmdb";
  spec.absolute_path = true;
  spec.load_all = true;
  EXPECT_THROW(load_blobs(ws, spec), CorruptData);
  EXPECT_EQ(run_to_end(small_job(3, 200000), dir.path(), {.resume_latest = true}).resumed_from, 2);
}

// Item 10: a finished checkpoint on a read-only mount can be resumed (it runs no epoch) and read.
TEST(CheckpointDir, AFinishedReadOnlyDirectoryCanBeResumed) {
  TempDir root;
  const std::string dir = root / "ckpt", ro = root / "ro";
  run_to_end(small_job(3), dir);
  fs::create_directory(ro);
  if (::geteuid() != 0 || ::mount(dir.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr) != 0)
    GTEST_SKIP() << "needs root to bind-mount a read-only view";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{ro};
  ASSERT_EQ(::mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0);
  NodeWorkspaces nodes;
  const JobRunResult r = run_job(small_job(3), nodes, {.checkpoint_dir = ro, .resume_latest = true});
  EXPECT_EQ(r.resumed_from, 3);
  EXPECT_EQ(i64(nodes, "trainer", "count"), 9);
  verify_checkpoint(ro, 3);
  // An epoch the job goes on from would save: refused before anything runs.
  const std::string why = message_of<InvalidInput>([&] { run_to_end(small_job(3), ro, {.resume_from_epoch = 1}); });
  EXPECT_NE(why.find("is read-only"), std::string::npos) << why;
  EXPECT_EQ(committed_epochs(ro), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace moka
