// CheckpointManager: the single-node checkpoint manager and db naming (docs/jobs.md §4.1, §4.2).
#include "moka/job/checkpoint_manager.h"

#include <fmt/format.h>

#include "moka/builder/cluster.h"
#include "moka/builder/ops.h"
#include "moka/builder/task_output.h"
#include "moka/core/error.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/session/session.h"

namespace moka {

std::string get_ckpt_filename(const std::string& node_name, int64_t epoch) {
  check_checkpoint_node_name(node_name);  // "../x" must not name a file outside the directory
  return fmt::format("{}.{}", node_name, epoch);
}

std::string db_name(int64_t epoch, const std::string& node_name, const std::string& db_prefix,
                    const std::optional<std::string>& path_prefix) {
  const std::string filename = get_ckpt_filename(node_name, epoch);
  if (path_prefix && !path_prefix->empty()) return *path_prefix + filename;
  // os.path.join(db_prefix, filename)
  if (db_prefix.empty() || db_prefix.back() == '/') return db_prefix + filename;
  return db_prefix + "/" + filename;
}

namespace {
std::vector<BlobRef> refs(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }
}  // namespace

CheckpointManager::CheckpointManager(std::string db_prefix, std::string node_name, std::string db_type,
                                     std::shared_ptr<CheckpointMetadataHandler> metadata_handler)
    : CheckpointManager(Flavor{}, std::move(db_prefix), std::move(node_name), std::move(db_type),
                        std::move(metadata_handler)) {}

CheckpointManager::CheckpointManager(Flavor flavor, std::string db_prefix, std::string node_name, std::string db_type,
                                     std::shared_ptr<CheckpointMetadataHandler> metadata_handler)
    : flavor_(std::move(flavor)),
      db_prefix_(std::move(db_prefix)),
      node_name_(std::move(node_name)),
      db_type_(std::move(db_type)),
      metadata_handler_(std::move(metadata_handler)) {
  if (node_name_.empty()) throw InvalidInput(fmt::format("{}: node_name must not be empty", flavor_.class_name));
  if (db_type_.empty()) throw InvalidInput(fmt::format("{}: db_type must not be empty", flavor_.class_name));
}

std::string CheckpointManager::path_for(int64_t epoch, const std::optional<std::string>& path_prefix) const {
  return db_name(epoch, node_name_ + flavor_.file_infix, db_prefix_, path_prefix);
}

std::string CheckpointManager::db_path(int64_t epoch) const { return path_for(epoch, path_prefix_); }

std::string CheckpointManager::io_type(const std::optional<std::string>& path_type) const {
  if (path_type && !path_type->empty()) return *path_type;
  return path_type_.value_or(db_type_);
}

Task CheckpointManager::init(const std::optional<std::vector<std::string>>& nodes,
                             std::optional<int64_t> retrieve_from_epoch, const std::optional<std::string>& path_prefix,
                             const std::optional<std::string>& path_type) {
  if (nodes && nodes->size() != 1)
    throw InvalidInput(fmt::format("{} only supports single node. (got {} nodes: {})", flavor_.class_name,
                                   nodes->size(), repr_list(*nodes)));
  if (path_prefix && !path_prefix->empty()) path_prefix_ = path_prefix;
  if (path_type && !path_type->empty()) path_type_ = path_type;
  // The tasks run where the blobs are: moka's LocalSession gives each node its own workspace.
  // The node: the one given here, else the one set_params() was given, else the active Node.
  if (nodes) {
    run_node_ = nodes->front();
  } else if (run_node_.empty()) {
    run_node_ = Node::current_name();
  }
  const BlobRef blob_names = flavor_.blob_names;
  std::optional<Task> task;  // not `Task task;`: a Task made here would join the active group
  Node(run_node_, [&] {
    task.emplace(TaskOptions{.outputs = {TaskOutput(blob_names)}}, [&] {
      if (retrieve_from_epoch) {
        ops::op("Load", {}, {blob_names},
                {{"db", path_for(*retrieve_from_epoch, path_prefix_)},
                 {"db_type", io_type(std::nullopt)},
                 {"absolute_path", 1},
                 {"keep_device", 1}});
      } else if (!flavor_.chosen_blobs.empty()) {
        ops::Const(flavor_.chosen_blobs, {.blob_out = blob_names});
      } else {
        ops::GetAllBlobNames({}, {blob_names}, {{"include_shared", false}, {"serializable_only", true}});
      }
    });
  });
  names_output_ = task->outputs().front();
  return *task;
}

void CheckpointManager::check_initialized(const char* what) const {
  if (!names_output_)
    throw InvalidInput(fmt::format("{}.{}: init must be called first (and its task run) for node \"{}\"",
                                   flavor_.class_name, what, node_name_));
}

std::vector<std::string> CheckpointManager::blob_list() const {
  check_initialized("blob_list");
  try {
    const Tensor t = names_output_->fetch();
    if (t.dtype() != DType::String)
      throw TypeError(fmt::format("the blob list \"{}\" holds {}, not strings", flavor_.blob_names, t.describe()));
    auto v = t.values<std::string>();
    return {v.begin(), v.end()};
  } catch (Error& e) {
    e.add_context(fmt::format("{}.blob_list of node \"{}\" (was the init task run?)", flavor_.class_name, node_name_));
    throw;
  }
}

Task CheckpointManager::timed_task(const std::string& cp_op_name, const std::function<void()>& add_op) {
  // The timer and its result get the same names in every task of this manager and operation (Caffe2
  // named them after each new task's net): a job saves every epoch, and a new pair of blobs per save
  // grew the node workspace for ever and, changing its set of blobs, made the session instantiate
  // the epoch group afresh every epoch.
  const std::string prefix = fmt::format("{}/{}", node_name_, cp_op_name);
  const BlobRef timer_blob(prefix + "/timer");
  const BlobRef duration_blob(prefix + "/duration_ns");
  std::optional<Task> task;  // not `Task task;`: a Task made here would join the active group
  Node(run_node_, [&] {
    task.emplace(TaskOptions{.name = cp_op_name}, [&] {
      BlobRef timer;
      ops::task_init([&] {
        // Both emptied first: a task that failed before its exit left its timer running (TimerBegin
        // would refuse it) and must not report the duration of an earlier one.
        for (const BlobRef& b : {timer_blob, duration_blob})
          ops::ConstantFill({}, {b}, {{"shape", std::vector<int64_t>{0}}, {"dtype", DType::Int64}});
        timer = ops::TimerBegin({}, {timer_blob}, {{"counter_name", node_name_}});
      });
      add_op();
      ops::task_exit([&] { current_checkpoint_duration_ = final_output(ops::TimerGetAndEnd(timer, {duration_blob})); });
    });
  });
  return *task;
}

Task CheckpointManager::load(int64_t epoch, const std::optional<std::string>& path_prefix,
                             const std::optional<std::string>& path_type) {
  const std::vector<std::string> names = blob_list();
  const std::string db = path_for(epoch, path_prefix && !path_prefix->empty() ? path_prefix : path_prefix_);
  const std::string type = io_type(path_type);
  current_db_name_ = db;
  return timed_task("checkpoint_load", [&] {
    ops::op("Load", {}, refs(names), {{"db", db}, {"db_type", type}, {"absolute_path", 1}, {"keep_device", 1}});
  });
}

Task CheckpointManager::load_blobs_from_checkpoint(const std::vector<std::string>& blob_names, int64_t epoch) {
  if (run_node_.empty()) run_node_ = Node::current_name();
  const std::string db = db_path(epoch);
  const std::string type = io_type(std::nullopt);
  current_db_name_ = db;
  return timed_task("checkpoint_partial_load", [&] {
    ops::op("Load", {}, refs(blob_names),
            {{"db", db}, {"db_type", type}, {"absolute_path", 1}, {"allow_incomplete", 1}});
  });
}

Task CheckpointManager::check_db_exists(int64_t epoch) {
  if (run_node_.empty()) run_node_ = Node::current_name();
  const std::string db = db_path(epoch);
  const std::string type = io_type(std::nullopt);
  std::optional<Task> task;  // not `Task task;`: a Task made here would join the active group
  Node(run_node_, [&] {
    BlobRef existence;
    task.emplace([&] {
      existence = ops::Const(false);
      // DBExists's argument is `db_name`, not `db` (docs/save-load.md §4).
      ops::op("DBExists", {}, {existence}, {{"db_name", db}, {"db_type", type}, {"absolute_path", 1}});
    });
    task->add_output(existence);
  });
  return *task;
}

Task CheckpointManager::save(int64_t epoch) {
  const std::vector<std::string> names = blob_list();
  const std::string db = db_path(epoch);
  const std::string type = io_type(std::nullopt);
  current_db_name_ = db;
  return timed_task("checkpoint_save", [&] {
    ops::op("Save", refs(names), 0, {{"db", db}, {"db_type", type}, {"absolute_path", 1}});
  });
}

void CheckpointManager::collect_checkpoint_stats(CheckpointStats& stats) const {
  if (!current_db_name_ || !current_checkpoint_duration_) return;
  try {
    const Tensor t = current_checkpoint_duration_->fetch();
    if (t.dtype() == DType::Int64 && t.numel() >= 1) stats[*current_db_name_] = t.values<int64_t>()[0];
  } catch (const Error&) {
    // The timed task did not run (e.g. a tolerated failed save): no duration to report.
  }
}

void CheckpointManager::set_params(const std::vector<std::string>& nodes, const std::optional<std::string>& path_prefix,
                                   const std::optional<std::string>& path_type) {
  if (nodes.size() == 1 && run_node_.empty()) run_node_ = nodes.front();
  if (path_prefix && !path_prefix->empty()) path_prefix_ = path_prefix;
  if (path_type && !path_type->empty()) path_type_ = path_type;
  if (metadata_handler_) metadata_handler_->set_params(db_prefix_, db_type_, {node_name_}, path_prefix_, path_type_);
}

std::optional<int64_t> CheckpointManager::get_resume_from_epoch_id(std::optional<int64_t> user_epoch) {
  return metadata_handler_ ? metadata_handler_->last_epoch(user_epoch) : user_epoch;
}

TaskGroup CheckpointManager::init_task_group(const std::vector<std::string>& nodes,
                                             std::optional<int64_t> retrieve_from_epoch,
                                             const std::optional<std::string>& path_prefix,
                                             const std::optional<std::string>& path_type) {
  // Checked before the group exists, so a refused init leaves no stray task behind.
  if (nodes.size() != 1)
    throw InvalidInput(fmt::format("{} only supports single node. (got {} nodes: {})", flavor_.class_name, nodes.size(),
                                   repr_list(nodes)));
  return TaskGroup(WorkspaceType::Global, [&] { init(nodes, retrieve_from_epoch, path_prefix, path_type); });
}

TaskGroup CheckpointManager::save_task_group(int64_t epoch) {
  check_initialized("save");
  return TaskGroup(WorkspaceType::Global, [&] { save(epoch); });
}

TaskGroup CheckpointManager::load_task_group(int64_t epoch, const std::optional<std::string>& path_prefix,
                                             const std::optional<std::string>& path_type) {
  check_initialized("load");
  return TaskGroup(WorkspaceType::Global, [&] { load(epoch, path_prefix, path_type); });
}

bool CheckpointManager::load_blobs_locally(const std::vector<std::string>& nodes,
                                           const std::vector<std::string>& blob_names, int64_t epoch,
                                           Session& session) {
  if (nodes.size() > 1)
    throw InvalidInput(fmt::format("{} only supports single node. (got {} nodes: {})", flavor_.class_name, nodes.size(),
                                   repr_list(nodes)));
  if (nodes.size() == 1 && run_node_.empty()) run_node_ = nodes.front();
  Task exists = check_db_exists(epoch);
  session.run(exists);
  if (!exists.outputs().front().fetch<bool>()) return false;
  Task load = load_blobs_from_checkpoint(blob_names, epoch);
  session.run(load);
  return true;
}

void CheckpointManager::report_checkpoint_stats(const std::string& action_name) {
  CheckpointStats stats;
  collect_checkpoint_stats(stats);
  report_stats(action_name, stats);
}

void CheckpointManager::report_stats(const std::string& action_name, const CheckpointStats& stats) {
  if (metadata_handler_) metadata_handler_->report(action_name, stats);
}

void CheckpointManager::write_checkpoint_metadata(int64_t epoch) {
  if (metadata_handler_) metadata_handler_->write(epoch);
}

bool CheckpointManager::cp_accessible(std::optional<int64_t> epoch) {
  return metadata_handler_ ? metadata_handler_->cp_accessible(epoch) : true;
}

std::optional<std::string> CheckpointManager::get_ckpt_db_name(const std::string& node, int64_t epoch) const {
  if (node != node_name_) return std::nullopt;
  return db_path(epoch);
}

std::vector<std::string> CheckpointManager::blob_names_of(const std::string& node) const {
  if (node != node_name_)
    throw InvalidInput(fmt::format("{}: node \"{}\" is not checkpointed here (the manager's node is \"{}\")",
                                   flavor_.class_name, node, node_name_));
  return blob_list();
}

}  // namespace moka
