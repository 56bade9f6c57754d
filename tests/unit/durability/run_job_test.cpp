// Tests of run_job: JobRunner's flow over a JobDef, committed checkpoints, resume, corruption fallback,
// retention, background save, save failures and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/defs/json.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/job/run_job.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/save_load.h"
#include "support/temp_dir.h"
#include "unit/durability/run_job_support.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

using namespace run_job_test;

TEST(RunJob, RunsTheEpochLoopLikeJobRunnerAndCommitsEveryEpoch) {
  TempDir dir;
  NodeWorkspaces nodes;
  std::vector<int64_t> reported;
  JobRunOptions opt{.checkpoint_dir = dir.path()};
  opt.on_epoch = [&](const EpochReport& r) {
    reported.push_back(r.epoch);
    EXPECT_TRUE(r.checkpointed);
    EXPECT_GT(r.checkpoint_bytes, 4000u);
  };
  const JobRunResult r = run_job(small_job(5), nodes, opt);
  EXPECT_EQ(r.last_epoch, 5);
  EXPECT_FALSE(r.resumed_from.has_value());
  EXPECT_EQ(reported, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(i64(nodes, "trainer", "count"), 15);
  EXPECT_EQ(i64(nodes, "trainer", "total"), 14 * 15 / 2);
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  for (int64_t e = 0; e <= 5; ++e) {
    const auto m = verify_checkpoint(dir.path(), e);
    ASSERT_EQ(m.files.size(), 2u);
    EXPECT_EQ(m.files[0].node, "trainer");
    EXPECT_EQ(m.files[1].node, "reader");
    EXPECT_EQ(m.stop, e == 5);
  }
}

TEST(RunJob, WithoutCheckpointDirItOnlyRuns) {
  NodeWorkspaces nodes;
  const JobRunResult r = run_job(small_job(3), nodes, {});
  EXPECT_EQ(r.last_epoch, 3);
  EXPECT_EQ(i64(nodes, "trainer", "count"), 9);
}

// Simulates a crash after `epoch` was committed: later manifests (and their files) disappear.
void forget_after(const std::string& dir, int64_t epoch) {
  for (int64_t e : committed_epochs(dir)) {
    if (e > epoch) fs::remove(manifest_path(dir, e));
  }
}

TEST(RunJob, ResumeFromEveryEpochEndsWithTheSameBlobs) {
  for (const bool background : {false, true}) {
    TempDir ref_dir;
    NodeWorkspaces ref;
    run_job(small_job(5), ref, {.checkpoint_dir = ref_dir.path(), .background_save = background});
    const auto expected = all_blobs(ref);
    for (int64_t k = 0; k <= 5; ++k) {
      SCOPED_TRACE(fmt::format("resume from {} (background {})", k, background));
      TempDir dir;
      NodeWorkspaces first;
      run_job(small_job(5), first, {.checkpoint_dir = dir.path(), .background_save = background});
      forget_after(dir.path(), k);
      NodeWorkspaces resumed;
      const JobRunResult r = run_job(
          small_job(5), resumed, {.checkpoint_dir = dir.path(), .resume_latest = true, .background_save = background});
      ASSERT_EQ(r.resumed_from, std::optional<int64_t>(k));
      EXPECT_EQ(r.last_epoch, 5);  // decision 13: resuming the final epoch runs no extra epoch
      EXPECT_TRUE(all_blobs(resumed) == expected);
      EXPECT_TRUE(digests(dir.path(), 5) == digests(ref_dir.path(), 5));
    }
  }
}

// Checkpoints written before run_job named each node's list `<node>/blob_names` call it `blob_names`: they resume.
TEST(RunJob, ACheckpointWithTheOldBlobListNameResumes) {
  TempDir ref_dir;
  NodeWorkspaces ref;
  run_job(small_job(4), ref, {.checkpoint_dir = ref_dir.path()});
  TempDir dir;
  NodeWorkspaces first;
  run_job(small_job(4), first, {.checkpoint_dir = dir.path()});
  forget_after(dir.path(), 2);
  // Rewrite epoch 2 as the old run_job wrote it, and commit it again (same job digest).
  const CheckpointManifest old = verify_checkpoint(dir.path(), 2);
  std::vector<std::pair<std::string, std::string>> node_dbs;
  for (const CheckpointFile& file : old.files) {
    const std::string path = checkpoint_db_path(dir.path(), file);
    Workspace ws;
    LoadSpec load;
    load.dbs = {path};
    load.db_type = old.db_type;
    load.absolute_path = true;
    load.load_all = true;
    load_blobs(ws, load);
    const std::string list_name = file.node + "/blob_names";
    ws.rename_blob(list_name, "blob_names");
    Tensor& list = ws.blob("blob_names").get_mutable<Tensor>();
    const auto listed = list.values<std::string>();
    std::vector<std::string> names(listed.begin(), listed.end());
    std::replace(names.begin(), names.end(), list_name, std::string("blob_names"));
    std::copy(names.begin(), names.end(), list.mutable_data<std::string>());
    SaveSpec save;
    save.blob_names = names;
    save.db = path;
    save.db_type = old.db_type;
    save.absolute_path = true;
    save_blobs(ws, save);
    node_dbs.emplace_back(file.node, path);
  }
  commit_checkpoint(dir.path(), 2, old.db_type, node_dbs, old.stop, old.job);
  NodeWorkspaces resumed;
  const JobRunResult r = run_job(small_job(4), resumed, {.checkpoint_dir = dir.path(), .resume_latest = true});
  ASSERT_EQ(r.resumed_from, std::optional<int64_t>(2));
  EXPECT_EQ(r.last_epoch, 4);
  // Every blob the old list names ends as in the run that never stopped.
  for (const auto& node : {"trainer", "reader"}) {
    Workspace& ws = resumed.node(node);
    for (const auto& name : ws.blob("blob_names").get<Tensor>().values<std::string>()) {
      if (name == "blob_names") continue;
      EXPECT_EQ(serialize_blob_to_string(name, ws.blob(name)),
                serialize_blob_to_string(name, ref.node(node).blob(name)))
          << node << "/" << name;
    }
  }
  EXPECT_EQ(i64(resumed, "trainer", "count"), i64(ref, "trainer", "count"));
}

TEST(RunJob, ExplicitResumeEpochMustBeCommitted) {
  TempDir dir;
  NodeWorkspaces a;
  run_job(small_job(4), a, {.checkpoint_dir = dir.path()});
  NodeWorkspaces b;
  const JobRunResult r = run_job(small_job(4), b, {.checkpoint_dir = dir.path(), .resume_from_epoch = 2});
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(2));
  EXPECT_EQ(i64(b, "trainer", "count"), 12);
  NodeWorkspaces c;
  EXPECT_THROW(run_job(small_job(4), c, {.checkpoint_dir = dir.path(), .resume_from_epoch = 9}), NotFound);
  NodeWorkspaces d;
  EXPECT_THROW(run_job(small_job(4), d, {.checkpoint_dir = dir.path(), .resume_from_epoch = -1}), InvalidInput);
}

TEST(RunJob, ResumeLatestWithNothingCommittedStartsFromScratch) {
  TempDir dir;
  NodeWorkspaces nodes;
  const JobRunResult r = run_job(small_job(2), nodes, {.checkpoint_dir = dir.path() + "/new", .resume_latest = true});
  EXPECT_FALSE(r.resumed_from.has_value());
  EXPECT_EQ(r.last_epoch, 2);
}

// Runs small_job(5) on `db_type`, uncommits the epochs after 3, lets `damage` spoil epoch 3's
// trainer DB, and checks that resume from latest skips epoch 3 (naming its file), resumes from 2,
// ends with the blobs of an undamaged run and rewrites epoch 3.
void expect_resume_falls_back_from_damaged_epoch_3(const std::string& db_type,
                                                   const std::function<void(const std::string& trainer_3)>& damage) {
  TempDir dir;
  NodeWorkspaces ref;
  run_job(small_job(5), ref, {.checkpoint_dir = dir.path(), .db_type = db_type});
  const auto expected = all_blobs(ref);
  forget_after(dir.path(), 3);
  damage(dir.path() + "/trainer.3");
  NodeWorkspaces resumed;
  const JobRunResult r =
      run_job(small_job(5), resumed, {.checkpoint_dir = dir.path(), .db_type = db_type, .resume_latest = true});
  EXPECT_EQ(r.resumed_from, std::optional<int64_t>(2));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].first, 3);
  EXPECT_NE(r.skipped[0].second.find("trainer.3"), std::string::npos) << r.skipped[0].second;
  EXPECT_TRUE(all_blobs(resumed) == expected);
  verify_checkpoint(dir.path(), 3);  // rewritten by the resumed run
}

TEST(RunJob, CorruptNewestCheckpointFallsBackToThePreviousOne) {
  expect_resume_falls_back_from_damaged_epoch_3("minidb", [](const std::string& path) {
    // flip a byte in the middle of the file
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put('\x7f');
  });
}

// LMDB has no checksums of its own: a flipped bit inside the weights' value in data.mdb is caught
// by the manifest's content digest.
TEST(RunJob, CorruptLmdbCheckpointFallsBackToThePreviousOne) {
  expect_resume_falls_back_from_damaged_epoch_3("lmdb", [](const std::string& path) {
    // The weights are 1000 equal floats: flip a byte in the middle of the first such run.
    const std::string data = path + "/data.mdb";
    std::string bytes;
    {
      std::ifstream in(data, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::size_t run_at = std::string::npos;
    for (std::size_t i = 0; i + 4 * 64 <= bytes.size() && run_at == std::string::npos; ++i) {
      const std::string word = bytes.substr(i, 4);
      if (word == std::string(4, '\0')) continue;
      bool run = true;
      for (std::size_t k = 1; k < 64 && run; ++k) run = bytes.compare(i + 4 * k, 4, word) == 0;
      if (run) run_at = i;
    }
    ASSERT_NE(run_at, std::string::npos) << "the weights' bytes are not in " << data;
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(run_at + 4 * 32 + 1));
    f.put(static_cast<char>(bytes[run_at + 4 * 32 + 1] ^ 0x04));
  });
}

TEST(RunJob, ASecondRunOnTheSameCheckpointDirectoryIsRefusedWhileTheFirstRuns) {
  TempDir dir;
  NodeWorkspaces first;
  JobRunOptions opt{.checkpoint_dir = dir.path()};
  bool tried = false;
  opt.on_epoch = [&](const EpochReport& r) {
    if (r.epoch != 1) return;
    tried = true;
    NodeWorkspaces second;
    try {
      run_job(small_job(3), second, {.checkpoint_dir = dir.path(), .resume_latest = true});
      ADD_FAILURE() << "two runs held one checkpoint directory";
    } catch (const RuntimeError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(fmt::format("checkpoint directory '{}' is in use by another job run (process {} holds",
                                      dir.path(), ::getpid())),
                std::string::npos)
          << what;
    }
  };
  const JobRunResult r = run_job(small_job(3), first, opt);
  EXPECT_TRUE(tried);
  EXPECT_EQ(r.last_epoch, 3);
  // The first run is over, so its lock is gone.
  NodeWorkspaces third;
  EXPECT_EQ(run_job(small_job(3), third, {.checkpoint_dir = dir.path(), .resume_latest = true}).resumed_from,
            std::optional<int64_t>(3));
}

TEST(RunJob, TemporaryFilesOfKilledWritersAreRemovedAtTheStart) {
  TempDir dir;
  // What a writer killed mid-save leaves: a minidb file and a manifest under temporary names.
  std::ofstream(dir.path() + "/trainer.3.tmp-12345") << "partial";
  std::ofstream(dir.path() + "/moka-manifest.3.json.tmp-0badc0de") << "{";
  std::ofstream(dir.path() + "/notes.txt") << "kept";
  fs::create_directories(dir.path() + "/leveldb.tmp-1");  // only regular files are removed
  NodeWorkspaces nodes;
  JobRunResult r = run_job(small_job(2), nodes, {.checkpoint_dir = dir.path()});
  std::sort(r.removed_temporaries.begin(), r.removed_temporaries.end());
  EXPECT_EQ(r.removed_temporaries,
            (std::vector<std::string>{"moka-manifest.3.json.tmp-0badc0de", "trainer.3.tmp-12345"}));
  EXPECT_FALSE(fs::exists(dir.path() + "/trainer.3.tmp-12345"));
  EXPECT_FALSE(fs::exists(dir.path() + "/moka-manifest.3.json.tmp-0badc0de"));
  EXPECT_TRUE(fs::exists(dir.path() + "/notes.txt"));
  EXPECT_TRUE(fs::is_directory(dir.path() + "/leveldb.tmp-1"));
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2}));
}

TEST(RunJob, ACheckpointDirectoryThatCannotBeCreatedIsNamed) {
  TempDir dir;
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  NodeWorkspaces nodes;
  try {
    run_job(small_job(2), nodes, {.checkpoint_dir = file + "/ckpt/deeper"});
    FAIL() << "a checkpoint directory under a regular file";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt::format(
                  "cannot create checkpoint directory '{}/ckpt/deeper': {} exists and is not a directory", file, file)),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(nodes.find("trainer"), nullptr) << "the job ran before its checkpoint directory was usable";
}

TEST(RunJob, TruncatedCheckpointFailsExplicitResumeNamingTheFile) {
  TempDir dir;
  NodeWorkspaces a;
  run_job(small_job(3), a, {.checkpoint_dir = dir.path()});
  fs::resize_file(dir.path() + "/reader.2", fs::file_size(dir.path() + "/reader.2") - 5);
  NodeWorkspaces b;
  try {
    run_job(small_job(3), b, {.checkpoint_dir = dir.path(), .resume_from_epoch = 2});
    FAIL() << "resumed from a truncated checkpoint";
  } catch (const CorruptData& e) {
    EXPECT_NE(std::string(e.what()).find("reader.2"), std::string::npos) << e.what();
  }
}

TEST(RunJob, RetentionKeepsTheNewestCheckpoints) {
  TempDir dir;
  NodeWorkspaces nodes;
  const JobRunResult r =
      run_job(small_job(6), nodes, {.checkpoint_dir = dir.path(), .retention = {.keep_last = 2, .keep_every = 4}});
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 4, 5, 6}));
  EXPECT_EQ(r.deleted_epochs, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(fs::exists(dir.path() + "/trainer.1"));
}

TEST(RunJob, BackgroundSaveWritesTheSameCheckpoints) {
  TempDir fg, bg;
  NodeWorkspaces a, b;
  run_job(small_job(4), a, {.checkpoint_dir = fg.path()});
  std::vector<bool> background;
  JobRunOptions opt{.checkpoint_dir = bg.path(), .background_save = true};
  opt.on_epoch = [&](const EpochReport& r) { background.push_back(r.background); };
  run_job(small_job(4), b, opt);
  EXPECT_EQ(background, std::vector<bool>(5, true));
  for (int64_t e = 0; e <= 4; ++e) {
    EXPECT_TRUE(digests(fg.path(), e) == digests(bg.path(), e)) << "epoch " << e;
  }
  EXPECT_TRUE(all_blobs(a) == all_blobs(b));
}

TEST(RunJob, BackgroundSavesOfLargeTensorsReuseTheirBuffersWithoutStaleBytes) {
  // 1.5 M floats: a 4 MiB and a 2 MiB record, in huge-page storage that each snapshot takes over
  // from the previous one; the weights change every epoch, so a stale byte would change a digest.
  TempDir fg, bg;
  NodeWorkspaces a, b;
  run_job(small_job(4, 1'500'000), a, {.checkpoint_dir = fg.path()});
  run_job(small_job(4, 1'500'000), b, {.checkpoint_dir = bg.path(), .background_save = true});
  for (int64_t e = 0; e <= 4; ++e) {
    EXPECT_TRUE(digests(fg.path(), e) == digests(bg.path(), e)) << "epoch " << e;
  }
  EXPECT_TRUE(all_blobs(a) == all_blobs(b));
  NodeWorkspaces resumed;
  run_job(small_job(4, 1'500'000), resumed, {.checkpoint_dir = bg.path(), .resume_from_epoch = 2});
  EXPECT_TRUE(all_blobs(resumed) == all_blobs(a));
}

TEST(RunJob, BackgroundSaveReportsEachCheckpointOnceWrittenAndCommitted) {
  TempDir dir;
  NodeWorkspaces nodes;
  std::vector<std::string> calls;  // both callbacks, in the order they came
  std::map<int64_t, uint64_t> epoch_bytes;
  std::vector<CheckpointWritten> written;
  JobRunOptions opt{.checkpoint_dir = dir.path(), .background_save = true};
  opt.on_epoch = [&](const EpochReport& r) {
    calls.push_back(fmt::format("epoch {}", r.epoch));
    epoch_bytes[r.epoch] = r.checkpoint_bytes;
  };
  opt.on_checkpoint_written = [&](const CheckpointWritten& w) {
    calls.push_back(fmt::format("written {}", w.epoch));
    // Reported once committed: the epoch verifies.
    EXPECT_EQ(verify_checkpoint(dir.path(), w.epoch).epoch, w.epoch);
    written.push_back(w);
  };
  EXPECT_EQ(run_job(small_job(3), nodes, opt).last_epoch, 3);
  // Epoch E's save is waited for (and reported) when epoch E+1 saves, the last one before the end.
  EXPECT_EQ(calls, (std::vector<std::string>{"epoch 0", "written 0", "epoch 1", "written 1", "epoch 2", "written 2",
                                             "epoch 3", "written 3"}));
  ASSERT_EQ(written.size(), 4u);
  for (const CheckpointWritten& w : written) {
    SCOPED_TRACE(fmt::format("epoch {}", w.epoch));
    EXPECT_TRUE(w.ok);
    EXPECT_EQ(w.error, "");
    EXPECT_GT(w.bytes, 4000u);
    EXPECT_EQ(w.bytes, epoch_bytes.at(w.epoch));
    EXPECT_GT(w.write_seconds, 0);
    ASSERT_EQ(w.node_write_seconds.size(), 2u);
    EXPECT_EQ(w.node_write_seconds[0].first, "trainer");
    EXPECT_EQ(w.node_write_seconds[1].first, "reader");
    EXPECT_GT(w.node_write_seconds[0].second, 0);
    EXPECT_GT(w.node_write_seconds[1].second, 0);
    EXPECT_DOUBLE_EQ(w.write_seconds, w.node_write_seconds[0].second + w.node_write_seconds[1].second);
  }

  // Foreground saves are not reported there (their EpochReport times the whole save).
  TempDir fg;
  NodeWorkspaces fg_nodes;
  int foreground_calls = 0;
  JobRunOptions fg_opt{.checkpoint_dir = fg.path()};
  fg_opt.on_checkpoint_written = [&](const CheckpointWritten&) { ++foreground_calls; };
  run_job(small_job(3), fg_nodes, fg_opt);
  EXPECT_EQ(foreground_calls, 0);
}

TEST(RunJob, SaveFailureIsFatalUnlessTolerated) {
  TempDir dir;
  const std::string file = dir.path() + "/not-a-dir";
  std::ofstream(file) << "x";
  {
    NodeWorkspaces nodes;
    // The checkpoint directory cannot be created under a regular file.
    EXPECT_THROW(run_job(small_job(2), nodes, {.checkpoint_dir = file + "/ckpt"}), RuntimeError);
  }
  for (const bool background : {false, true}) {
    TempDir d2;
    NodeWorkspaces nodes;
    JobRunOptions opt{.checkpoint_dir = d2.path(), .db_type = "minidb", .background_save = background};
    // A failed background save is reported to on_checkpoint_written only when it is tolerated.
    std::vector<CheckpointWritten> written;
    opt.on_checkpoint_written = [&](const CheckpointWritten& w) { written.push_back(w); };
    // Every trainer file path is a non-empty directory: Save cannot replace it with a file.
    for (int e = 0; e <= 3; ++e) fs::create_directories(fmt::format("{}/trainer.{}/x", d2.path(), e));
    try {
      run_job(small_job(3), nodes, opt);
      ADD_FAILURE() << "a failed save did not fail the job (background " << background << ")";
    } catch (const RuntimeError& e) {
      // The failed epoch is named once: a background save's failure surfaces when the next epoch
      // waits for it, and is not re-wrapped as that epoch's failure.
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("Unable to write checkpoint for epoch 0. Error=", 0), 0u) << what;
      EXPECT_EQ(what.find("Unable to write", 1), std::string::npos) << what;
      EXPECT_NE(what.find("trainer.0"), std::string::npos) << what;
    }
    EXPECT_TRUE(written.empty());
    NodeWorkspaces tolerant;
    opt.tolerate_save_failures = true;
    const JobRunResult r = run_job(small_job(3), tolerant, opt);
    EXPECT_EQ(r.last_epoch, 3);
    EXPECT_EQ(r.save_errors.size(), 4u);
    if (background) {
      ASSERT_EQ(written.size(), 4u);
      for (std::size_t i = 0; i < written.size(); ++i) {
        EXPECT_EQ(written[i].epoch, static_cast<int64_t>(i));
        EXPECT_FALSE(written[i].ok);
        EXPECT_EQ(written[i].error, r.save_errors[i]);
        EXPECT_EQ(written[i].write_seconds, 0);
        EXPECT_TRUE(written[i].node_write_seconds.empty());
      }
    } else {
      EXPECT_TRUE(written.empty());
    }
    EXPECT_TRUE(committed_epochs(d2.path()).empty());
    EXPECT_EQ(i64(tolerant, "trainer", "count"), 9);
  }
}

TEST(RunJob, BadJobsAndOptionsAreRefused) {
  TempDir dir;
  JobDef no_stop = small_job(2);
  no_stop.stop_conditions.clear();
  NodeWorkspaces n1;
  EXPECT_THROW(run_job(no_stop, n1, {}), InvalidInput);
  NodeWorkspaces n2;
  EXPECT_THROW(run_job(small_job(2), n2, {.checkpoint_dir = dir.path(), .db_type = "nosuchdb"}), InvalidInput);
  NodeWorkspaces n3;
  EXPECT_THROW(run_job(small_job(2), n3, {.resume_latest = true}), InvalidInput);
  NodeWorkspaces n4;
  EXPECT_THROW(run_job(small_job(2), n4, {.checkpoint_dir = dir.path(), .retention = {.keep_last = -2}}), InvalidInput);
  JobDef bad_stop = small_job(2);
  bad_stop.stop_conditions[0].blob = "no_such_blob";
  NodeWorkspaces n5;
  try {
    run_job(bad_stop, n5, {});
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_blob"), std::string::npos) << e.what();
  }
  JobDef weights_stop = small_job(2);
  weights_stop.stop_conditions[0].blob = "weights";  // 1000 elements
  NodeWorkspaces n6;
  EXPECT_THROW(run_job(weights_stop, n6, {}), TypeError);
  JobDef no_nodes = small_job(2);
  no_nodes.init_group.nodes.clear();
  NodeWorkspaces n7;
  EXPECT_THROW(run_job(no_nodes, n7, {.checkpoint_dir = dir.path()}), InvalidInput);
}

TEST(RunJob, CancellationEndsTheJobWithoutCheckpointingTheEpochInFlight) {
  TempDir dir;
  NodeWorkspaces nodes;
  JobRunOptions opt{.checkpoint_dir = dir.path()};
  opt.run.cancel = std::make_shared<CancelToken>();
  opt.on_epoch = [&](const EpochReport& r) {
    if (r.epoch == 2) opt.run.cancel->cancel();
  };
  EXPECT_THROW(run_job(small_job(5), nodes, opt), Cancelled);
  EXPECT_EQ(committed_epochs(dir.path()), (std::vector<int64_t>{0, 1, 2}));
}

TEST(JobDefJson, RoundTripsAndNamesThePathOfProblems) {
  const JobDef job = small_job(3);
  EXPECT_EQ(job_from_json(to_json(job)), job);
  EXPECT_EQ(job.checkpoint_nodes(), (std::vector<std::string>{"trainer", "reader"}));
  JobDef explicit_nodes = job;
  explicit_nodes.nodes_to_checkpoint = {"reader"};
  EXPECT_EQ(job_from_json(to_json(explicit_nodes)).checkpoint_nodes(), (std::vector<std::string>{"reader"}));
  const std::pair<const char*, const char*> bad[] = {
      {R"({})", "epoch_group"},
      {R"({"epoch_group": {"nodes": [{"node": ""}]}})", "epoch_group.nodes[0].node"},
      {R"({"epoch_group": {"nodes": []}, "stop_conditions": [{"node": "a"}]})", "stop_conditions[0]"},
      {R"({"epoch_group": {"nodes": []}, "nodes_to_checkpoint": ["a", "a"]})", "nodes_to_checkpoint"},
      {R"({"epoch_group": {"nodes": []}, "epochs": 3})", "epochs"},
      {R"({"epoch_group": {"nodes": []}, "exit_group": {"nodes": [{"node": "a", "plan": {"execution_step": [{"name": "s", "network": ["missing"]}]}}]}})",
       "exit_group.nodes[0]"},
  };
  for (const auto& [text, where] : bad) {
    try {
      job_from_json(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace moka
