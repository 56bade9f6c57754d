// Conformance: ports of checkpoint_test.py (docs/testing.md §1) and the seed's build_job run
// as a checkpointed, resumed Job. moka's LocalSession gives every node its own workspace (decision
// 1), so blobs are fetched from the node that holds them ("trainer_0", ...) instead of one `ws`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka_ckpt-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka_ckpt") {}
};
namespace ops = moka::ops;
using schema::Field;

const std::vector<int64_t> EXPECTED_TOTALS = {103, 115, 136, 145};

// checkpoint_test.py build_pipeline(node_id): on node trainer_<id>, an init task holding the
// dataset 0..9 (its cursor is created in the GLOBAL init group, so it survives epochs) and a total
// of [100]; each epoch pipes ReaderWithLimit(num_iter=3) into inc_total; stop when the data ends.
BlobRef build_pipeline(int node_id) {
  BlobRef total;
  Node(fmt::format("trainer_{}", node_id), [&] {
    std::shared_ptr<Reader> full_reader;
    Job::current()->init_group([&] {
      Task([&] {
        std::vector<int64_t> vals(10);
        std::iota(vals.begin(), vals.end(), 0);
        Field data = schema::ConstRecord(schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
        Dataset ds(data, fmt::format("dataset:{}", node_id));
        full_reader = ds.reader({.init_net = ops::net()});
        total = ops::Const({100});
      });
    });
    auto epoch_reader = std::make_shared<ReaderWithLimit>(full_reader, 3);
    pipe(epoch_reader, {.processor = Processor(
                            [total](const Field& rec) {
                              ops::Add({total, rec["val"]()}, {total});
                            },
                            "inc_total")});
    Job::current()->add_stop_condition(epoch_reader->data_finished());
  });
  return total;
}

int64_t total_of(const TaskOutput& o) { return o.fetch().values<int64_t>()[0]; }

using Builder = std::function<std::pair<std::unique_ptr<LocalSession>, std::shared_ptr<CheckpointManagerBase>>()>;

// checkpoint_test.py run_with(builder). The output fetcher is placed on trainer_0, where `total`
// lives (Caffe2 ran it on "local", which was the same workspace there).
void run_with(const Builder& builder) {
  Cluster cluster;
  with_context(cluster, [&] {
    BlobRef total;
    Job job([&](Job&) { total = build_pipeline(0); });
    // One fetcher for every session, as in Caffe2 (each session compiles it: decision 2).
    Task output_fetcher;
    Node("trainer_0", [&] { output_fetcher = Task({.outputs = {TaskOutput(total)}}, Net("empty")); });
    auto fetch_total = [&](LocalSession& session) {
      session.run(output_fetcher);
      return total_of(output_fetcher.outputs()[0]);
    };

    auto [session, checkpoint] = builder();
    job.compile();
    const int64_t num_epochs = JobRunner(job, checkpoint).train(*session);
    EXPECT_EQ(num_epochs, 4);
    EXPECT_EQ(fetch_total(*session), 145);

    for (int64_t initial_epoch = 1; initial_epoch <= 4; ++initial_epoch) {
      std::tie(session, checkpoint) = builder();
      JobRunner(job, checkpoint, {.resume_from_epoch = initial_epoch}).train(*session);
      EXPECT_EQ(fetch_total(*session), 145) << "resumed from epoch " << initial_epoch;
    }
    for (int64_t epoch = 1; epoch <= 4; ++epoch) {
      TaskGroup load = checkpoint->load_task_group(epoch, std::nullopt, std::nullopt);
      session->run(load);
      EXPECT_EQ(fetch_total(*session), EXPECTED_TOTALS[epoch - 1]) << "checkpoint of epoch " << epoch;
    }
  });
}

// test_single_checkpoint: (a) CheckpointManager(tmpdir, 'temp_node', 'minidb') — its tasks
// run on the job's one node, trainer_0 (moka: node workspaces are separate), files
// tmpdir/temp_node.<epoch>; (b) MultiNodeCheckpointManager(tmpdir, 'minidb'), files tmpdir/trainer_0.<epoch>.
TEST(Caffe2Checkpoint, test_single_checkpoint) {
  {
    TempDir tmpdir;
    run_with([&] {
      return std::make_pair(std::make_unique<LocalSession>(),
                            std::shared_ptr<CheckpointManagerBase>(
                                std::make_shared<CheckpointManager>(tmpdir.str(), "temp_node", "minidb")));
    });
    for (int e = 0; e <= 4; ++e) EXPECT_TRUE(fs::exists(tmpdir.fs_path() / fmt::format("temp_node.{}", e))) << e;
  }
  {
    TempDir tmpdir;
    run_with([&] {
      return std::make_pair(
          std::make_unique<LocalSession>(),
          std::shared_ptr<CheckpointManagerBase>(std::make_shared<MultiNodeCheckpointManager>(tmpdir.str(), "minidb")));
    });
    for (int e = 0; e <= 4; ++e) EXPECT_TRUE(fs::exists(tmpdir.fs_path() / fmt::format("trainer_{}.{}", 0, e))) << e;
  }
}

// test_ckpt_name_and_load_model_from_ckpts.
TEST(Caffe2Checkpoint, test_ckpt_name_and_load_model_from_ckpts) {
  // Part 1: names.
  {
    TempDir tmpdir;
    MultiNodeCheckpointManager checkpoint(tmpdir.str(), "minidb");
    Cluster cluster;
    with_context(cluster, [&] {
      Job job([&](Job&) {
        for (int node_id = 0; node_id < 3; ++node_id) build_pipeline(node_id);
      });
      job.compile();
      checkpoint.init(job.nodes_to_checkpoint());
      for (int node_id = 0; node_id < 3; ++node_id) {
        const std::string node = fmt::format("trainer_{}", node_id);
        EXPECT_EQ(checkpoint.get_ckpt_db_name(node, 5), tmpdir.str() + "/" + node + ".5");
      }
    });
  }
  // Part 2: train each node separately.
  TempDir tmpdir;
  std::vector<BlobRef> totals;
  for (int node_id = 0; node_id < 3; ++node_id) {
    LocalSession session;
    auto checkpoint = std::make_shared<MultiNodeCheckpointManager>(tmpdir.str(), "minidb");
    Cluster cluster;
    with_context(cluster, [&] {
      Job job([&](Job&) { totals.push_back(build_pipeline(node_id)); });
      job.compile();
      EXPECT_EQ(JobRunner(job, checkpoint).train(session), 4);
    });
    // Caffe2's 17: 4 init-group blobs (val, the cursor, total, the init task's default output) +
    // blob_names + 2 timer blobs per save x 5 saves + the stop condition and the pipe task's default
    // output. moka's 9: the same, but the checkpoint timer and its result keep one pair of blobs per
    // node and operation across saves instead of a new pair per save (decision 34): 4 + 1 + 2 + 2.
    const std::vector<std::string> blobs = session.workspace(fmt::format("trainer_{}", node_id)).blobs();
    EXPECT_EQ(blobs.size(), 9u) << ::testing::PrintToString(blobs);
  }
  // Part 3: partial load by name across every node's DB. Caffe2's names were
  // 'trainer_{1,2}/task_2/GivenTensorInt64Fill:0'; moka's are whatever part 2 created.
  const std::vector<std::string> model_blob_names = {totals[1].name(), totals[2].name()};
  LocalSession session;
  EXPECT_TRUE(session.workspaces().nodes().empty());
  auto checkpoint = std::make_shared<MultiNodeCheckpointManager>(tmpdir.str(), "minidb");
  Cluster cluster;
  with_context(cluster, [&] {
    Job job([&](Job&) {
      for (int node_id = 0; node_id < 3; ++node_id) build_pipeline(node_id);
    });
    job.compile();
    JobRunner job_runner(job, checkpoint);
    job_runner.load_blobs_from_checkpoints(model_blob_names, 1, session);
    for (int64_t epoch = 1; epoch <= 4; ++epoch) {
      EXPECT_TRUE(job_runner.load_blobs_from_checkpoints(model_blob_names, epoch, session));
      for (int k = 1; k <= 2; ++k) {
        const std::string node = fmt::format("trainer_{}", k);
        const std::string& name = model_blob_names[k - 1];
        ASSERT_TRUE(session.workspace(node).has_blob(name)) << node << " " << name;
        EXPECT_EQ(session.fetch(node, name), Tensor::vector<int64_t>({EXPECTED_TOTALS[epoch - 1]})) << epoch;
      }
      // trainer_0's DB holds neither blob: allow_incomplete loads nothing there (the Load operator's
      // output blobs exist, as in Caffe2, but stay empty).
      EXPECT_THROW(session.fetch("trainer_0", model_blob_names[0]), Error);
    }
    EXPECT_FALSE(job_runner.load_blobs_from_checkpoints(model_blob_names, 5, session));
  });
}

// checkpoint_test.py UploadToLocalFile: copies every node's final checkpoint to dest_dir/<node>.
class UploadToLocalFile : public UploadTaskGroupBuilder {
 public:
  explicit UploadToLocalFile(std::string dest_dir) : dest_dir_(std::move(dest_dir)) {}
  TaskGroup build(int64_t epoch, CheckpointManagerBase* checkpoint_manager) override {
    auto* cm = dynamic_cast<MultiNodeCheckpointManager*>(checkpoint_manager);
    if (!cm) throw InvalidInput("UploadToLocalFile needs a MultiNodeCheckpointManager");
    return TaskGroup(WorkspaceType::Global, [&] {
      for (const auto& [node, manager] : cm->node_managers()) {
        Node(node, [&] {
          Task([&] {
            const std::string src = db_name(epoch, manager->node_name(), manager->db_prefix());
            const std::string dst = (fs::path(dest_dir_) / node).string();
            ops::call([src, dst](std::span<Blob* const>, std::span<Blob* const>) {
              fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
            });
          });
        });
      }
    });
  }

 private:
  std::string dest_dir_;
};

// test_upload_checkpoint.
TEST(Caffe2Checkpoint, test_upload_checkpoint) {
  TempDir tmpdir;
  const fs::path upload_dir = tmpdir.fs_path() / "upload";
  fs::create_directory(upload_dir);
  for (int id = 0; id < 3; ++id) EXPECT_FALSE(fs::exists(upload_dir / fmt::format("trainer_{}", id)));
  for (int node_id = 0; node_id < 3; ++node_id) {
    LocalSession session;
    auto checkpoint = std::make_shared<MultiNodeCheckpointManager>(tmpdir.str(), "minidb");
    Cluster cluster;
    with_context(cluster, [&] {
      Job job([&](Job&) { build_pipeline(node_id); });
      job.compile();
      JobRunner runner(job, checkpoint,
                       {.upload_task_group_builder = std::make_shared<UploadToLocalFile>(upload_dir.string())});
      EXPECT_EQ(runner.train(session), 4);
    });
  }
  for (int id = 0; id < 3; ++id) {
    const fs::path up = upload_dir / fmt::format("trainer_{}", id);
    ASSERT_TRUE(fs::exists(up)) << up;
    EXPECT_EQ(fs::file_size(up), fs::file_size(tmpdir.fs_path() / fmt::format("trainer_{}.4", id)));
  }
}

// test_ckpt_save_failure. Caffe2 used "/tmp/path_does_not_exist/"; moka's JobRunner creates
// missing checkpoint directories, so the prefix is a path *under a regular file*, which nobody can create.
// Decision 8: by default the first failed save (epoch 0) fails train(); with
// tolerate_save_failures the job completes as in Caffe2 and every save (epochs 0..4) is counted.
TEST(Caffe2Checkpoint, test_ckpt_save_failure) {
  TempDir tmp;
  const fs::path blocker = tmp.fs_path() / "not_a_directory";
  std::ofstream(blocker) << "x";
  const std::string tmpdir = (blocker / "").string();
  for (int node_id = 0; node_id < 3; ++node_id) {
    Cluster cluster;
    with_context(cluster, [&] {
      Job job([&](Job&) { build_pipeline(node_id); });
      job.compile();
      {
        LocalSession session;
        std::vector<std::string> logged;
        JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(tmpdir, "minidb"),
                         {.log = [&](std::string_view m) { logged.emplace_back(m); }});
        EXPECT_THROW(runner.train(session), Error);
        EXPECT_EQ(runner.save_failures(), 1);
        ASSERT_EQ(logged.size(), 1u);
        EXPECT_NE(logged[0].find("Unable to write checkpoint for epoch 0. Error="), std::string::npos) << logged[0];
        EXPECT_NE(runner.last_save_error().find("not_a_directory"), std::string::npos) << runner.last_save_error();
      }
      {
        LocalSession session;
        std::vector<std::string> logged;
        JobRunner runner(job, std::make_shared<MultiNodeCheckpointManager>(tmpdir, "minidb"),
                         {.tolerate_save_failures = true, .log = [&](std::string_view m) { logged.emplace_back(m); }});
        EXPECT_EQ(runner.train(session), 4);
        EXPECT_EQ(runner.save_failures(), 5);
        EXPECT_EQ(logged.size(), 5u);
      }
    });
  }
}

// test_download_group_simple. ModelHelper's param_init_net and net are plain Nets here
// (ConstantFill's run_once=0 is an argument moka does not have; it changes nothing in this flow).
TEST(Caffe2Checkpoint, test_download_group_simple) {
  Net param_init_net("test_model_init");
  Net model_net("test_model");
  Net download_net("download_net");
  for (const char* name : {"input1", "input2", "output", "download_result"})
    param_init_net.op("ConstantFill", {}, {name}, {{"shape", {8}}, {"value", 1.0}});
  model_net.op("Add", {"input1", "input2"}, {"output"});
  download_net.op("Copy", {"output"}, {"download_result"});
  Job job([&](Job& j) {
    Node("trainer:0", [&] {
      j.init_group([&] { Task({}, param_init_net); });
      j.epoch_group([&] { Task([&] { ops::loop(1, [&] { ops::net(model_net); }); }); });
      j.download_group([&] { Task({}, download_net); });
      epoch_limiter(j, 1);
    });
  });
  LocalSession session;
  EXPECT_EQ(JobRunner(job).train(session), 1);
  const Tensor expected = Tensor::vector<float>(std::vector<float>(8, 2.0f));
  EXPECT_EQ(session.fetch("trainer:0", "output"), expected);
  EXPECT_EQ(session.fetch("trainer:0", "download_result"), expected);
}

// test_reuse_checkpoint_manager: one session, one manager, resumed from every epoch.
TEST(Caffe2Checkpoint, test_reuse_checkpoint_manager) {
  TempDir tmpdir;
  LocalSession session;
  auto checkpoint = std::make_shared<MultiNodeCheckpointManager>(tmpdir.str(), "minidb");
  BlobRef total;
  Job job([&](Job&) { total = build_pipeline(0); });
  Task output_fetcher;
  Node("trainer_0", [&] { output_fetcher = Task({.outputs = {TaskOutput(total)}}, Net("empty")); });
  auto fetch_total = [&] {
    session.run(output_fetcher);
    return total_of(output_fetcher.outputs()[0]);
  };
  job.compile(session);
  const int64_t num_epochs = JobRunner(job, checkpoint).train(session);
  EXPECT_EQ(num_epochs, 4);
  const auto first_lists = checkpoint->node_managers().front().second->blob_list();
  for (int64_t initial_epoch = 1; initial_epoch <= num_epochs; ++initial_epoch) {
    JobRunner(job, checkpoint, {.resume_from_epoch = initial_epoch}).train(session);
    EXPECT_EQ(fetch_total(), 145) << "resumed from " << initial_epoch;
  }
  EXPECT_EQ(checkpoint->node_managers().front().second->blob_list(), first_lists);
}

// The seed's build_job (002_…txt) as a Job: node "reader", an init net holding the dataset and
// total, ReaderWithLimit(num_iter=3) piped into inc_total (a processor returning a net), a stop
// signal, and a fetcher task. It checkpoints every epoch through a MultiNodeCheckpointManager
// over minidb; a run resumed from a middle epoch in a fresh session ends with the same totals as
// the uninterrupted run, and the checkpoints it rewrites hold the same values.
TEST(SeedJob, build_job_checkpointed_and_resumed) {
  auto build_job = [] {
    BlobRef total;
    Job job;
    Node("reader", [&] {
      job.build([&](Job& j) {
        std::shared_ptr<Reader> full_reader;
        j.init_group([&] {
          Net init_net("init_net");
          std::vector<int64_t> vals(10);
          std::iota(vals.begin(), vals.end(), 0);
          Field data =
              schema::ConstRecord(init_net, schema::Struct({{"val", schema::Scalar(Tensor::vector<int64_t>(vals))}}));
          Dataset ds(data);
          full_reader = ds.reader({.init_net = init_net});
          total = init_net.Const({100});
          Task({}, init_net);
        });
        auto inc_total = [total](const Field& rec) {
          Net net("inc_total");
          net.op("Add", {total, rec["val"]()}, {total});
          return std::vector<Net>{net};
        };
        auto epoch_reader = std::make_shared<ReaderWithLimit>(full_reader, 3);
        pipe(epoch_reader, {.processor = Processor(inc_total, "inc_total")});
        j.add_stop_signal(epoch_reader->data_finished());
      });
    });
    // total_fetcher: one Task, run by both sessions (each compiles it; its output follows the
    // latest run).
    Task total_fetcher;
    Node("reader", [&] { total_fetcher = Task({.outputs = {TaskOutput(total)}}, Net("empty")); });
    return std::make_pair(job, total_fetcher);
  };
  auto [job, total_fetcher] = build_job();
  Task fetcher = total_fetcher;  // a plain variable: the lambda below captures it
  LocalSession uninterrupted, resumed;
  auto fetch = [&](LocalSession& s) {
    s.run(fetcher);
    return total_of(fetcher.outputs()[0]);
  };

  TempDir dir;
  auto cm = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  EXPECT_EQ(JobRunner(job, cm).train(uninterrupted), 4);
  EXPECT_EQ(fetch(uninterrupted), 145);
  std::vector<int64_t> per_epoch;
  for (int64_t e = 0; e <= 4; ++e) {
    TaskGroup load = cm->load(e);
    uninterrupted.run(load);
    per_epoch.push_back(fetch(uninterrupted));
  }
  EXPECT_EQ(per_epoch, (std::vector<int64_t>{100, 103, 115, 136, 145}));

  // A crash after epoch 2: a fresh process (session and manager) resumes from checkpoint 2.
  auto cm2 = std::make_shared<MultiNodeCheckpointManager>(dir.str(), "minidb");
  EXPECT_EQ(JobRunner(job, cm2, {.resume_from_epoch = 2}).train(resumed), 4);
  EXPECT_EQ(fetch(resumed), 145);
  for (int64_t e = 2; e <= 4; ++e) {
    TaskGroup load = cm2->load(e);
    resumed.run(load);
    EXPECT_EQ(fetch(resumed), per_epoch[static_cast<std::size_t>(e)]) << "epoch " << e;
  }
}

}  // namespace
}  // namespace moka
