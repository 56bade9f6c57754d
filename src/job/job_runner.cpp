// JobRunner: Caffe2's training flow (docs/jobs.md §2) with decision 8 for failed saves.
#include "moka/job/job_runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "job/background_save.h"
#include "job/checkpoint_dir_lock.h"
#include "moka/core/dtype.h"
#include "moka/core/error.h"
#include "moka/exec/job_check.h"
#include "moka/session/local_session.h"
#include "moka/session/session.h"

namespace moka {

namespace {

// The directory a checkpoint DB path lies in ("." for a bare name).
std::string db_dir(const std::string& db) {
  const std::string dir = std::filesystem::path(db).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

// Python's truth value of a fetched stop condition: one element, bool or number.
bool truth_of(const TaskOutput& output) {
  const Tensor t = output.fetch();
  const std::string name = output.names().empty() ? std::string("?") : output.names().front();
  if (t.numel() != 1)
    throw InvalidInput(fmt::format("JobRunner: stop condition \"{}\" must hold one value, got {}", name, t.describe()));
  switch (t.dtype()) {
    case DType::Bool:
      return t.item<bool>();
    case DType::Int32:
      return t.item<int32_t>() != 0;
    case DType::Int64:
      return t.item<int64_t>() != 0;
    case DType::Float:
      return t.item<float>() != 0;
    case DType::Double:
      return t.item<double>() != 0;
    default:
      throw InvalidInput(
          fmt::format("JobRunner: stop condition \"{}\" must be a bool or a number, got {}", name, t.describe()));
  }
}

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

namespace {

// Takes `dir` for this training (DIR/moka.lock, as run_job does) when the directory exists or can be
// made. One that cannot is left unlocked: every save there fails and counts as a failed save
// (decision 8; Caffe2's test_ckpt_save_failure finishes its job that way). Unlike run_job, the
// temporary files of killed writers stay: a db_prefix may name a directory shared with other files.
std::unique_ptr<detail::CheckpointDirLock> lock_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec)) return nullptr;
  return std::make_unique<detail::CheckpointDirLock>(dir, /*remove_temporaries=*/false);
}

}  // namespace

int64_t JobRunner::train(Session& session) {
  // train_epochs() takes the checkpoint directory; it is released when train() returns, after any
  // background save settled.
  struct Unlock {
    std::unique_ptr<detail::CheckpointDirLock>& lock;
    ~Unlock() { lock.reset(); }
  } unlock{dir_lock_};
  try {
    return train_epochs(session);
  } catch (...) {
    // A save still in flight must not outlive the failed run (nor be reported as this failure).
    if (background_) background_->settle();
    throw;
  }
}

int64_t JobRunner::train_epochs(Session& session) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  if (!cm && options_.resume_latest)
    throw InvalidInput("JobRunner: cannot resume from the latest epoch without a checkpoint manager");
  if (!cm && options_.resume_from_epoch)
    throw InvalidInput(fmt::format("JobRunner: cannot resume from epoch {} without a checkpoint manager",
                                   *options_.resume_from_epoch));
  if (job_.stop_conditions().empty())
    throw InvalidInput(
        "JobRunner: the job has no stop condition, so its epoch group would run forever "
        "(add one with Job::add_stop_condition or epoch_limiter)");
  const std::vector<std::string> nodes = job_.nodes_to_checkpoint();
  check_nodes_to_checkpoint(nodes);
  check_groups(session);
  std::optional<int64_t> resume_from_epoch = options_.resume_from_epoch;
  if (cm) {
    cm->set_params(nodes);
    if (!nodes.empty()) dir_lock_ = lock_checkpoint_dir(checkpoint_dir());  // one training per directory
    // The same start decision run_job makes (prepare_checkpoint_start), before anything runs.
    ResumeRequest request{.latest = options_.resume_latest && !resume_from_epoch,
                          .existing = options_.existing,
                          .nodes = cm->node_names(),
                          .db_type = cm->db_type()};
    bool prepared = false;
    if (request.latest) {
      ResumeChoice choice = prepare_checkpoint_start(checkpoint_dir(), request);
      for (const auto& [e, why] : choice.skipped) log(fmt::format("skipping checkpoint epoch {}: {}", e, why));
      resume_from_epoch = choice.epoch;
      verified_ = std::move(choice.manifest);
      prepared = true;
    }
    resume_from_epoch = cm->get_resume_from_epoch_id(resume_from_epoch);
    if (resume_from_epoch && *resume_from_epoch < 0)
      throw InvalidInput(fmt::format("JobRunner: resume_from_epoch must be >= 0, got {}", *resume_from_epoch));
    if (resume_from_epoch && !(verified_ && verified_->epoch == *resume_from_epoch)) {
      request.latest = false;
      request.epoch = resume_from_epoch;
      verified_ = prepare_checkpoint_start(checkpoint_dir(), request).manifest;
    } else if (!resume_from_epoch && !prepared) {
      (void)prepare_checkpoint_start(checkpoint_dir(), request);
    }
  }
  // Background saves snapshot the node workspaces, which only a LocalSession has.
  LocalSession* local = nullptr;
  if (cm && options_.background_save) {
    local = dynamic_cast<LocalSession*>(&session);
    if (!local)
      throw InvalidInput("JobRunner: background_save needs a LocalSession (it snapshots the node workspaces)");
  }
  if (resume_from_epoch && *resume_from_epoch < 0)
    throw InvalidInput(fmt::format("JobRunner: resume_from_epoch must be >= 0, got {}", *resume_from_epoch));
  const bool from_scratch = !resume_from_epoch.has_value();
  if (from_scratch) session.run(job_.init_group());
  bool finished = false;
  if (cm) {
    TaskGroup init = cm->init_task_group(nodes, resume_from_epoch);
    session.run(init);
    make_checkpoint_dirs();
    if (from_scratch) {
      save_checkpoints(0, session, false, local);
    } else {
      finished = load_checkpoint(*resume_from_epoch, session);
    }
  }
  // Decision 13: resuming from the epoch a stop condition ended runs no further epoch.
  int64_t epoch = from_scratch ? 1 : (finished ? *resume_from_epoch : *resume_from_epoch + 1);
  while (!finished) {
    session.run(job_.epoch_group());
    // Fetched right after the epoch, before the save: Caffe2's order.
    bool stop = false;
    for (const TaskOutput& o : job_.stop_conditions()) stop = truth_of(o) || stop;
    if (cm) save_checkpoints(epoch, session, stop, local);
    if (stop) break;
    ++epoch;
  }
  finish_background_save();
  if (options_.upload_task_group_builder) {
    TaskGroup upload = options_.upload_task_group_builder->build(epoch, cm);
    session.run(upload);
  }
  session.run(job_.download_group());
  session.run(job_.exit_group());
  return epoch;
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
  auto* local = dynamic_cast<LocalSession*>(&session);
  if (!local) return;
  const std::pair<TaskGroup*, const char*> groups[] = {{&job_.init_group(), "init_group"},
                                                       {&job_.epoch_group(), "epoch_group"},
                                                       {&job_.download_group(), "download_group"},
                                                       {&job_.exit_group(), "exit_group"}};
  for (const auto& [group, name] : groups) {
    try {
      check_task_group(local->compile(*group));
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

void JobRunner::make_checkpoint_dirs() const {
  // Every node's DB directory (a path_prefix may put nodes apart). Best effort: one that cannot be
  // made fails the first save, naming the file (decision 8).
  const CheckpointManagerBase& cm = *checkpoint_manager_;
  for (const auto& node : cm.node_names()) {
    const std::optional<std::string> db = cm.get_ckpt_db_name(node, 0);
    if (!db) continue;
    std::error_code ec;
    std::filesystem::create_directories(db_dir(*db), ec);
  }
}

namespace {

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

}  // namespace

void JobRunner::save_checkpoints(int64_t epoch, Session& session, bool stop, LocalSession* local) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  if (!cm) throw InvalidInput("JobRunner.save_checkpoints: Checkpoint manager is None (no checkpoint manager given)");
  if (local) {
    save_in_background(epoch, *local, stop);
    return;
  }
  try {
    if (cm->cp_accessible(std::nullopt)) {
      // An epoch an earlier run committed (this run resumed from an older one) stops counting
      // before the save group overwrites its DBs.
      const std::string dir = checkpoint_dir();
      uncommit_checkpoint(dir, epoch);
      TaskGroup save = cm->save_task_group(epoch);
      session.run(save);
      // Commit: every node DB read back and digested, then the manifest written atomically.
      commit_checkpoint(dir, epoch, cm->db_type(), checkpoint_files(*cm, epoch), stop);
      for (int64_t deleted : apply_retention(dir, options_.retention))
        log(fmt::format("retention: deleted checkpoint epoch {}", deleted));
      cm->write_checkpoint_metadata(epoch);
      cm->report_checkpoint_stats("checkpoint_save");
    } else {
      log(fmt::format("Checkpoint files cannot be accessed! (epoch {} not saved)", epoch));
    }
  } catch (const std::exception& e) {
    on_save_failure(epoch, e.what());
  }
}

void JobRunner::save_in_background(int64_t epoch, LocalSession& session, bool stop) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  // The previous epoch's save reports its own failure, under its own epoch, before this one starts.
  finish_background_save();
  try {
    if (!cm->cp_accessible(std::nullopt)) {
      log(fmt::format("Checkpoint files cannot be accessed! (epoch {} not saved)", epoch));
      return;
    }
    const std::string dir = checkpoint_dir();
    uncommit_checkpoint(dir, epoch);
    if (!background_) background_ = std::make_unique<detail::BackgroundSave>();
    background_->discard();  // what a failed snapshot of an earlier epoch left
    auto files = checkpoint_files(*cm, epoch);
    for (const auto& [node, db] : files)
      background_->snapshot(node, db, session.workspaces().node(node), cm->blob_names_of(node));
    // The writer thread touches only the snapshots, the files and background_deleted_ (read after
    // wait()); the manager, its metadata handler and the log stay on this thread.
    background_deleted_.clear();
    background_->start(epoch, cm->db_type(), [this, dir, epoch, stop, files = std::move(files), type = cm->db_type()] {
      commit_checkpoint(dir, epoch, type, files, stop);
      background_deleted_ = apply_retention(dir, options_.retention);
    });
  } catch (const std::exception& e) {
    on_save_failure(epoch, e.what());
  }
}

void JobRunner::finish_background_save() {
  if (!background_ || !background_->in_flight()) return;
  const int64_t epoch = background_->epoch();
  try {
    background_->wait();
  } catch (const std::exception& e) {
    on_save_failure(epoch, e.what());
    return;
  }
  for (int64_t deleted : background_deleted_) log(fmt::format("retention: deleted checkpoint epoch {}", deleted));
  checkpoint_manager_->write_checkpoint_metadata(epoch);
  // The foreground save's report, with the writer's own timings (the save group's timed task did not run).
  const auto& timings = background_->write_ns();
  checkpoint_manager_->report_stats("checkpoint_save", CheckpointStats(timings.begin(), timings.end()));
}

void JobRunner::on_save_failure(int64_t epoch, const std::string& what) {
  ++save_failures_;
  last_save_error_ = what;
  log(fmt::format("Unable to write checkpoint for epoch {}. Error={}", epoch, what));
  if (!options_.tolerate_save_failures) throw;
}

bool JobRunner::load_checkpoint(int64_t epoch, Session& session) {
  CheckpointManagerBase* cm = checkpoint_manager_.get();
  if (!cm) throw InvalidInput("JobRunner.load_checkpoint: Checkpoint manager is None (no checkpoint manager given)");
  // Only a committed epoch whose files all verify is resumed from (train() verified it already).
  const CheckpointManifest manifest = verified_ && verified_->epoch == epoch
                                          ? *verified_
                                          : verify_checkpoint(checkpoint_dir(), epoch, cm->node_names());
  verified_.reset();
  TaskGroup load = cm->load_task_group(epoch, std::nullopt, std::nullopt);
  session.run(load);
  cm->report_checkpoint_stats("checkpoint_load");
  return manifest.stop;
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
