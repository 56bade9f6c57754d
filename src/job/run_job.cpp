// run_job: a JobDef run by the job engine through a Session — the session runs its groups and reads
// its stop conditions; each node's checkpoint DB is written and read directly (include/moka/job/run_job.h).
#include "moka/job/run_job.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "job/job_engine.h"
#include "job/process_agreement.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/json.h"
#include "moka/exec/job_check.h"
#include "moka/job/checkpoint_manager.h"
#include "moka/session/local_session.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// The blob that lists what a node checkpoints: `<node>/blob_names`, as JobRunner's managers name it (decision 9),
// so both write the same files. Checkpoints written before list it as plain `blob_names` (still read).
std::string blob_list_name(const std::string& node) { return node + "/" + CheckpointManager::BLOB_NAMES; }

std::string node_db_path(const std::string& dir, const std::string& node, int64_t epoch) {
  return (fs::path(dir) / get_ckpt_filename(node, epoch)).string();  // Caffe2's db_name()
}

// What the manifests record of a job: a digest of its definition, so a resume with another job file
// is noticed (formatting and the file's name do not count: the parsed definition is digested).
std::string job_digest(const JobDef& job) {
  const std::string text = to_json(job, -1);
  return fmt::format("xxh3:{:016x}", xxh3_64(std::as_bytes(std::span<const char>(text.data(), text.size()))));
}

void check_db_type(const std::string& type) {
  const auto types = registered_db_types();
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (auto t : types) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t == lower) return;
  }
  throw InvalidInput(fmt::format("unknown db_type '{}' (known: {})", type, fmt::join(types, ", ")));
}

// Everything a definition or the options can get wrong, before anything runs.
void validate(const JobDef& job, const JobRunOptions& opt) {
  if (job.stop_conditions.empty()) throw InvalidInput("job has no stop_conditions: its epoch loop would never end");
  // In any group, before init_group runs: an unknown operator in exit_group, a stop condition or
  // nodes_to_checkpoint naming a node no group has.
  check_job(job);
  if (!opt.checkpoint_dir.empty()) {
    if (job.checkpoint_nodes().empty())
      throw InvalidInput("job checkpoints nothing: nodes_to_checkpoint is empty and init_group has no nodes");
    if (!opt.db_type.empty()) check_db_type(opt.db_type);  // the directory is created when the run locks it
    for (const auto& node : job.checkpoint_nodes()) check_checkpoint_node_name(node);
  } else if (opt.resume_latest || opt.resume_from_epoch) {
    throw InvalidInput("resuming needs a checkpoint directory");
  }
  if (opt.resume_from_epoch && *opt.resume_from_epoch < 0)
    throw InvalidInput(fmt::format("resume epoch {} is negative", *opt.resume_from_epoch));
  if (opt.retention.keep_last < 0 || opt.retention.keep_every < 0)
    throw InvalidInput("retention: keep_last and keep_every must be >= 0");
}

// The groups of a JobDef, run in a session (each definition prepared by the session's first run of it).
class JobDefGroups final : public detail::JobGroupRunner {
 public:
  JobDefGroups(const JobDef& job, Session& session, const RunOptions& run) : job_(job), session_(session), run_(run) {}

  void run(detail::JobGroup group, int64_t epoch) override {
    switch (group) {
      case detail::JobGroup::init:
        return run_group(job_.init_group, "init_group");
      case detail::JobGroup::epoch:
        if (job_.epoch_group.nodes.empty()) break;
        session_.run(job_.epoch_group);
        break;
      case detail::JobGroup::download:
        return run_group(job_.download_group, "download_group");
      case detail::JobGroup::exit:
        return run_group(job_.exit_group, "exit_group");
    }
    throw_if_cancelled(fmt::format("epoch {}", epoch));
  }

  bool stop_requested() override {
    bool stop = false;
    for (const auto& c : job_.stop_conditions) {
      const std::string what = fmt::format("'{}' on node '{}'", c.blob, c.node);
      Tensor value;
      try {
        value = session_.fetch(c.node, c.blob);  // collective where the nodes span processes
      } catch (const NotFound&) {
        throw InvalidInput(fmt::format("stop condition: node '{}' has no blob '{}' after the epoch", c.node, c.blob));
      } catch (TypeError& e) {
        e.add_context(fmt::format("stop condition {}", what));
        throw;
      }
      stop = detail::stop_condition_holds(value, what) || stop;  // Caffe2: any(fetched values)
    }
    return stop;
  }

 private:
  void run_group(const TaskGroupDef& group, std::string_view what) {
    if (group.nodes.empty()) return;
    try {
      session_.run(group);
    } catch (Error& e) {
      e.add_context(std::string(what));
      throw;
    }
    throw_if_cancelled(what);
  }

  // In one process a cancelled plan may end without an error; across processes the session's run
  // itself throws Cancelled on every process (a check of one process's token here would leave the
  // others waiting in the next group).
  void throw_if_cancelled(std::string_view where) const {
    if (session_.processes() == 1 && run_.cancel && run_.cancel->cancelled())
      throw Cancelled(fmt::format("job cancelled during {}", where));
  }

  const JobDef& job_;
  Session& session_;
  const RunOptions& run_;
};

// Each checkpointed node's DB `<dir>/<node>.<epoch>` written and read with save_blobs/load_blobs;
// the blobs a node checkpoints are those its workspace held after init_group, listed in the DB.
class NodeStore final : public detail::JobCheckpointStore {
 public:
  NodeStore(const JobDef& job, Session& session, std::string dir)
      : session_(session), dir_(std::move(dir)), ckpt_nodes_(job.checkpoint_nodes()) {}

  std::vector<std::pair<std::string, std::string>> files(int64_t epoch) override {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& node : ckpt_nodes_) files.emplace_back(node, node_db_path(dir_, node, epoch));
    return files;
  }

  bool hosts(const std::string& node) override { return session_.hosts(node); }

  void capture_blob_lists() override {
    for (const auto& node : ckpt_nodes_) {
      if (!session_.hosts(node)) continue;
      Workspace& ws = session_.workspace(node);
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

  void read(const CheckpointManifest& m) override {
    for (const auto& node : ckpt_nodes_) {
      if (!session_.hosts(node)) continue;
      auto it = std::find_if(m.files.begin(), m.files.end(), [&](const CheckpointFile& f) { return f.node == node; });
      if (it == m.files.end())
        throw NotFound(
            fmt::format("checkpoint epoch {} has no file for node '{}' (it has {})", m.epoch, node, m.files.size()));
      Workspace& ws = session_.workspace(node);
      LoadSpec spec;
      spec.dbs = {checkpoint_db_path(dir_, *it)};
      spec.db_type = m.db_type;
      spec.absolute_path = true;
      spec.load_all = true;
      try {
        load_blobs(ws, spec);
        const Blob* list = ws.get_blob(blob_list_name(node));
        if (!list) list = ws.get_blob(CheckpointManager::BLOB_NAMES);  // written before the name had its node
        if (!list || !list->is_type<Tensor>() || list->get<Tensor>().dtype() != DType::String)
          throw CorruptData(
              fmt::format("checkpoint '{}' has no string tensor '{}'", spec.dbs.front(), blob_list_name(node)));
        const Tensor& t = list->get<Tensor>();
        blob_lists_[node].assign(t.data<std::string>(), t.data<std::string>() + t.numel());
      } catch (Error& e) {
        e.add_context(fmt::format("loading checkpoint epoch {} of node '{}'", m.epoch, node));
        throw;
      }
    }
  }

  uint64_t write(int64_t epoch, const std::string& db_type) override {
    uint64_t bytes = 0;
    for (const auto& node : ckpt_nodes_) {
      if (!session_.hosts(node)) continue;
      SaveSpec spec;
      spec.blob_names = blob_lists_.at(node);
      spec.db = node_db_path(dir_, node, epoch);
      spec.db_type = db_type;
      spec.absolute_path = true;
      bytes += save_blobs(session_.workspace(node), spec).bytes;
    }
    return bytes;
  }

  const Workspace& workspace(const std::string& node) override { return session_.workspace(node); }
  std::vector<std::string> blob_names(const std::string& node) override { return blob_lists_.at(node); }

 private:
  Session& session_;
  const std::string dir_;
  const std::vector<std::string> ckpt_nodes_;
  std::map<std::string, std::vector<std::string>> blob_lists_;
};

}  // namespace

JobRunResult run_job(const JobDef& job, Session& session, const JobRunOptions& options) {
  validate(job, options);
  const bool across = session.processes() > 1;
  // Every node gets its process before anything loads: where a run from scratch would put it.
  for (const TaskGroupDef* group : {&job.init_group, &job.epoch_group, &job.download_group, &job.exit_group})
    session.place(*group);
  JobDefGroups groups(job, session, options.run);
  NodeStore store(job, session, options.checkpoint_dir);
  detail::ProcessAgreement agreement(session);
  detail::JobEngineSettings settings;
  settings.job_digest = options.checkpoint_dir.empty() ? std::string() : job_digest(job);
  settings.own_directory = true;
  // The background writer agrees over a channel of its own (made collectively, before anything runs).
  std::unique_ptr<ProcessChannel> channel;
  std::optional<detail::ProcessAgreement> background;
  if (across) {
    settings.processes = &agreement;
    if (options.background_save && !options.checkpoint_dir.empty()) {
      channel = session.open_channel();
      background.emplace(*channel);
      settings.background_processes = &*background;
    }
  }
  return detail::run_job_engine(groups, &store, options, settings);
}

JobRunResult run_job(const JobDef& job, NodeWorkspaces& nodes, const JobRunOptions& options) {
  LocalSessionOptions session_options;
  session_options.run = options.run;
  // The caller's workspaces outlive the session: the aliasing pointer shares no ownership.
  LocalSession session(std::shared_ptr<NodeWorkspaces>(std::shared_ptr<void>(), &nodes), std::move(session_options));
  return run_job(job, session, options);
}

}  // namespace moka
