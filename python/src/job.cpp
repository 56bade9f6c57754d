// moka._C's bindings of jobs and checkpoints (moka/job/, docs/jobs.md): Job with its groups as `with` blocks,
// epoch_limiter, CheckpointManager, MultiNodeCheckpointManager, db_name and JobRunner, whose train() releases the
// GIL and stops on Ctrl-C — the engine behind moka.checkpoint.
#include "job.h"

#include <pybind11/stl.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "binding_objects.h"
#include "builder.h"
#include "dsl.h"
#include "moka/moka.h"

namespace moka::python {
namespace {

struct PyJob {
  Job job;
  std::unique_ptr<WithBlock> block;
};

using GroupOf = TaskGroup& (Job::*)();
using WithGroup = void (Job::*)(const std::function<void()>&);

// One of the job's groups as a task.TaskGroup whose `with` refuses tasks once the job is compiled.
PyTaskGroup job_group(Job job, GroupOf group_of, WithGroup with_group) {
  TaskGroup group = (job.*group_of)();
  return PyTaskGroup{std::move(group), nullptr,
                     [job, with_group](const std::function<void()>& body) mutable { (job.*with_group)(body); }};
}

std::optional<std::vector<std::string>> optional_names(const py::handle& names) {
  if (names.is_none()) return std::nullopt;
  return names.cast<std::vector<std::string>>();
}

std::optional<std::string> optional_str(const py::handle& x) {
  if (x.is_none()) return std::nullopt;
  return std::string(py::str(x));
}

// A Python metadata handler (Caffe2's duck-typed object: set_params, last_epoch, write, report, cp_accessible) as
// the C++ interface. The job engine calls it with the GIL released, so each call takes it; what the call raises
// fails the run with the Python error's text.
class PythonMetadataHandler final : public CheckpointMetadataHandler {
 public:
  explicit PythonMetadataHandler(py::object handler)
      : handler_(new py::object(std::move(handler)), [](py::object* o) {
          py::gil_scoped_acquire gil;
          delete o;
        }) {}
  void set_params(const std::string& db_prefix, const std::string& db_type, const std::vector<std::string>& node_names,
                  const std::optional<std::string>& path_prefix, const std::optional<std::string>& path_type) override {
    call("set_params", [&](py::object& f) {
      f(py::arg("db_prefix") = db_prefix, py::arg("db_type") = db_type, py::arg("node_names") = node_names,
        py::arg("path_prefix") = path_prefix, py::arg("path_type") = path_type);
    });
  }
  std::optional<int64_t> last_epoch(std::optional<int64_t> user_epoch) override {
    std::optional<int64_t> out;
    call("last_epoch", [&](py::object& f) {
      py::object r = f(py::arg("user_epoch") = user_epoch);
      if (!r.is_none()) out = r.cast<int64_t>();
    });
    return out;
  }
  void write(int64_t epoch) override {
    call("write", [&](py::object& f) { f(py::arg("epoch") = epoch); });
  }
  void report(const std::string& action_name, const CheckpointStats& stats) override {
    call("report", [&](py::object& f) { f(action_name, stats); });
  }
  bool cp_accessible(std::optional<int64_t> epoch) override {
    bool out = true;
    call("cp_accessible", [&](py::object& f) { out = py::bool_(f(py::arg("epoch") = epoch)); });
    return out;
  }

 private:
  template <class Call>
  void call(const char* method, Call c) {
    py::gil_scoped_acquire gil;
    try {
      py::object f = handler_->attr(method);
      c(f);
    } catch (py::error_already_set& e) {
      throw RuntimeError(std::string("metadata_handler.") + method + " raised: " + e.what());
    } catch (py::cast_error& e) {
      throw TypeError(std::string("metadata_handler.") + method + " returned the wrong type: " + e.what());
    }
  }
  std::shared_ptr<py::object> handler_;
};

// A Python upload builder (Caffe2's UploadTaskGroupBuilder: build(epoch, checkpoint_manager) returns a
// TaskGroup), called by the job engine after the last epoch with the GIL taken.
class PythonUploadBuilder final : public UploadTaskGroupBuilder {
 public:
  explicit PythonUploadBuilder(py::object builder)
      : builder_(new py::object(std::move(builder)), [](py::object* o) {
          py::gil_scoped_acquire gil;
          delete o;
        }) {}
  TaskGroup build(int64_t epoch, CheckpointManagerBase* checkpoint_manager) override {
    py::gil_scoped_acquire gil;
    py::object group;
    try {
      group = builder_->attr("build")(
          py::arg("epoch") = epoch,
          py::arg("checkpoint_manager") = py::cast(checkpoint_manager, py::return_value_policy::reference));
    } catch (py::error_already_set& e) {
      throw RuntimeError(std::string("upload_task_group_builder.build raised: ") + e.what());
    }
    if (!py::isinstance<PyTaskGroup>(group))
      throw TypeError("upload_task_group_builder.build must return a TaskGroup, not " +
                      py::str(py::type::handle_of(group).attr("__name__")).cast<std::string>());
    return group.cast<PyTaskGroup&>().group;
  }

 private:
  std::shared_ptr<py::object> builder_;
};

std::shared_ptr<CheckpointMetadataHandler> metadata_handler_of(const py::handle& handler) {
  if (handler.is_none()) return nullptr;
  for (const char* method : {"set_params", "last_epoch", "write", "report", "cp_accessible"})
    if (!py::hasattr(handler, method))
      throw TypeError(std::string("metadata_handler: ") +
                      py::str(py::type::handle_of(handler).attr("__name__")).cast<std::string>() + " has no " + method +
                      "()");
  return std::make_shared<PythonMetadataHandler>(py::reinterpret_borrow<py::object>(handler));
}

PyTask py_task(Task t) { return PyTask{std::move(t), nullptr}; }
PyTaskGroup py_group(TaskGroup g) { return PyTaskGroup{std::move(g), nullptr, {}}; }

// A session's run as the GIL-free, Ctrl-C-aware work of run_interruptibly.
template <class Work>
auto run_in_session(PySession& s, Work work) {
  auto cancel = std::make_shared<CancelToken>();
  s.session->run_options().cancel = cancel;
  using R = decltype(work(*s.session));
  R result{};
  run_interruptibly([cancel] { cancel->cancel(); }, [&] { result = work(*s.session); });
  return result;
}

// The methods CheckpointManager and SnapshotManager share (the seeds' single-node manager interface).
template <class Manager, class Class>
void bind_single_node_manager(Class& cls) {
  cls.def(
         "init",
         [](Manager& c, const py::handle& nodes, std::optional<int64_t> retrieve_from_epoch,
            const py::handle& path_prefix, const py::handle& path_type) {
           return py_task(
               c.init(optional_names(nodes), retrieve_from_epoch, optional_str(path_prefix), optional_str(path_type)));
         },
         py::arg("nodes") = py::none(), py::arg("retrieve_from_epoch") = py::none(),
         py::arg("path_prefix") = py::none(), py::arg("path_type") = py::none())
      .def("blob_list", [](Manager& c) { return c.blob_list(); })
      .def(
          "load",
          [](Manager& c, int64_t epoch, const py::handle& path_prefix, const py::handle& path_type) {
            return py_task(c.load(epoch, optional_str(path_prefix), optional_str(path_type)));
          },
          py::arg("epoch"), py::arg("path_prefix") = py::none(), py::arg("path_type") = py::none())
      .def(
          "load_blobs_from_checkpoint",
          [](Manager& c, const std::vector<std::string>& blob_names, int64_t epoch) {
            return py_task(c.load_blobs_from_checkpoint(blob_names, epoch));
          },
          py::arg("blob_names"), py::arg("epoch"))
      .def(
          "check_db_exists", [](Manager& c, int64_t epoch) { return py_task(c.check_db_exists(epoch)); },
          py::arg("epoch"))
      .def(
          "save", [](Manager& c, int64_t epoch) { return py_task(c.save(epoch)); }, py::arg("epoch"));
}

}  // namespace

void bind_job(py::module_& m) {
  py::class_<PyJob> job(m, "Job", "A training job: init, epoch, download and exit groups (checkpoint.Job).");
  job.def(py::init([](std::optional<PyTaskGroup*> init_group, std::optional<PyTaskGroup*> epoch_group,
                      std::optional<PyTaskGroup*> download_group, std::optional<PyTaskGroup*> exit_group,
                      const py::handle& stop_conditions, const py::handle& nodes_to_checkpoint) {
            JobOptions o;
            auto group = [](std::optional<PyTaskGroup*> g) -> std::optional<TaskGroup> {
              if (!g || *g == nullptr) return std::nullopt;
              return (*g)->group;
            };
            o.init_group = group(init_group);
            o.epoch_group = group(epoch_group);
            o.download_group = group(download_group);
            o.exit_group = group(exit_group);
            if (!stop_conditions.is_none())
              for (py::handle x : stop_conditions)
                o.stop_conditions.push_back(py::isinstance<TaskOutput>(x) ? x.cast<TaskOutput>()
                                                                          : TaskOutput(blob_list(x).at(0)));
            o.nodes_to_checkpoint = optional_names(nodes_to_checkpoint);
            return PyJob{Job(o), nullptr};
          }),
          py::arg("init_group") = py::none(), py::arg("epoch_group") = py::none(),
          py::arg("download_group") = py::none(), py::arg("exit_group") = py::none(),
          py::arg("stop_conditions") = py::none(), py::arg("nodes_to_checkpoint") = py::none())
      .def_static(
          "current",
          [](bool required) -> py::object {
            Job* j = Job::current(required);
            if (j == nullptr) return py::none();
            return py::cast(PyJob{*j, nullptr});
          },
          py::arg("required") = true)
      .def_property_readonly("init_group",
                             [](PyJob& j) { return job_group(j.job, &Job::init_group, &Job::init_group); })
      .def_property_readonly("epoch_group",
                             [](PyJob& j) { return job_group(j.job, &Job::epoch_group, &Job::epoch_group); })
      .def_property_readonly("download_group",
                             [](PyJob& j) { return job_group(j.job, &Job::download_group, &Job::download_group); })
      .def_property_readonly("exit_group",
                             [](PyJob& j) { return job_group(j.job, &Job::exit_group, &Job::exit_group); })
      .def_property_readonly("stop_conditions", [](PyJob& j) { return j.job.stop_conditions(); })
      .def("add_stop_condition",
           [](PyJob& j, const py::handle& output) {
             if (py::isinstance<TaskOutput>(output)) return j.job.add_stop_condition(output.cast<TaskOutput>());
             return j.job.add_stop_condition(blob_list(output).at(0));
           })
      .def("add_stop_signal",
           [](PyJob& j, const py::handle& output) {
             if (py::isinstance<TaskOutput>(output)) return j.job.add_stop_condition(output.cast<TaskOutput>());
             return j.job.add_stop_signal(blob_list(output).at(0));
           })
      .def("nodes_to_checkpoint", [](PyJob& j) { return j.job.nodes_to_checkpoint(); })
      // Caffe2 passed the session class (job.compile(LocalSession)); moka's compilation needs none.
      .def(
          "compile", [](PyJob& j, const py::handle&) { j.job.compile(); }, py::arg("session_class") = py::none());
  add_with(job, [](PyJob& j) -> WithBlock::Call {
    return [&j](const std::function<void()>& body) { j.job.build([&](Job&) { body(); }); };
  });
  m.def(
      "epoch_limiter", [](PyJob& j, int64_t num_epochs) { return epoch_limiter(j.job, num_epochs); }, py::arg("job"),
      py::arg("num_epochs"));
  m.def(
      "db_name",
      [](int64_t epoch, const std::string& node_name, const std::string& db_prefix, const py::handle& path_prefix) {
        return db_name(epoch, node_name, db_prefix, optional_str(path_prefix));
      },
      py::arg("epoch"), py::arg("node_name"), py::arg("db_prefix"), py::arg("path_prefix") = py::none());
  m.def("get_ckpt_filename", &get_ckpt_filename, py::arg("node_name"), py::arg("epoch"));

  // Checkpoint managers: what they build are Tasks and TaskGroups, run by a session or a JobRunner.
  py::class_<CheckpointManagerBase, std::shared_ptr<CheckpointManagerBase>>(m, "CheckpointManagerBase")
      .def(
          "get_resume_from_epoch_id",
          [](CheckpointManagerBase& c, std::optional<int64_t> user_epoch) {
            return c.get_resume_from_epoch_id(user_epoch);
          },
          py::arg("user_epoch") = py::none())
      .def(
          "set_params",
          [](CheckpointManagerBase& c, const std::vector<std::string>& nodes, const py::handle& path_prefix,
             const py::handle& path_type) { c.set_params(nodes, optional_str(path_prefix), optional_str(path_type)); },
          py::arg("nodes"), py::arg("path_prefix") = py::none(), py::arg("path_type") = py::none())
      .def(
          "cp_accessible",
          [](CheckpointManagerBase& c, std::optional<int64_t> epoch) { return c.cp_accessible(epoch); },
          py::arg("epoch") = py::none())
      .def("get_ckpt_db_name", &CheckpointManagerBase::get_ckpt_db_name, py::arg("node_name"), py::arg("epoch"))
      .def("write_checkpoint_metadata", &CheckpointManagerBase::write_checkpoint_metadata, py::arg("epoch"));
  py::class_<CheckpointManager, CheckpointManagerBase, std::shared_ptr<CheckpointManager>> checkpoint_manager(
      m, "CheckpointManager", "Checkpoints one node: <db_prefix>/<node>.<epoch> (checkpoint.CheckpointManager).");
  checkpoint_manager
      .def(py::init([](const std::string& db_prefix, const std::string& node_name, const std::string& db_type,
                       const py::handle& metadata_handler) {
             return std::make_shared<CheckpointManager>(db_prefix, node_name, db_type,
                                                        metadata_handler_of(metadata_handler));
           }),
           py::arg("db_prefix"), py::arg("node_name"), py::arg("db_type"), py::arg("metadata_handler") = py::none())
      .def_property_readonly("_node_name", &CheckpointManager::node_name)
      .def_property_readonly("_db_prefix", &CheckpointManager::db_prefix);
  bind_single_node_manager<CheckpointManager>(checkpoint_manager);
  // SnapshotManager (the seeds'; decision 10): exports under <db_prefix>/<node>.snapshot.<epoch>, never resumed
  // from, so JobRunner does not take it.
  py::class_<SnapshotManager, std::shared_ptr<SnapshotManager>> snapshot_manager(
      m, "SnapshotManager",
      "Exports chosen blobs of one node as <db_prefix>/<node>.snapshot.<epoch> (the seeds' "
      "SnapshotManager; never used to resume).");
  snapshot_manager
      .def(py::init([](const std::string& db_prefix, const std::string& node_name, const std::string& db_type,
                       const py::handle& metadata_handler, std::optional<std::vector<std::string>> blob_names,
                       int64_t keep_last) {
             return std::make_shared<SnapshotManager>(
                 db_prefix, node_name, db_type,
                 SnapshotManagerOptions{.blob_names = blob_names.value_or(std::vector<std::string>{}),
                                        .metadata_handler = metadata_handler_of(metadata_handler),
                                        .keep_last = keep_last});
           }),
           py::arg("db_prefix"), py::arg("node_name"), py::arg("db_type"), py::arg("metadata_handler") = py::none(),
           py::arg("blob_names") = py::none(), py::arg("keep_last") = 0)
      .def("snapshot_epochs", &SnapshotManager::snapshot_epochs)
      .def("apply_retention", &SnapshotManager::apply_retention)
      .def_property_readonly("_node_name", [](const SnapshotManager& c) { return c.node_name(); })
      .def_property_readonly("_db_prefix", [](const SnapshotManager& c) { return c.db_prefix(); });
  bind_single_node_manager<SnapshotManager>(snapshot_manager);
  py::class_<MultiNodeCheckpointManager, CheckpointManagerBase, std::shared_ptr<MultiNodeCheckpointManager>>(
      m, "MultiNodeCheckpointManager",
      "Checkpoints every node of a job, one DB per node (checkpoint.MultiNodeCheckpointManager).")
      .def(py::init([](const std::string& db_prefix, const std::string& db_type, const py::handle& metadata_handler) {
             return std::make_shared<MultiNodeCheckpointManager>(db_prefix, db_type,
                                                                 metadata_handler_of(metadata_handler));
           }),
           py::arg("db_prefix"), py::arg("db_type"), py::arg("metadata_handler") = py::none())
      .def(
          "init",
          [](MultiNodeCheckpointManager& c, const std::vector<std::string>& nodes,
             std::optional<int64_t> retrieve_from_epoch, const py::handle& path_prefix, const py::handle& path_type) {
            return py_group(c.init(nodes, retrieve_from_epoch, optional_str(path_prefix), optional_str(path_type)));
          },
          py::arg("nodes"), py::arg("retrieve_from_epoch") = py::none(), py::arg("path_prefix") = py::none(),
          py::arg("path_type") = py::none())
      .def(
          "load",
          [](MultiNodeCheckpointManager& c, int64_t epoch, const py::handle& path_prefix, const py::handle& path_type) {
            return py_group(c.load(epoch, optional_str(path_prefix), optional_str(path_type)));
          },
          py::arg("epoch"), py::arg("path_prefix") = py::none(), py::arg("path_type") = py::none())
      .def(
          "save", [](MultiNodeCheckpointManager& c, int64_t epoch) { return py_group(c.save(epoch)); },
          py::arg("epoch"));

  // JobRunner (Caffe2's checkpoint.JobRunner): train(session) runs the job's flow and returns the last epoch.
  py::class_<JobRunner>(m, "JobRunner", "Runs a Job epoch by epoch, checkpointing each (checkpoint.JobRunner).")
      .def(py::init([](PyJob& j, std::shared_ptr<CheckpointManagerBase> checkpoint_manager,
                       std::optional<int64_t> resume_from_epoch, const py::handle& upload_task_group_builder) {
             JobRunnerOptions o;
             o.resume_from_epoch = resume_from_epoch;
             if (!upload_task_group_builder.is_none()) {
               if (!py::hasattr(upload_task_group_builder, "build"))
                 throw TypeError(
                     "upload_task_group_builder: expected an object with build(epoch, "
                     "checkpoint_manager), not " +
                     py::str(py::type::handle_of(upload_task_group_builder).attr("__name__")).cast<std::string>());
               o.upload_task_group_builder =
                   std::make_shared<PythonUploadBuilder>(py::reinterpret_borrow<py::object>(upload_task_group_builder));
             }
             return std::make_unique<JobRunner>(j.job, std::move(checkpoint_manager), std::move(o));
           }),
           py::arg("job"), py::arg("checkpoint_manager") = nullptr, py::arg("resume_from_epoch") = py::none(),
           py::arg("upload_task_group_builder") = py::none())
      .def(
          "train",
          [](JobRunner& r, PySession& s) { return run_in_session(s, [&r](Session& ss) { return r.train(ss); }); },
          py::arg("session"))
      .def(
          "__call__",
          [](JobRunner& r, PySession& s) { return run_in_session(s, [&r](Session& ss) { return r.train(ss); }); },
          py::arg("session"))
      .def(
          "load_blobs_from_checkpoints",
          [](JobRunner& r, const std::vector<std::string>& blob_names, int64_t epoch, PySession& s) {
            return run_in_session(s, [&](Session& ss) { return r.load_blobs_from_checkpoints(blob_names, epoch, ss); });
          },
          py::arg("blob_names"), py::arg("epoch"), py::arg("session"))
      .def_property_readonly("resume_from_epoch", &JobRunner::resume_from_epoch)
      .def_property_readonly("checkpoint_manager", &JobRunner::checkpoint_manager)
      .def("save_failures", &JobRunner::save_failures);
}

}  // namespace moka::python
