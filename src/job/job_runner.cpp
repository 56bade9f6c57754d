// JobRunner: Caffe2's training flow (docs/jobs.md §2) on the one job engine — the groups run in a
// Session and the node DBs are written and read by the checkpoint manager's task groups.
#include "moka/job/job_runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "job/job_engine.h"
#include "job/process_agreement.h"
#include "moka/core/error.h"
#include "moka/exec/job_check.h"
#include "moka/session/session.h"

namespace moka {

namespace {

// The directory a checkpoint DB path lies in ("." for a bare name).
std::string db_dir(const std::string& db) {
  const std::string dir = std::filesystem::path(db).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

// A Job's groups, run in a Session; the upload group (when a builder is given) before the download group.
class SessionGroups final : public detail::JobGroupRunner {
 public:
  SessionGroups(Job& job, Session& session, CheckpointManagerBase* cm, UploadTaskGroupBuilder* upload)
      : job_(job), session_(session), cm_(cm), upload_(upload) {}

  void run(detail::JobGroup group, int64_t /*epoch*/) override {
    switch (group) {
      case detail::JobGroup::init:
        return session_.run(job_.init_group());
      case detail::JobGroup::epoch:
        return session_.run(job_.epoch_group());
      case detail::JobGroup::download:
        return session_.run(job_.download_group());
      case detail::JobGroup::exit:
        return session_.run(job_.exit_group());
    }
  }

  bool stop_requested() override {
    bool stop = false;
    for (const TaskOutput& o : job_.stop_conditions()) {
      const std::string name = o.names().empty() ? std::string("?") : o.names().front();
      stop = detail::stop_condition_holds(o.fetch(), fmt::format("\"{}\"", name)) || stop;
    }
    return stop;
  }

  void before_download(int64_t last_epoch) override {
    if (!upload_) return;
    TaskGroup upload = upload_->build(last_epoch, cm_);
    session_.run(upload);
  }

 private:
  Job& job_;
  Session& session_;
  CheckpointManagerBase* cm_;
  UploadTaskGroupBuilder* upload_;
};

// The (node, DB path) pairs of epoch's checkpoint.
std::vector<std::pair<std::string, std::string>> checkpoint_files(const CheckpointManagerBase& cm, int64_t epoch) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& node : cm.node_names()) {
    const std::optional<std::string> db = cm.get_ckpt_db_name(node, epoch);
    if (!db) throw InvalidInput(fmt::format("JobRunner: the checkpoint manager has no DB for node \"{}\"", node));
    files.emplace_back(node, *db);
  }
  return files;
}

// Node DBs written and read by the manager's task groups (Caffe2's CheckpointManager interface),
// its metadata handler told of every save and load.
class ManagerStore final : public detail::JobCheckpointStore {
 public:
  ManagerStore(CheckpointManagerBase& cm, Session& session, std::vector<std::string> nodes,
               std::function<void(const std::string&)> on_failure)
      : cm_(cm), session_(session), nodes_(std::move(nodes)), on_failure_(std::move(on_failure)) {}

  std::vector<std::pair<std::string, std::string>> files(int64_t epoch) override {
    return checkpoint_files(cm_, epoch);
  }
  bool hosts(const std::string& node) override { return session_.hosts(node); }
  std::optional<int64_t> resume_epoch(std::optional<int64_t> asked) override {
    return cm_.get_resume_from_epoch_id(asked);
  }
  void capture_blob_lists() override { init(std::nullopt); }
  void read(const CheckpointManifest& manifest) override {
    init(manifest.epoch);
    TaskGroup load = cm_.load_task_group(manifest.epoch, std::nullopt, std::nullopt);
    session_.run(load);
    cm_.report_checkpoint_stats("checkpoint_load");
  }
  uint64_t write(int64_t epoch, const std::string& /*db_type: the manager's own*/) override {
    TaskGroup save = cm_.save_task_group(epoch);
    session_.run(save);
    return 0;  // the save task reports its time, not its bytes
  }
  bool accessible() override { return cm_.cp_accessible(std::nullopt); }
  const Workspace& workspace(const std::string& node) override { return session_.workspace(node); }
  std::vector<std::string> blob_names(const std::string& node) override { return cm_.blob_names_of(node); }
  void saved(int64_t epoch, const CheckpointStats* background) override {
    cm_.write_checkpoint_metadata(epoch);
    if (background) {
      cm_.report_stats("checkpoint_save", *background);  // the writer's own timings (no save task ran)
    } else {
      cm_.report_checkpoint_stats("checkpoint_save");
    }
  }
  void save_failed(int64_t /*epoch*/, const std::string& what, const std::string& /*message*/) override {
    on_failure_(what);
  }

 private:
  // The manager's init group: the blob lists computed (from scratch) or loaded (resuming); then the
  // directories the DBs go to (Caffe2's minidb needed them; one that cannot be made fails the first
  // save, naming the file: decision 8).
  void init(std::optional<int64_t> epoch) {
    TaskGroup init = cm_.init_task_group(nodes_, epoch);
    session_.run(init);
    for (const auto& node : cm_.node_names()) {
      const std::optional<std::string> db = cm_.get_ckpt_db_name(node, 0);
      if (!db) continue;
      std::error_code ec;
      std::filesystem::create_directories(db_dir(*db), ec);
    }
  }

  CheckpointManagerBase& cm_;
  Session& session_;
  const std::vector<std::string> nodes_;
  std::function<void(const std::string&)> on_failure_;
};

}  // namespace

JobRunner::JobRunner(Job job, std::shared_ptr<CheckpointManagerBase> checkpoint_manager, JobRunnerOptions options)
    : job_(std::move(job)), checkpoint_manager_(std::move(checkpoint_manager)), options_(std::move(options)) {}

JobRunner::~JobRunner() = default;
JobRunner::JobRunner(JobRunner&&) noexcept = default;
JobRunner& JobRunner::operator=(JobRunner&&) noexcept = default;

void JobRunner::log(std::string_view message) const {
  if (options_.log) {
    options_.log(message);
  } else {
    fmt::print(stderr, "moka JobRunner: {}\n", message);
  }
}

int64_t JobRunner::train(Session& session) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  if (!cm && options_.resume_latest)
    throw InvalidInput("JobRunner: cannot resume from the latest epoch without a checkpoint manager");
  if (!cm && options_.resume_from_epoch)
    throw InvalidInput(fmt::format("JobRunner: cannot resume from epoch {} without a checkpoint manager",
                                   *options_.resume_from_epoch));
  if (options_.resume_from_epoch && *options_.resume_from_epoch < 0)
    throw InvalidInput(fmt::format("JobRunner: resume_from_epoch must be >= 0, got {}", *options_.resume_from_epoch));
  if (job_.stop_conditions().empty())
    throw InvalidInput(
        "JobRunner: the job has no stop condition, so its epoch group would run forever "
        "(add one with Job::add_stop_condition or epoch_limiter)");
  const std::vector<std::string> nodes = job_.nodes_to_checkpoint();
  check_nodes_to_checkpoint(nodes);
  check_groups(session);
  // Every node gets its process before anything runs or loads: where a run from scratch puts it.
  for (TaskGroup* g : {&job_.init_group(), &job_.epoch_group(), &job_.download_group(), &job_.exit_group()})
    session.place(session.compile(*g));
  // One engine for every job (detail::run_job_engine): what differs from run_job is how the groups
  // run (in the session) and how node DBs are written and read (the manager's task groups).
  JobRunOptions run;
  std::optional<ManagerStore> store;
  if (cm) {
    cm->set_params(nodes);
    run.checkpoint_dir = checkpoint_dir();
    run.db_type = cm->db_type();
    store.emplace(*cm, session, nodes, [this](const std::string& what) {
      ++save_failures_;
      last_save_error_ = what;
    });
  }
  run.resume_from_epoch = options_.resume_from_epoch;
  run.resume_latest = options_.resume_latest;
  run.existing = options_.existing;
  run.retention = options_.retention;
  run.background_save = options_.background_save;
  run.tolerate_save_failures = options_.tolerate_save_failures;
  SessionGroups groups(job_, session, cm, options_.upload_task_group_builder.get());
  detail::ProcessAgreement agreement(session);
  detail::JobEngineSettings settings;
  settings.own_directory = false;
  std::unique_ptr<ProcessChannel> channel;  // the background writer's own, across processes
  std::optional<detail::ProcessAgreement> background;
  if (cm && session.processes() > 1) {
    settings.processes = &agreement;
    if (options_.background_save) {
      channel = session.open_channel();
      background.emplace(*channel);
      settings.background_processes = &*background;
    }
  }
  settings.log = [this](std::string_view message) { log(message); };
  return detail::run_job_engine(groups, store ? &*store : nullptr, run, settings).last_epoch;
}

void JobRunner::check_nodes_to_checkpoint(const std::vector<std::string>& nodes) {
  std::vector<std::string> used;
  for (const TaskGroup* g : {&job_.init_group(), &job_.epoch_group(), &job_.download_group(), &job_.exit_group()})
    for (auto& n : g->used_nodes()) used.push_back(std::move(n));
  for (const auto& node : nodes) {
    check_checkpoint_node_name(node);
    if (std::find(used.begin(), used.end(), node) == used.end())
      throw InvalidInput(
          fmt::format("JobRunner: nodes_to_checkpoint names node \"{}\", which has no task in any "
                      "group of the job (nodes with tasks: {}); it would checkpoint an empty workspace",
                      node, used.empty() ? std::string("none") : fmt::format("{}", fmt::join(used, ", "))));
  }
}

void JobRunner::check_groups(Session& session) {
  const std::pair<TaskGroup*, const char*> groups[] = {{&job_.init_group(), "init_group"},
                                                       {&job_.epoch_group(), "epoch_group"},
                                                       {&job_.download_group(), "download_group"},
                                                       {&job_.exit_group(), "exit_group"}};
  for (const auto& [group, name] : groups) {
    try {
      check_task_group(session.compile(*group));
    } catch (Error& e) {
      e.add_context(fmt::format("JobRunner: {}", name));
      throw;
    }
  }
}

std::string JobRunner::checkpoint_dir() const {
  const CheckpointManagerBase& cm = *checkpoint_manager_;
  const std::vector<std::string> nodes = cm.node_names();
  if (nodes.empty()) throw InvalidInput("JobRunner: the checkpoint manager has no nodes (nothing to checkpoint)");
  const std::optional<std::string> db = cm.get_ckpt_db_name(nodes.front(), 0);
  if (!db)
    throw InvalidInput(fmt::format("JobRunner: the checkpoint manager has no DB for node \"{}\"", nodes.front()));
  return db_dir(*db);
}

bool JobRunner::load_blobs_from_checkpoints(const std::vector<std::string>& blob_names, int64_t epoch,
                                            Session& session) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  if (!cm)
    throw InvalidInput(
        "JobRunner.load_blobs_from_checkpoints: Checkpoint manager is None (the runner was built without one)");
  const bool result = cm->load_blobs_locally(job_.nodes_to_checkpoint(), blob_names, epoch, session);
  cm->report_checkpoint_stats("checkpoint_partial_load");
  return result;
}

}  // namespace moka
