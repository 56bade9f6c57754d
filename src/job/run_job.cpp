// run_job: JobRunner's flow over a JobDef, with committed checkpoints, resume, retention and
// background save (include/moka/job/run_job.h).
#include "moka/job/run_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "job/background_save.h"
#include "job/checkpoint_dir_lock.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/json.h"
#include "moka/exec/job_check.h"
#include "moka/job/checkpoint_manager.h"
#include "moka/session/run_task_group.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"

namespace moka {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The blob that lists what a node checkpoints: `<node>/blob_names`, as JobRunner's managers name it (decision 9),
// so both write the same files. Checkpoints written before list it as plain `blob_names` (still read).
std::string blob_list_name(const std::string& node) { return node + "/" + CheckpointManager::BLOB_NAMES; }
constexpr const char* kDefaultDbType = "minidb";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string node_db_path(const std::string& dir, const std::string& node, int64_t epoch) {
  return (fs::path(dir) / get_ckpt_filename(node, epoch)).string();  // Caffe2's db_name()
}

// What the manifests record of a job: a digest of its definition, so a resume with another job file
// is noticed (formatting and the file's name do not count: the parsed definition is digested).
std::string job_digest(const JobDef& job) {
  const std::string text = to_json(job, -1);
  return fmt::format("xxh3:{:016x}", xxh3_64(std::as_bytes(std::span<const char>(text.data(), text.size()))));
}

class JobRun {
 public:
  JobRun(const JobDef& job, NodeWorkspaces& nodes, const JobRunOptions& options)
      : job_(job), nodes_(nodes), opt_(options), ckpt_nodes_(job.checkpoint_nodes()) {}

  JobRunResult run() {
    validate();
    const bool checkpointing = !opt_.checkpoint_dir.empty();
    if (checkpointing) {
      dir_lock_.emplace(opt_.checkpoint_dir);
      result_.removed_temporaries = dir_lock_->removed_temporaries();
    }
    std::optional<int64_t> resume = checkpointing ? prepare_directory() : std::nullopt;
    if (!resume) {
      run_group(job_.init_group, "init_group");
      if (checkpointing) {
        capture_blob_lists();
        save_checkpoint(0, EpochReport{});
      }
    }
    bool finished = false;
    if (resume) {
      finished = load_checkpoint(*resume);
      result_.resumed_from = resume;
      if (!finished && !dir_lock_->writable())
        throw InvalidInput(
            fmt::format("checkpoint directory '{}' is read-only ({}): resuming from epoch {} would "
                        "save epoch {} there; only an epoch where the job finished can be resumed "
                        "from a read-only directory",
                        opt_.checkpoint_dir, dir_lock_->read_only_reason(), *resume, *resume + 1));
    }
    // Resuming from the epoch a stop condition ended: the loop is over (decision 13).
    int64_t epoch = resume ? (finished ? *resume : *resume + 1) : 1;
    std::unique_ptr<PreparedTaskGroup> epoch_group;
    if (!job_.epoch_group.nodes.empty() && !finished) {
      epoch_group = std::make_unique<PreparedTaskGroup>(job_.epoch_group, nodes_);
    }
    for (; !finished; ++epoch) {
      EpochReport report;
      report.epoch = epoch;
      const auto t0 = Clock::now();
      if (epoch_group) epoch_group->run(opt_.run);
      report.seconds = seconds_since(t0);
      throw_if_cancelled(fmt::format("epoch {}", epoch));
      report.stop = stop_requested();
      if (checkpointing) {
        save_checkpoint(epoch, report);
      } else if (opt_.on_epoch) {
        opt_.on_epoch(report);
      }
      if (report.stop) break;
    }
    wait_for_background_save();
    run_group(job_.download_group, "download_group");
    run_group(job_.exit_group, "exit_group");
    result_.last_epoch = epoch;
    return result_;
  }

 private:
  void validate() {
    if (job_.stop_conditions.empty()) throw InvalidInput("job has no stop_conditions: its epoch loop would never end");
    // Everything a definition can get wrong, in any group, before init_group runs: an unknown
    // operator in exit_group, a stop condition or nodes_to_checkpoint naming a node no group has.
    check_job(job_);
    if (!opt_.checkpoint_dir.empty()) {
      if (ckpt_nodes_.empty()) {
        throw InvalidInput("job checkpoints nothing: nodes_to_checkpoint is empty and init_group has no nodes");
      }
      if (!opt_.db_type.empty()) check_db_type(opt_.db_type);  // the directory is created when run() locks it
      for (const auto& node : ckpt_nodes_) check_checkpoint_node_name(node);
    } else if (opt_.resume_latest || opt_.resume_from_epoch) {
      throw InvalidInput("resuming needs a checkpoint directory");
    }
    if (opt_.resume_from_epoch && *opt_.resume_from_epoch < 0) {
      throw InvalidInput(fmt::format("resume epoch {} is negative", *opt_.resume_from_epoch));
    }
    if (opt_.retention.keep_last < 0 || opt_.retention.keep_every < 0) {
      throw InvalidInput("retention: keep_last and keep_every must be >= 0");
    }
  }

  void check_db_type(const std::string& type) const {
    const auto types = registered_db_types();
    std::string lower = type;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (auto t : types) {
      std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
      if (t == lower) return;
    }
    throw InvalidInput(fmt::format("unknown db_type '{}' (known: {})", type, fmt::join(types, ", ")));
  }

  // Decides, before anything runs, where the run starts (the one decision JobRunner makes too), and
  // fixes the backend: the resumed checkpoint's, else the one asked for, else minidb.
  std::optional<int64_t> prepare_directory() {
    ResumeRequest request{.epoch = opt_.resume_from_epoch,
                          .latest = opt_.resume_latest,
                          .existing = opt_.existing,
                          .nodes = ckpt_nodes_,
                          .db_type = opt_.db_type,
                          .job = job_digest(job_),
                          .accept_changed_job = opt_.accept_changed_job};
    if (!dir_lock_->writable() && request.existing == ExistingCheckpoints::discard)
      throw InvalidInput(fmt::format("checkpoint directory '{}' is read-only ({}): its checkpoints cannot be discarded",
                                     opt_.checkpoint_dir, dir_lock_->read_only_reason()));
    ResumeChoice choice = prepare_checkpoint_start(opt_.checkpoint_dir, request);
    if (!choice.epoch && !dir_lock_->writable())
      throw InvalidInput(
          fmt::format("checkpoint directory '{}' is read-only ({}): a run from scratch would save "
                      "there",
                      opt_.checkpoint_dir, dir_lock_->read_only_reason()));
    if (opt_.on_resume && (opt_.resume_latest || opt_.resume_from_epoch)) opt_.on_resume(choice);
    result_.skipped = choice.skipped;
    db_type_ = choice.manifest ? choice.manifest->db_type : opt_.db_type.empty() ? kDefaultDbType : opt_.db_type;
    resume_manifest_ = std::move(choice.manifest);
    return choice.epoch;
  }

  void run_group(const TaskGroupDef& group, std::string_view what) {
    if (group.nodes.empty()) return;
    try {
      run_task_group(group, nodes_, opt_.run);
    } catch (Error& e) {
      e.add_context(std::string(what));
      throw;
    }
    throw_if_cancelled(what);
  }

  void throw_if_cancelled(std::string_view where) {
    if (opt_.run.cancel && opt_.run.cancel->cancelled()) {
      throw Cancelled(fmt::format("job cancelled during {}", where));
    }
  }

  bool stop_requested() {
    bool stop = false;
    for (const auto& c : job_.stop_conditions) {
      Workspace* ws = nodes_.find(c.node);
      const Blob* blob = ws ? ws->get_blob(c.blob) : nullptr;
      if (!blob) {
        throw InvalidInput(fmt::format("stop condition: node '{}' has no blob '{}' after the epoch", c.node, c.blob));
      }
      if (!blob->is_type<Tensor>()) {
        throw TypeError(fmt::format("stop condition '{}' on node '{}' holds {}, expected a one-element tensor", c.blob,
                                    c.node, blob->type_name()));
      }
      const Tensor& t = blob->get<Tensor>();
      if (t.numel() != 1 || t.dtype() == DType::String) {
        throw TypeError(fmt::format("stop condition '{}' on node '{}' must be a one-element bool or numeric tensor",
                                    c.blob, c.node));
      }
      const bool value = visit_dtype(t.dtype(), [&](auto tag) -> bool {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, std::string>) {
          return false;  // refused above
        } else {
          return t.item<T>() != T{};
        }
      });
      stop = stop || value;  // Caffe2: any(fetched values)
    }
    return stop;
  }

  // After init_group: each checkpointed node saves the local blobs it holds now, listed in blob_names.
  void capture_blob_lists() {
    for (const auto& node : ckpt_nodes_) {
      Workspace& ws = nodes_.node(node);
      const std::string list_name = blob_list_name(node);
      std::vector<std::string> names = ws.local_blobs();
      if (std::find(names.begin(), names.end(), list_name) == names.end()) names.push_back(list_name);
      std::sort(names.begin(), names.end());  // deterministic files (Caffe2's order is unspecified)
      Tensor& list = ws.create_blob(list_name)->get_mutable<Tensor>();
      list.resize(DType::String, {static_cast<int64_t>(names.size())});
      std::copy(names.begin(), names.end(), list.mutable_data<std::string>());
      blob_lists_[node] = std::move(names);
    }
  }

  // Loads every checkpointed node of `epoch`; returns whether the job had finished at that epoch.
  bool load_checkpoint(int64_t epoch) {
    const CheckpointManifest& m = resume_manifest_.value();  // verified by prepare_directory
    if (m.epoch != epoch)
      throw RuntimeError(fmt::format("internal: resume manifest is epoch {}, not {}", m.epoch, epoch));
    for (const auto& node : ckpt_nodes_) {
      auto it = std::find_if(m.files.begin(), m.files.end(), [&](const CheckpointFile& f) { return f.node == node; });
      if (it == m.files.end()) {
        throw NotFound(
            fmt::format("checkpoint epoch {} has no file for node '{}' (it has {})", epoch, node, m.files.size()));
      }
      Workspace& ws = nodes_.node(node);
      LoadSpec spec;
      spec.dbs = {checkpoint_db_path(opt_.checkpoint_dir, *it)};
      spec.db_type = m.db_type;
      spec.absolute_path = true;
      spec.load_all = true;
      try {
        load_blobs(ws, spec);
        const Blob* list = ws.get_blob(blob_list_name(node));
        if (!list) list = ws.get_blob(CheckpointManager::BLOB_NAMES);  // written before the name had its node
        if (!list || !list->is_type<Tensor>() || list->get<Tensor>().dtype() != DType::String) {
          throw CorruptData(
              fmt::format("checkpoint '{}' has no string tensor '{}'", spec.dbs.front(), blob_list_name(node)));
        }
        const Tensor& t = list->get<Tensor>();
        blob_lists_[node].assign(t.data<std::string>(), t.data<std::string>() + t.numel());
      } catch (Error& e) {
        e.add_context(fmt::format("loading checkpoint epoch {} of node '{}'", epoch, node));
        throw;
      }
    }
    return m.stop;
  }

  // Saves and commits `epoch` (in the foreground, or snapshots it for the background writer).
  void save_checkpoint(int64_t epoch, EpochReport report) {
    report.epoch = epoch;
    report.checkpointed = true;
    const auto t0 = Clock::now();
    // The previous epoch's save reports its own failure, under its own epoch, before this one
    // starts (inside the try below it would be re-wrapped as this epoch's failure).
    wait_for_background_save();
    try {
      // A manifest an earlier run left for this epoch (a resume from an older epoch, or one that
      // did not verify) stops counting before its files are overwritten.
      uncommit_checkpoint(opt_.checkpoint_dir, epoch);
      if (opt_.background_save) {
        background_.discard();  // what a failed snapshot of an earlier epoch left
        for (const auto& node : ckpt_nodes_) {
          report.checkpoint_bytes += background_.snapshot(node, node_db_path(opt_.checkpoint_dir, node, epoch),
                                                          nodes_.node(node), blob_lists_.at(node));
        }
        report.background = true;
        background_bytes_ = report.checkpoint_bytes;
        background_.start(epoch, db_type_, [this, epoch, stop = report.stop] { commit(epoch, stop); });
      } else {
        for (const auto& node : ckpt_nodes_) {
          SaveSpec spec;
          spec.blob_names = blob_lists_.at(node);
          spec.db = node_db_path(opt_.checkpoint_dir, node, epoch);
          spec.db_type = db_type_;
          spec.absolute_path = true;
          report.checkpoint_bytes += save_blobs(nodes_.node(node), spec).bytes;
        }
        commit(epoch, report.stop);
      }
    } catch (const Cancelled&) {
      throw;
    } catch (const Error& e) {
      on_save_failure(epoch, e.what());
    }
    report.checkpoint_seconds = seconds_since(t0);
    if (opt_.on_epoch) opt_.on_epoch(report);
  }

  void commit(int64_t epoch, bool stop) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& node : ckpt_nodes_) files.emplace_back(node, node_db_path(opt_.checkpoint_dir, node, epoch));
    commit_checkpoint(opt_.checkpoint_dir, epoch, db_type_, files, stop, job_digest(job_));
    auto deleted = apply_retention(opt_.checkpoint_dir, opt_.retention);
    std::lock_guard lock(deleted_mu_);
    result_.deleted_epochs.insert(result_.deleted_epochs.end(), deleted.begin(), deleted.end());
  }

  // Waits for the save in flight, if any, and reports it to on_checkpoint_written (outside the try:
  // an exception of the callback is not a failed save).
  void wait_for_background_save() {
    if (!background_.in_flight()) return;
    CheckpointWritten written{.epoch = background_.epoch(), .bytes = background_bytes_};
    try {
      background_.wait();
      for (const auto& [db, ns] : background_.write_ns()) {
        const double seconds = static_cast<double>(ns) / 1e9;
        written.write_seconds += seconds;
        written.node_write_seconds.emplace_back(node_of_db(written.epoch, db), seconds);
      }
    } catch (const Error& e) {
      on_save_failure(written.epoch, e.what());  // throws unless tolerated
      written.ok = false;
      written.error = result_.save_errors.back();
    }
    if (opt_.on_checkpoint_written) opt_.on_checkpoint_written(written);
  }

  // The checkpointed node whose DB of `epoch` is `db` (the path itself should none match).
  std::string node_of_db(int64_t epoch, const std::string& db) const {
    for (const auto& node : ckpt_nodes_) {
      if (node_db_path(opt_.checkpoint_dir, node, epoch) == db) return node;
    }
    return db;
  }

  void on_save_failure(int64_t epoch, const std::string& what) {
    std::string message = fmt::format("Unable to write checkpoint for epoch {}. Error={}", epoch, what);
    if (!opt_.tolerate_save_failures) throw RuntimeError(std::move(message));
    result_.save_errors.push_back(std::move(message));
  }

  const JobDef& job_;
  NodeWorkspaces& nodes_;
  const JobRunOptions& opt_;
  const std::vector<std::string> ckpt_nodes_;
  std::map<std::string, std::vector<std::string>> blob_lists_;
  std::optional<CheckpointManifest> resume_manifest_;
  std::string db_type_ = kDefaultDbType;  // the checkpoint backend, fixed by prepare_directory()
  uint64_t background_bytes_ = 0;         // the snapshot bytes of the save in flight
  JobRunResult result_;
  std::mutex deleted_mu_;
  std::optional<detail::CheckpointDirLock> dir_lock_;  // before background_: held until the last save is done
  detail::BackgroundSave background_;  // last: its destructor waits for a save that uses the members above
};

}  // namespace

JobRunResult run_job(const JobDef& job, NodeWorkspaces& nodes, const JobRunOptions& options) {
  return JobRun(job, nodes, options).run();
}

}  // namespace moka
