// Unit tests of the job layer: Job building and freezing, epoch_limiter, JobRunner's flow and
// errors, db naming, checkpoint managers' errors, metadata handler calls, path_prefix (decision 9),
// SnapshotManager (decision 10).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka_job-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka_job") {}
};
namespace ops = moka::ops;
using moka::testing::invalid_input;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A job on node n that counts epochs in blob "count" and stops after `epochs` epochs.
Job counting_job(int64_t epochs, const std::string& node = "n") {
  return Job([&](Job& j) {
    Node(node, [&] {
      j.init_group([&] { Task([&] { ops::Const(0, {.blob_out = "count"}); }); });
      Task([&] { ops::Add({"count", ops::Const(1)}, {"count"}); });
      epoch_limiter(j, epochs);
    });
  });
}

TEST(JobNames, db_name_and_ckpt_filename) {
  EXPECT_EQ(get_ckpt_filename("trainer_0", 5), "trainer_0.5");
  EXPECT_EQ(db_name(5, "trainer_0", "/tmp/x"), "/tmp/x/trainer_0.5");
  EXPECT_EQ(db_name(5, "trainer_0", "/tmp/x/"), "/tmp/x/trainer_0.5");
  EXPECT_EQ(db_name(5, "trainer_0", ""), "trainer_0.5");
  EXPECT_EQ(db_name(5, "trainer_0", "/tmp/x", "/other/pre_"), "/other/pre_trainer_0.5");  // plain concatenation
  EXPECT_EQ(db_name(5, "trainer_0", "/tmp/x", ""), "/tmp/x/trainer_0.5");
}

TEST(Job, DefaultsAndBodyForm) {
  Job plain;
  EXPECT_EQ(plain.init_group().workspace_type(), WorkspaceType::Global);
  EXPECT_EQ(plain.epoch_group().workspace_type(), std::nullopt);
  EXPECT_TRUE(plain.stop_conditions().empty());
  EXPECT_EQ(Job::current(false), nullptr);
  EXPECT_TRUE(contains(invalid_input([] { Job::current(); }), "Context Job is required but none is active."));

  Job* seen = nullptr;
  TaskGroup* active = nullptr;
  Job job([&](Job& j) {
    seen = Job::current();
    active = TaskGroup::current();
    Node("a", [&] {
      j.init_group([&] { Task([&] { ops::Const(1, {.blob_out = "x"}); }); });
      Task([&] { ops::Const(2, {.blob_out = "y"}); });  // bare: the epoch group
      j.download_group([&] { Task([&] { ops::Const(3, {.blob_out = "z"}); }); });
    });
    Node("b", [&] { j.init_group([&] { Task([&] { ops::Const(1, {.blob_out = "x"}); }); }); });
  });
  EXPECT_EQ(seen, &job);
  EXPECT_EQ(active, &job.epoch_group());
  EXPECT_EQ(Job::current(false), nullptr);
  EXPECT_EQ(job.init_group().num_registered_tasks(), 2u);
  EXPECT_EQ(job.epoch_group().num_registered_tasks(), 1u);
  EXPECT_EQ(job.download_group().num_registered_tasks(), 1u);
  EXPECT_EQ(job.exit_group().num_registered_tasks(), 0u);
  EXPECT_EQ(job.nodes_to_checkpoint(), (std::vector<std::string>{"a", "b"}));

  Job explicit_nodes(JobOptions{.nodes_to_checkpoint = std::vector<std::string>{"b"}});
  EXPECT_EQ(explicit_nodes.nodes_to_checkpoint(), (std::vector<std::string>{"b"}));
}

TEST(Job, StopConditionIsAStepLessEpochTask) {
  Job job;
  TaskOutput out;
  Node("n", [&] { out = job.add_stop_condition(BlobRef("done")); });
  ASSERT_EQ(job.stop_conditions().size(), 1u);
  EXPECT_TRUE(job.stop_conditions()[0].same_as(out));
  ASSERT_EQ(job.epoch_group().tasks().size(), 1u);
  EXPECT_EQ(job.epoch_group().tasks()[0].node(), "n");
  EXPECT_FALSE(job.epoch_group().tasks()[0].has_step());
  EXPECT_TRUE(contains(invalid_input([&] {
                         job.add_stop_condition(TaskOutput(std::vector<BlobRef>{"a", "b"}));
                       }),
                       "a stop condition is one blob"));
}

TEST(Job, CompileFreezes) {
  Job job = counting_job(2);
  job.compile();
  EXPECT_TRUE(job.is_compiled());
  EXPECT_EQ(job.nodes_to_checkpoint(), (std::vector<std::string>{"n"}));
  EXPECT_TRUE(contains(invalid_input([&] { job.init_group([] {}); }), "Job is compiled: its init_group"));
  EXPECT_TRUE(contains(invalid_input([&] { job.build([](Job&) {}); }), "Job is compiled: its epoch_group"));
  EXPECT_TRUE(contains(invalid_input([&] { job.add_stop_condition(BlobRef("x")); }), "Job is compiled"));
  // Compiled jobs still run, in any session, and compile() again is a no-op.
  job.compile();
  LocalSession session;
  job.compile(session);
  EXPECT_EQ(JobRunner(job).train(session), 2);
  EXPECT_EQ(session.fetch("n", "count").item<int64_t>(), 2);
}

TEST(Job, CompilingInASessionGivesTheJobDef) {
  Job job = counting_job(2);
  LocalSession session;
  const JobDef def = job.compile(session);
  EXPECT_EQ(def.init_group, session.compile(job.init_group()));
  EXPECT_EQ(def.epoch_group, session.compile(job.epoch_group()));
  ASSERT_EQ(def.stop_conditions.size(), 1u);
  EXPECT_EQ(def.stop_conditions[0].node, "n");
  EXPECT_EQ(def.stop_conditions[0].blob, job.stop_conditions()[0].names().front());
  EXPECT_EQ(def.nodes_to_checkpoint, (std::vector<std::string>{"n"}));

  // A stop condition that no epoch-group task outputs could not be read after an epoch.
  Job elsewhere;
  Node("n", [&] {
    elsewhere.init_group([&] {
      Task init({.outputs = {TaskOutput(BlobRef("done"))}});
      elsewhere.add_stop_condition(init.outputs().front());
    });
  });
  LocalSession other;
  EXPECT_TRUE(contains(invalid_input([&] { (void)elsewhere.compile(other); }),
                       "is not an output of a task of the epoch group"));
}

TEST(EpochLimiter, StopsAfterExactlyNEpochs) {
  for (int64_t n : {1, 3, 7}) {
    LocalSession session;
    EXPECT_EQ(JobRunner(counting_job(n)).train(session), n);
    EXPECT_EQ(session.fetch("n", "count").item<int64_t>(), n);
  }
  Job job;
  EXPECT_TRUE(contains(invalid_input([&] { epoch_limiter(job, 0); }), "num_epochs must be at least 1, got 0"));
}

TEST(JobRunner, GroupsRunInOrder) {
  // init, epochs, download, exit: each appends its digit to a counter-like log value.
  Job job([&](Job& j) {
    j.init_group([&] { Task([&] { ops::Const(1, {.blob_out = "log"}); }); });
    Task([&] { ops::Add({ops::Mul({"log", ops::Const(10)}), ops::Const(2)}, {"log"}); });
    j.download_group([&] { Task([&] { ops::Add({ops::Mul({"log", ops::Const(10)}), ops::Const(3)}, {"log"}); }); });
    j.exit_group([&] { Task([&] { ops::Add({ops::Mul({"log", ops::Const(10)}), ops::Const(4)}, {"log"}); }); });
    epoch_limiter(j, 2);
  });
  LocalSession session;
  EXPECT_EQ(JobRunner(job).train(session), 2);
  EXPECT_EQ(session.fetch("local", "log").item<int64_t>(), 12234);
}

TEST(JobRunner, Errors) {
  LocalSession session;
  Job no_stop([&](Job&) { Task([&] { ops::Const(1); }); });
  EXPECT_TRUE(contains(invalid_input([&] { JobRunner(no_stop).train(session); }), "the job has no stop condition"));
  EXPECT_TRUE(contains(invalid_input([&] { JobRunner(counting_job(1), {.resume_from_epoch = 2}).train(session); }),
                       "cannot resume from epoch 2 without a checkpoint manager"));
  EXPECT_TRUE(
      contains(invalid_input([&] { JobRunner(counting_job(1)).load_blobs_from_checkpoints({"x"}, 1, session); }),
               "Checkpoint manager is None"));
  Job bad_stop([&](Job& j) {
    j.init_group([&] { Task([&] { ops::Const({1, 2}, {.blob_out = "two"}); }); });
    j.add_stop_condition(BlobRef("two"));
  });
  // A stop condition of the wrong shape is found after an epoch ran: TypeError, as run_job reports it
  // (both read stop conditions with the job engine's one rule).
  LocalSession s2;
  try {
    JobRunner(bad_stop).train(s2);
    ADD_FAILURE() << "no TypeError";
  } catch (const TypeError& e) {
    EXPECT_TRUE(contains(e.what(), "stop condition \"two\" must hold one value")) << e.what();
  }
  Job string_stop([&](Job& j) {
    j.init_group([&] { Task([&] { ops::Const(std::string("yes"), {.blob_out = "word"}); }); });
    j.add_stop_condition(BlobRef("word"));
  });
  LocalSession s3;
  EXPECT_THROW(JobRunner(string_stop).train(s3), TypeError);
}

TEST(CheckpointManager, Errors) {
  CheckpointManager cm("/tmp/x", "node", "minidb");
  EXPECT_TRUE(contains(invalid_input([&] {
                         cm.init(std::vector<std::string>{"a", "b"});
                       }),
                       "CheckpointManager only supports single node."));
  EXPECT_TRUE(contains(invalid_input([&] { cm.init_task_group({}, std::nullopt, {}, {}); }),
                       "CheckpointManager only supports single node. (got 0 nodes"));
  EXPECT_TRUE(contains(invalid_input([&] { cm.save(1); }), "CheckpointManager.blob_list: init must be called first"));
  EXPECT_TRUE(contains(invalid_input([&] { cm.save_task_group(1); }), "init must be called first"));
  EXPECT_TRUE(contains(invalid_input([&] { CheckpointManager("/x", "", "minidb"); }), "node_name must not be empty"));

  MultiNodeCheckpointManager mn("/tmp/x", "minidb");
  EXPECT_TRUE(contains(invalid_input([&] { mn.save(1); }), "init must be called first."));
  EXPECT_TRUE(contains(invalid_input([&] { mn.load(1); }), "init must be called first."));
  EXPECT_TRUE(contains(invalid_input([&] { mn.init({"a", "a"}); }), "node \"a\" is listed twice"));
  mn.init({"a", "b"});
  EXPECT_TRUE(contains(invalid_input([&] { mn.init({"a"}); }),
                       "MultiNodeCheckpointManager was initialised for nodes ['a', 'b'], not ['a']"));
  EXPECT_EQ(mn.get_ckpt_db_name("b", 3), "/tmp/x/b.3");
  EXPECT_EQ(mn.get_ckpt_db_name("c", 3), std::nullopt);
  EXPECT_EQ(mn.node_names(), (std::vector<std::string>{"a", "b"}));
  // Re-init with the same nodes: an empty group (Caffe2's reuse).
  EXPECT_EQ(mn.init({"a", "b"}).num_registered_tasks(), 0u);

  SnapshotManager snap("/tmp/x", "node", "minidb");
  EXPECT_TRUE(contains(invalid_input([&] {
                         snap.init(std::vector<std::string>{"a", "b"});
                       }),
                       "SnapshotManager only supports single node."));
}

// Records every call of the metadata handler interface.
struct RecordingHandler : CheckpointMetadataHandler {
  std::vector<std::string> calls;
  std::optional<int64_t> resume;  // what last_epoch answers
  bool accessible = true;
  std::vector<CheckpointStats> stats;
  void set_params(const std::string& db_prefix, const std::string& db_type, const std::vector<std::string>& nodes,
                  const std::optional<std::string>& path_prefix, const std::optional<std::string>&) override {
    calls.push_back(fmt::format("set_params({}, {}, {}, {})", fs::path(db_prefix).filename().string(), db_type,
                                repr_list(nodes), path_prefix.value_or("None")));
  }
  std::optional<int64_t> last_epoch(std::optional<int64_t> user_epoch) override {
    calls.push_back(fmt::format("last_epoch({})", user_epoch ? std::to_string(*user_epoch) : "None"));
    return resume ? resume : user_epoch;
  }
  void write(int64_t epoch) override { calls.push_back(fmt::format("write({})", epoch)); }
  void report(const std::string& action, const CheckpointStats& s) override {
    calls.push_back(fmt::format("report({})", action));
    stats.push_back(s);
  }
  bool cp_accessible(std::optional<int64_t>) override { return accessible; }
};

TEST(CheckpointManager, MetadataHandlerFlow) {
  TempDir dir;
  auto handler = std::make_shared<RecordingHandler>();
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb", handler);
  Job job = counting_job(2);
  LocalSession session;
  EXPECT_EQ(JobRunner(job, cm).train(session), 2);
  const std::string dn = dir.fs_path().filename().string();
  EXPECT_EQ(handler->calls,
            (std::vector<std::string>{"set_params(" + dn + ", minidb, ['n'], None)", "last_epoch(None)", "write(0)",
                                      "report(checkpoint_save)", "write(1)", "report(checkpoint_save)", "write(2)",
                                      "report(checkpoint_save)"}));
  ASSERT_EQ(handler->stats.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    ASSERT_EQ(handler->stats[e].size(), 1u);
    EXPECT_EQ(handler->stats[e].begin()->first, dir.str() + fmt::format("/n.{}", e));
    EXPECT_GT(handler->stats[e].begin()->second, 0);
  }
  // The handler chooses the epoch to resume from (last_epoch overrides the user's None).
  handler->calls.clear();
  handler->resume = 1;
  LocalSession resumed;
  auto cm2 = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb", handler);
  EXPECT_EQ(JobRunner(job, cm2).train(resumed), 2);
  EXPECT_EQ(resumed.fetch("n", "count").item<int64_t>(), 2);
  EXPECT_EQ(handler->calls[1], "last_epoch(None)");
  EXPECT_EQ(handler->calls[2], "report(checkpoint_load)");
  // Not accessible: nothing saved, a warning instead.
  TempDir dir2;
  auto h2 = std::make_shared<RecordingHandler>();
  h2->accessible = false;
  std::vector<std::string> logged;
  LocalSession s3;
  JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(dir2.str(), "minidb", h2),
                   {.log = [&](std::string_view m) { logged.emplace_back(m); }});
  EXPECT_EQ(runner.train(s3), 2);
  EXPECT_EQ(logged.size(), 3u);
  EXPECT_TRUE(contains(logged.at(0), "Checkpoint files cannot be accessed!"));
  // Nothing but the lock that the training held (see ASecondTrainingOnOneCheckpointDirectoryIsRefused).
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir2.fs_path())) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"moka.lock"});
  EXPECT_EQ(runner.save_failures(), 0);
}

// One training per checkpoint directory, as for run_job: a second JobRunner on the directory, started
// while the first trains (from the first's metadata handler, after epoch 1's save), fails at once.
TEST(JobRunner, ASecondTrainingOnOneCheckpointDirectoryIsRefused) {
  struct SecondTraining : RecordingHandler {
    std::function<void()> on_epoch_1;
    void write(int64_t epoch) override {
      RecordingHandler::write(epoch);
      if (epoch == 1) on_epoch_1();
    }
  };
  TempDir dir;
  auto handler = std::make_shared<SecondTraining>();
  bool tried = false;
  handler->on_epoch_1 = [&] {
    tried = true;
    LocalSession other;
    try {
      JobRunner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(other);
      ADD_FAILURE() << "two trainings held one checkpoint directory";
    } catch (const RuntimeError& e) {
      EXPECT_TRUE(
          contains(e.what(), fmt::format("checkpoint directory '{}' is in use by another job run (process {} holds",
                                         dir.str(), ::getpid())))
          << e.what();
    }
  };
  LocalSession session;
  EXPECT_EQ(JobRunner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb", handler))
                .train(session),
            3);
  EXPECT_TRUE(tried);
  // Released when train() returns, and when it fails.
  LocalSession failed;
  EXPECT_THROW(JobRunner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"),
                         {.resume_from_epoch = 9})
                   .train(failed),
               Error);
  LocalSession resumed;
  EXPECT_EQ(JobRunner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"),
                      {.resume_from_epoch = 3})
                .train(resumed),
            3);
}

// Unlike run_job, JobRunner removes no `.tmp-` files of killed writers when it takes its checkpoint
// directory (CheckpointDirLock with remove_temporaries = false): a db_prefix may name a directory
// shared with files that are not moka's.
TEST(JobRunner, TemporaryFilesInTheCheckpointDirectoryAreLeftAlone) {
  TempDir dir;
  // Named as a minidb writer (`DB.tmp-PID`, a pid not this process's) and a manifest writer
  // (`MANIFEST.tmp-8 hex digits`) that were killed mid-save would have left them.
  const std::map<std::string, std::string> temporaries = {
      {fmt::format("n.2.tmp-{}", ::getpid() + 1), "a torn minidb file"},
      {"moka-manifest.2.json.tmp-0badc0de", "{\"torn\": "},
  };
  for (const auto& [name, text] : temporaries) std::ofstream(dir / name) << text;
  LocalSession session;
  EXPECT_EQ(
      JobRunner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb")).train(session), 3);
  EXPECT_EQ(committed_epochs(dir.str()), (std::vector<int64_t>{0, 1, 2, 3}));
  for (const auto& [name, text] : temporaries) {
    ASSERT_TRUE(fs::is_regular_file(dir / name)) << name;
    std::ifstream in(dir / name);
    const std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(now, text) << name;
  }
}

TEST(JobRunner, ResumeFromMissingCheckpointNamesTheFile) {
  TempDir dir;
  LocalSession session;
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  try {
    JobRunner(counting_job(2), cm, {.resume_from_epoch = 9}).train(session);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    // Checked before anything runs: the epoch is not committed (its manifest is named).
    EXPECT_TRUE(contains(e.what(), "epoch 9 is not committed")) << e.what();
    EXPECT_TRUE(contains(e.what(), dir.str() + "/moka-manifest.9.json")) << e.what();
  }
}

TEST(JobRunner, LongJobsDoNotGrowTheSessionPerEpoch) {
  // Every epoch's save is a new TaskGroup; before the session dropped unreachable ones, each left
  // its compiled plan and its nets behind (three nets per epoch, ~50 KiB of memory).
  TempDir dir;
  auto run_blobs = [&](int64_t epochs) {
    LocalSession session;
    const std::string ckpt = dir.str() + "/b" + std::to_string(epochs);
    fs::create_directories(ckpt);
    JobRunner(counting_job(epochs), std::make_shared<MultiNodeCheckpointManager>(ckpt, "minidb")).train(session);
    return session.workspace("n").blobs().size();
  };
  auto run = [&](int64_t epochs) {
    LocalSession session;
    const std::string ckpt = dir.str() + "/" + std::to_string(epochs);
    fs::create_directories(ckpt);
    auto cm = std::make_shared<MultiNodeCheckpointManager>(ckpt, "minidb");
    EXPECT_EQ(JobRunner(counting_job(epochs), cm).train(session), epochs);
    EXPECT_EQ(session.fetch("n", "count").item<int64_t>(), epochs);
    // Only the job's node: the manager's tasks once brought an empty task (and a default-output
    // blob per save) onto node "local" as well.
    EXPECT_EQ(session.workspaces().nodes(), std::vector<std::string>{"n"});
    return std::pair{session.num_compiled(), session.workspace("n").nets().size()};
  };
  const auto short_job = run(3);
  const auto long_job = run(60);
  EXPECT_EQ(long_job.first, short_job.first) << "compiled runnables kept";
  EXPECT_EQ(long_job.second, short_job.second) << "nets registered in the node workspace";
  EXPECT_EQ(run_blobs(60), run_blobs(3)) << "blobs in the node workspace";
}

TEST(JobRunner, MakesTheCheckpointDirectory) {
  TempDir dir;
  const std::string ckpt = dir.str() + "/not/yet/there";
  LocalSession session;
  EXPECT_EQ(JobRunner(counting_job(2), std::make_shared<MultiNodeCheckpointManager>(ckpt, "minidb")).train(session), 2);
  for (int epoch = 0; epoch <= 2; ++epoch) EXPECT_TRUE(fs::is_regular_file(ckpt + "/n." + std::to_string(epoch)));
}

TEST(JobRunner, SavesAfterAFailedOneStillWork) {
  // The checkpoint timer keeps its blob from save to save: a save that fails half-way must not
  // leave it running, or every later save would fail on "TimerBegin on an already running timer".
  TempDir dir;
  fs::create_directories(dir.str() + "/n.0");  // epoch 0's DB cannot be published over a directory
  LocalSession session;
  JobRunner runner(counting_job(3), std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb"),
                   {.tolerate_save_failures = true});
  EXPECT_EQ(runner.train(session), 3);
  EXPECT_EQ(runner.save_failures(), 1) << runner.last_save_error();
  for (int epoch = 1; epoch <= 3; ++epoch) EXPECT_TRUE(fs::is_regular_file(dir.str() + "/n." + std::to_string(epoch)));
}

TEST(JobRunner, EpochGroupIsInstantiatedOnceAcrossCheckpointedEpochs) {
  // The checkpoint saves between epochs must not make the epoch group's plan instantiate afresh:
  // its operators are constructed once for the whole job (decision 11).
  static std::atomic<int> builds{0};
  static std::once_flag once;
  std::call_once(once, [] {
    register_callable_operator(OpSchema("JobTestCountedBuild").inputs(0).outputs(0, 1).doc("test: counts builds"), [] {
      ++builds;
      return [](std::span<Blob* const>, std::span<Blob* const>) {};
    });
  });
  builds = 0;
  TempDir dir;
  LocalSession session;
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  Job job([&](Job& j) {
    Node("n", [&] {
      j.init_group([&] { Task([&] { ops::Const(0, {.blob_out = "count"}); }); });
      Task({.workspace_type = WorkspaceType::Global}, [&] {
        ops::op("JobTestCountedBuild", {}, {});
        ops::Add({"count", ops::Const(1)}, {"count"});
      });
      epoch_limiter(j, 10);
    });
  });
  EXPECT_EQ(JobRunner(job, cm).train(session), 10);
  EXPECT_EQ(session.fetch("n", "count").item<int64_t>(), 10);
  EXPECT_EQ(builds.load(), 1) << "the epoch group was instantiated again between epochs";
}

// Decision 9: path_prefix and path_type apply to every operation, save and existence checks included.
TEST(CheckpointManager, PathPrefixHonouredEverywhere) {
  TempDir dir;
  const std::string prefix = (dir.fs_path() / "pp_").string();
  LocalSession session;
  Job job = counting_job(2);
  session.run(job.init_group());
  MultiNodeCheckpointManager cm(dir.str() + "/unused", "leveldb_is_not_used");
  cm.set_params({"n"}, prefix, "minidb");
  TaskGroup init = cm.init({"n"});
  session.run(init);
  TaskGroup save = cm.save(7);
  session.run(save);
  EXPECT_TRUE(fs::exists(prefix + "n.7"));
  EXPECT_FALSE(fs::exists(dir.fs_path() / "unused"));
  EXPECT_EQ(cm.get_ckpt_db_name("n", 7), prefix + "n.7");
  EXPECT_EQ(cm.db_type(), "minidb");
  EXPECT_TRUE(cm.load_blobs_locally({"n"}, {"count"}, 7, session));
  EXPECT_FALSE(cm.load_blobs_locally({"n"}, {"count"}, 8, session));

  // A fresh session: the timer blobs the timed tasks above left in node n hold no serializable value.
  LocalSession s2;
  s2.run(job.init_group());
  CheckpointManager single(dir.str() + "/unused", "solo", "minidb");
  single.set_params({"n"}, prefix);
  s2.run(single.init());
  s2.run(single.save(1));
  EXPECT_TRUE(fs::exists(prefix + "solo.1"));
  EXPECT_EQ(single.get_ckpt_db_name("solo", 1), prefix + "solo.1");
  Task exists = single.check_db_exists(1);
  s2.run(exists);
  EXPECT_TRUE(exists.outputs()[0].fetch<bool>());
}

// Each node of a MultiNode manager saves its own workspace's blobs (decision 9).
TEST(JobRunner, QueuesAndMutexesAreLeftOutOfTheCheckpoint) {
  // An init group that makes a queue and a mutex (runtime objects its nets recreate, no serializer), and
  // a session that already trained the job once, so the workspace holds what that run made: every epoch
  // is still saved, with the tensors and counters only, and a resumed run ends with the same count.
  TempDir dir;
  Job job([&](Job& j) {
    Node("n", [&] {
      j.init_group([&] {
        Task([&] {
          ops::Const(0, {.blob_out = "count"});
          ops::op("CreateBlobsQueue", {}, {"queue"}, {{"capacity", 4}, {"num_blobs", 1}});
          ops::op("CreateMutex", {}, {"mu"});
        });
      });
      Task([&] { ops::Add({"count", ops::Const(1)}, {"count"}); });
      epoch_limiter(j, 3);
    });
  });
  LocalSession session;
  EXPECT_EQ(JobRunner(job).train(session), 3);
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  EXPECT_EQ(JobRunner(job, cm).train(session), 3);
  const auto list = cm->node_managers().front().second->blob_list();
  EXPECT_TRUE(std::find(list.begin(), list.end(), "count") != list.end());
  for (const char* runtime_only : {"queue", "mu"})
    EXPECT_TRUE(std::find(list.begin(), list.end(), runtime_only) == list.end()) << runtime_only;
  for (int epoch = 0; epoch <= 3; ++epoch) EXPECT_TRUE(fs::is_regular_file(dir.str() + "/n." + std::to_string(epoch)));
  LocalSession resumed;
  auto cm2 = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  EXPECT_EQ(JobRunner(job, cm2, {.resume_from_epoch = 1}).train(resumed), 3);
  EXPECT_EQ(resumed.fetch("n", "count"), session.fetch("n", "count"));
}

TEST(MultiNodeCheckpointManager, EachNodeHasItsOwnBlobList) {
  TempDir dir;
  Job job([&](Job& j) {
    Node("a", [&] { j.init_group([&] { Task([&] { ops::Const(1, {.blob_out = "only_a"}); }); }); });
    Node("b", [&] { j.init_group([&] { Task([&] { ops::Const(2, {.blob_out = "only_b"}); }); }); });
    Node("a", [&] { epoch_limiter(j, 1); });
  });
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  LocalSession session;
  EXPECT_EQ(JobRunner(job, cm).train(session), 1);
  const auto list_a = cm->node_managers()[0].second->blob_list();
  const auto list_b = cm->node_managers()[1].second->blob_list();
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  EXPECT_TRUE(has(list_a, "only_a"));
  EXPECT_FALSE(has(list_a, "only_b"));
  EXPECT_TRUE(has(list_b, "only_b"));
  EXPECT_FALSE(has(list_b, "only_a"));
  EXPECT_TRUE(has(list_a, "a/blob_names"));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "a.1"));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "b.1"));
  // What a background save writes per node is the same list; a node not checkpointed is refused.
  EXPECT_EQ(cm->blob_names_of("a"), list_a);
  EXPECT_EQ(cm->blob_names_of("b"), list_b);
  try {
    (void)cm->blob_names_of("c");
    FAIL() << "a blob list for a node that is not checkpointed";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("node \"c\" is not checkpointed"), std::string::npos) << e.what();
  }
}

TEST(SnapshotManager, ExportsChosenBlobsUnderItsOwnNames) {
  TempDir dir;
  LocalSession session;
  Node("n", [&] {
    Task t([&] {
      ops::Const(5, {.blob_out = "w"});
      ops::Const(6, {.blob_out = "b"});
      ops::Const(7, {.blob_out = "other"});
    });
    session.run(t);
  });
  SnapshotManager snap(dir.str(), "n", "minidb", {.blob_names = {"w", "b"}});
  session.run(snap.init(std::vector<std::string>{"n"}));
  EXPECT_EQ(snap.blob_list(), (std::vector<std::string>{"w", "b"}));
  session.run(snap.save(3));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "n.snapshot.3"));
  EXPECT_FALSE(fs::exists(dir.fs_path() / "n.3"));
  // Load into a fresh session: only the chosen blobs come back.
  LocalSession fresh;
  SnapshotManager reader(dir.str(), "n", "minidb", {.blob_names = {"w", "b"}});
  fresh.run(reader.init(std::vector<std::string>{"n"}));
  fresh.run(reader.load(3));
  EXPECT_EQ(fresh.fetch("n", "w").item<int64_t>(), 5);
  EXPECT_EQ(fresh.fetch("n", "b").item<int64_t>(), 6);
  EXPECT_FALSE(fresh.workspace("n").has_blob("other"));
  Task exists = reader.check_db_exists(4);
  fresh.run(exists);
  EXPECT_FALSE(exists.outputs()[0].fetch<bool>());
  static_assert(!std::is_convertible_v<SnapshotManager*, CheckpointManagerBase*>,
                "a SnapshotManager must never be usable for resume");
}

TEST(SnapshotManager, RetentionKeepsTheNewestSnapshotsOfItsNode) {
  TempDir dir;
  LocalSession session;
  Node("n", [&] {
    Task t([&] { ops::Const(5, {.blob_out = "w"}); });
    session.run(t);
  });
  SnapshotManager snap(dir.str(), "n", "minidb", {.blob_names = {"w"}, .keep_last = 2});
  session.run(snap.init(std::vector<std::string>{"n"}));
  for (int64_t e : {1, 2, 10, 11}) session.run(snap.save(e));
  fs::create_directories(dir.fs_path() / "n.3");            // a checkpoint, not a snapshot
  fs::create_directories(dir.fs_path() / "m.snapshot.1");   // another node's snapshot
  fs::create_directories(dir.fs_path() / "n.snapshot.07");  // not a canonical epoch
  EXPECT_EQ(snap.snapshot_epochs(), (std::vector<int64_t>{1, 2, 10, 11}));
  EXPECT_EQ(snap.apply_retention(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(snap.snapshot_epochs(), (std::vector<int64_t>{10, 11}));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "n.3"));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "m.snapshot.1"));
  EXPECT_TRUE(fs::exists(dir.fs_path() / "n.snapshot.07"));
  SnapshotManager keep_all(dir.str(), "n", "minidb");
  EXPECT_TRUE(keep_all.apply_retention().empty());
  EXPECT_TRUE(contains(invalid_input([&] { SnapshotManager(dir.str(), "n", "minidb", {.keep_last = -1}); }),
                       "keep_last must be >= 0"));
}

TEST(SnapshotManager, RetentionWithAPathPrefixListsAndDeletesOnlyWhereItsSnapshotsAre) {
  // Snapshots written under a path_prefix live in another directory than db_prefix: retention lists
  // that directory. It used to list db_prefix and delete the same names under path_prefix.
  TempDir prefix_dir, other;
  LocalSession session;
  Node("n", [&] {
    Task t([&] { ops::Const(5, {.blob_out = "w"}); });
    session.run(t);
  });
  SnapshotManager snap(other.str(), "n", "minidb", {.blob_names = {"w"}, .keep_last = 1});
  const std::string prefix = prefix_dir.str() + "/";
  session.run(snap.init(std::vector<std::string>{"n"}, std::nullopt, prefix));
  for (int64_t e : {1, 2, 3}) session.run(snap.save(e));
  // Files with snapshot names in db_prefix that are not this manager's snapshots.
  for (int e : {1, 2}) fs::create_directories(other.fs_path() / ("n.snapshot." + std::to_string(e)));
  EXPECT_EQ(snap.snapshot_epochs(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(snap.apply_retention(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(fs::exists(prefix_dir.fs_path() / "n.snapshot.3"));
  EXPECT_FALSE(fs::exists(prefix_dir.fs_path() / "n.snapshot.1"));
  EXPECT_TRUE(fs::exists(other.fs_path() / "n.snapshot.1"));
  EXPECT_TRUE(fs::exists(other.fs_path() / "n.snapshot.2"));
}

}  // namespace
}  // namespace moka
