// moka._C's bindings of the building DSL and sessions (python/src/dsl.h).
#include "dsl.h"

#include <pybind11/stl.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arguments.h"
#include "binding_objects.h"
#include "builder.h"
#include "moka/moka.h"
#include "numpy_tensor.h"
#include "with_block.h"
#include "workspace.h"

namespace py = pybind11;

namespace moka::python {

void run_interruptibly(const std::function<void()>& interrupt, std::function<void()> work) {
  std::packaged_task<void()> task(std::move(work));
  std::future<void> done = task.get_future();
  std::thread worker(std::move(task));
  bool interrupted = false;
  for (;;) {
    bool finished = false;
    {
      py::gil_scoped_release release;
      finished = done.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (finished) break;
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true;
      interrupt();
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  if (interrupted) throw py::error_already_set();  // the KeyboardInterrupt PyErr_CheckSignals set
  done.get();                                      // the work's own error, if any
}

namespace {

std::vector<std::string> names_of(const BlobRefs& refs) {
  std::vector<std::string> out;
  for (const BlobRef& b : refs) out.push_back(b.name());
  return out;
}

}  // namespace

void bind_dsl(py::module_& m) {
  py::class_<Block>(m, "Block", "A with block of the building DSL.")
      .def("__enter__",
           [](py::object self) {
             Block& b = self.cast<Block&>();
             b.block = std::make_unique<WithBlock>(b.call);
             b.block->enter();
             return b.as.is_none() ? self : b.as;
           })
      .def("__exit__", [](Block& b, const py::handle& type, const py::handle&, const py::handle&) {
        std::unique_ptr<WithBlock> w = std::move(b.block);
        if (w) w->exit(type.is_none());
        return false;
      });

  // NetBuilder (Caffe2's net_builder.NetBuilder).
  py::class_<PyNetBuilder> nb(m, "NetBuilder", "Builds one step out of nets, steps and nested builders.");
  nb.def(py::init([](const std::string& name, const std::string& fullname, bool stop_blob_required,
                     const py::handle& stop_blob, const py::handle& initial_scope, bool use_control_ops) {
           NetBuilderOptions o;
           o.name = name;
           o.fullname = fullname;
           o.stop_blob_required = stop_blob_required;
           if (!stop_blob.is_none()) o.stop_blob = blob_list(stop_blob).at(0);
           o.initial_scope = blob_list(initial_scope);
           o.use_control_ops = use_control_ops;
           return PyNetBuilder{NetBuilder(o), nullptr};
         }),
         py::arg("name") = "", py::arg("_fullname") = "", py::arg("_stop_blob_required") = false,
         py::arg("_stop_blob") = py::none(), py::arg("initial_scope") = py::none(), py::arg("_use_control_ops") = false)
      .def_property_readonly("name", [](PyNetBuilder& b) { return b.builder.name(); })
      .def("stop_blob", [](PyNetBuilder& b) { return b.builder.stop_blob().name(); })
      .def("stop_if", [](PyNetBuilder& b, const py::handle& blob) { b.builder.stop_if(blob_list(blob).at(0)); })
      .def(
          "current_net", [](PyNetBuilder& b, std::optional<std::string> name) { return b.builder.current_net(name); },
          py::arg("name") = py::none())
      .def("freeze", [](PyNetBuilder& b) { b.builder.freeze(); })
      .def(
          "to_execution_step",
          [](PyNetBuilder& b, const std::string& default_name) { return to_execution_step(b.builder, default_name); },
          py::arg("default_name") = "");
  add_with(nb, [](PyNetBuilder& b) { return [&b](const std::function<void()>& body) { b.builder.build(body); }; });
  m.def(
      "to_execution_step",
      [](const py::handle& x, const std::string& default_name) { return to_execution_step(step_of(x), default_name); },
      py::arg("step_or_nets"), py::arg("default_name") = "");

  // ops (Caffe2's net_builder.ops): operators into the active builder's current net, and its blocks.
  py::module_ o = m.def_submodule("ops", "The building DSL's operations (moka::ops)");
  o.def("op", [](const std::string& type, const py::handle& inputs, const py::handle& outputs, const py::dict& kwargs) {
    std::vector<Arg> args;
    for (auto [k, v] : kwargs)
      if (!v.is_none()) args.emplace_back(to_argument(k.cast<std::string>(), v));
    return names_of(ops::op(type, blob_list(inputs), outputs_of(outputs), std::move(args)));
  });
  o.def(
      "Const",
      [](const py::handle& value, const py::handle& blob_out, std::optional<int> dtype) {
        return ops::Const(const_value(value), const_options(value, blob_out, dtype)).name();
      },
      py::arg("value"), py::arg("blob_out") = py::none(), py::arg("dtype") = py::none());
  o.def(
      "net",
      [](const py::handle& net, const std::string& name) -> py::object {
        if (net.is_none()) return py::cast(name.empty() ? ops::net() : ops::net(ops::NetOptions{.name = name}));
        StepsOrNets x = step_of(net);
        if (const Net* n = x.single()->net()) return py::cast(ops::net(*n));
        return py::cast(ops::net(*x.single()->step()));
      },
      py::arg("net") = py::none(), py::arg("name") = "");
  o.def("stop", [] { ops::stop(); });
  o.def("stop_if", [](const py::handle& blob) { ops::stop_if(blob_list(blob).at(0)); });

  py::class_<PyLoop, std::shared_ptr<PyLoop>>(o, "Loop")
      .def("iter", [](PyLoop& l) { return l.loop.value().iter().name(); })
      .def("num_iters", [](PyLoop& l) -> py::object {
        const auto& n = l.loop.value().num_iters();
        return n ? py::cast(n->name()) : py::none();
      });
  o.def(
      "loop",
      [](const py::handle& iters, const std::string& name) {
        auto state = std::make_shared<PyLoop>();
        std::optional<int64_t> count;
        std::optional<BlobRef> blob;
        if (py::isinstance<py::int_>(iters))
          count = iters.cast<int64_t>();
        else if (!iters.is_none())
          blob = blob_list(iters).at(0);
        return make_block(
            [state, count, blob, name](const std::function<void()>& body) {
              auto run = [&](ops::Loop& l) {
                state->loop = l;
                body();
              };
              if (count)
                ops::loop(*count, run, {.name = name});
              else if (blob)
                ops::loop(*blob, run, {.name = name});
              else
                ops::loop(run, {.name = name});
            },
            py::cast(state));
      },
      py::arg("iters") = py::none(), py::arg("name") = "");

  py::class_<PyStopGuard, std::shared_ptr<PyStopGuard>>(o, "StopGuard").def("has_stopped", [](PyStopGuard& g) {
    if (!g.guard) throw InvalidInput("Context not used yet.");
    return g.guard->has_stopped().name();
  });
  o.def(
      "stop_guard",
      [](const py::handle& has_stopped_blob, const std::string& name) {
        auto state = std::make_shared<PyStopGuard>();
        BlobRef stopped = has_stopped_blob.is_none() ? BlobRef() : blob_list(has_stopped_blob).at(0);
        return make_block(
            [state, stopped, name](const std::function<void()>& body) {
              state->guard = ops::stop_guard([&] { body(); }, {.has_stopped_blob = stopped, .name = name});
            },
            py::cast(state));
      },
      py::arg("has_stopped_blob") = py::none(), py::arg("name") = "");

  // If / Elif / Else: `with ops.If(c) as c: ...` then `with c.Elif(d) as c: ...`, `with c.Else(): ...`.
  py::class_<PyIf, std::shared_ptr<PyIf>> run_if(o, "RunIf");
  auto chained = [](std::shared_ptr<PyIf> prev, std::optional<BlobRef> cond, const std::string& name) {
    auto state = std::make_shared<PyIf>();
    return make_block(
        [prev, state, cond, name](const std::function<void()>& body) {
          if (!prev) {
            state->run_if = ops::If(*cond, [&] { body(); }, {.name = name});
            return;
          }
          if (!prev->run_if) throw InvalidInput("Elif and Else follow an If block that has ended");
          state->run_if = cond ? prev->run_if->Elif(*cond, [&] { body(); }, {.name = name})
                               : prev->run_if->Else([&] { body(); }, {.name = name});
        },
        py::cast(state));
  };
  run_if.def(
      "Elif",
      [chained](std::shared_ptr<PyIf> self, const py::handle& cond, const std::string& name) {
        return chained(self, blob_list(cond).at(0), name);
      },
      py::arg("cond"), py::arg("name") = "");
  run_if.def(
      "Else",
      [chained](std::shared_ptr<PyIf> self, const std::string& name) { return chained(self, std::nullopt, name); },
      py::arg("name") = "");
  o.def(
      "If",
      [chained](const py::handle& cond, const std::string& name) {
        return chained(nullptr, blob_list(cond).at(0), name);
      },
      py::arg("cond"), py::arg("name") = "");

  // Setup blocks (ops.task_init, ...) and report steps.
  auto setup = [&o](const char* py_name, auto make) {
    o.def(
        py_name,
        [make](const std::string& name) {
          return make_block([make, name](const std::function<void()>& body) { make(body, name); });
        },
        py::arg("name") = "");
  };
  setup("task_init",
        [](const std::function<void()>& body, const std::string& n) { ops::task_init(body, {.name = n}); });
  setup("task_exit",
        [](const std::function<void()>& body, const std::string& n) { ops::task_exit(body, {.name = n}); });
  setup("task_instance_init",
        [](const std::function<void()>& body, const std::string& n) { ops::task_instance_init(body, {.name = n}); });
  setup("task_instance_exit",
        [](const std::function<void()>& body, const std::string& n) { ops::task_instance_exit(body, {.name = n}); });
  setup("local_init",
        [](const std::function<void()>& body, const std::string& n) { ops::local_init(body, {.name = n}); });
  setup("local_exit",
        [](const std::function<void()>& body, const std::string& n) { ops::local_exit(body, {.name = n}); });
  o.def(
      "task_reporter",
      [](int64_t interval_ms, const std::string& name) {
        return make_block([interval_ms, name](const std::function<void()>& body) {
          ops::task_reporter(interval_ms, body, {.name = name});
        });
      },
      py::arg("interval_ms") = 1000, py::arg("name") = "");

  // task (Caffe2's task module).
  py::class_<PyCluster> cluster(m, "Cluster", "The nodes seen while building (Caffe2's task.Cluster).");
  cluster.def(py::init([] {
           return PyCluster{Cluster(), nullptr};
         }))
      .def("nodes", [](PyCluster& c) { return c.cluster.nodes(); })
      .def("__repr__", [](PyCluster& c) { return c.cluster.repr(); });
  add_with(cluster,
           [](PyCluster& c) { return [&c](const std::function<void()>& body) { with_context(c.cluster, body); }; });

  py::class_<PyNode> node(m, "Node", "A node of the cluster (Caffe2's task.Node).");
  node.def(py::init([](const std::string& name, const py::kwargs& kwargs) {
             NodeKwargs k;
             for (auto [key, v] : kwargs) k[key.cast<std::string>()] = py::str(v).cast<std::string>();
             return PyNode{Node(name, k), nullptr};
           }),
           py::arg("node") = "local")
      .def_property_readonly("name", [](PyNode& n) { return n.node.name(); })
      .def("__str__", [](PyNode& n) { return n.node.name(); })
      .def("__repr__", [](PyNode& n) { return n.node.repr(); });
  add_with(node, [](PyNode& n) { return [&n](const std::function<void()>& body) { with_context(n.node, body); }; });
  m.def("current_node", &Node::current_name);

  py::class_<TaskOutput>(m, "TaskOutput", "The value of blobs once the task has run (Caffe2's task.TaskOutput).")
      .def(py::init([](const py::handle& names) { return TaskOutput(blob_list(names)); }))
      .def("names", &TaskOutput::names)
      .def("fetch",
           [](const TaskOutput& out) -> py::object {
             std::vector<Tensor> values;
             {
               py::gil_scoped_release release;
               values = out.fetch_all();
             }
             if (out.is_scalar()) return to_numpy(values.at(0));
             py::list list;
             for (const Tensor& t : values) list.append(to_numpy(t));
             return list;
           })
      .def("__repr__", &TaskOutput::repr);
  m.def("final_output", [](const py::handle& blobs) {
    std::vector<BlobRef> names = blob_list(blobs);
    return final_output(names.size() == 1 && !py::isinstance<py::list>(blobs) ? TaskOutput(names[0])
                                                                              : TaskOutput(names));
  });

  py::class_<PyTaskGroup> group(m, "TaskGroup", "Tasks that run together (Caffe2's task.TaskGroup).");
  group
      .def(py::init([](const py::handle& workspace_type) {
             return PyTaskGroup{TaskGroup(workspace_type_of(workspace_type)), nullptr, {}};
           }),
           py::arg("workspace_type") = py::none())
      .def("__repr__", [](PyTaskGroup& g) { return g.group.repr(); })
      .def("tasks", [](PyTaskGroup& g) { return g.group.tasks(); })
      .def("used_nodes", [](PyTaskGroup& g) { return g.group.used_nodes(); })
      .def("workspace_type",
           [](PyTaskGroup& g) -> py::object {
             auto t = g.group.workspace_type();
             return t ? py::cast(std::string(workspace_type_name(*t))) : py::none();
           })
      .def(
          "report_step",
          [](PyTaskGroup& g, const py::handle& step, std::optional<std::string> node, int64_t interval_ms) {
            g.group.report_step(step_of(step), node, interval_ms);
          },
          py::arg("step") = py::none(), py::arg("node") = py::none(), py::arg("interval_ms") = 1000);
  add_with(group, [](PyTaskGroup& g) -> WithBlock::Call {
    if (g.with_call) return g.with_call;
    return [&g](const std::function<void()>& body) { with_context(g.group, body); };
  });

  py::class_<SetupNets, std::shared_ptr<SetupNets>>(m, "SetupNets",
                                                    "Nets run once before and after a task's step (task.SetupNets).")
      .def(py::init([](const py::handle& init_nets, const py::handle& exit_nets) {
             auto nets = [](const py::handle& list) -> std::optional<std::vector<Net>> {
               if (list.is_none()) return std::nullopt;
               std::vector<Net> out;
               for (py::handle n : list)
                 out.push_back(py::hasattr(n, "_net") ? n.attr("_net").cast<Net>() : n.cast<Net>());
               return out;
             };
             return std::make_shared<SetupNets>(nets(init_nets), nets(exit_nets));
           }),
           py::arg("init_nets") = py::none(), py::arg("exit_nets") = py::none())
      .def("__repr__", &SetupNets::repr);
  py::class_<Task>(m, "NativeTask")
      .def("__repr__", &Task::repr)
      .def_property_readonly("name", &Task::name)
      .def("node", &Task::node);
  py::class_<PyTask> task(m, "Task", "A step run on one node (Caffe2's task.Task).");
  task.def(py::init([](const py::handle& step, const py::handle& outputs, const py::handle& workspace_type,
                       PyTaskGroup* group, const py::handle& node, const py::handle& name,
                       std::optional<int32_t> num_instances) {
             TaskOptions o;
             if (!name.is_none()) o.name = py::str(name).cast<std::string>();
             if (!node.is_none()) o.node = py::str(node).cast<std::string>();
             o.workspace_type = workspace_type_of(workspace_type);
             if (group != nullptr) o.group = &group->group;
             o.num_instances = num_instances.value_or(0);
             if (!outputs.is_none()) {
               if (py::isinstance<TaskOutput>(outputs)) {
                 o.outputs.push_back(outputs.cast<TaskOutput>());
               } else {
                 for (py::handle x : outputs)
                   o.outputs.push_back(py::isinstance<TaskOutput>(x) ? x.cast<TaskOutput>()
                                                                     : TaskOutput(blob_list(x).at(0)));
               }
             }
             if (step.is_none()) return PyTask{Task(o), nullptr};
             return PyTask{Task(o, step_of(step)), nullptr};
           }),
           py::arg("step") = py::none(), py::arg("outputs") = py::none(), py::arg("workspace_type") = py::none(),
           py::arg("group") = nullptr, py::arg("node") = py::none(), py::arg("name") = py::none(),
           py::arg("num_instances") = py::none())
      .def_property_readonly("name", [](PyTask& t) { return t.task.name(); })
      .def("node", [](PyTask& t) { return t.task.node(); })
      .def("outputs", [](PyTask& t) { return t.task.outputs(); })
      .def("add_output",
           [](PyTask& t, const py::handle& o) {
             return t.task.add_output(py::isinstance<TaskOutput>(o) ? o.cast<TaskOutput>()
                                                                    : TaskOutput(blob_list(o).at(0)));
           })
      .def("get_step", [](PyTask& t) { return t.task.get_step(); })
      .def("__repr__", [](PyTask& t) { return t.task.repr(); });
  add_with(task, [](PyTask& t) { return [&t](const std::function<void()>& body) { t.task.build(body); }; });

  // sessions (Caffe2's Session, LocalSession): runs release the GIL; Ctrl-C cancels the run and raises
  // KeyboardInterrupt. MpiSession (session.MpiSession) is bound in mpi_session.cpp.
  py::class_<PySession>(m, "Session", "Runs TaskGroups, Tasks, steps, plans and nets (session.Session).")
      .def("run",
           [](PySession& s, const py::handle& runnable) {
             Session& session = *s.session;
             auto cancel = std::make_shared<CancelToken>();
             session.run_options().cancel = cancel;
             std::function<void()> work;
             if (py::isinstance<PyTaskGroup>(runnable)) {
               TaskGroup& g = runnable.cast<PyTaskGroup&>().group;
               work = [&session, &g] { session.run(g); };
             } else if (py::isinstance<PyTask>(runnable)) {
               Task t = runnable.cast<PyTask&>().task;
               work = [&session, t] { session.run(t); };
             } else if (py::hasattr(runnable, "_plan")) {
               Plan p = runnable.attr("_plan").cast<Plan>();
               work = [&session, p] { session.run(p); };
             } else {
               StepsOrNets x = step_of(runnable);
               if (const Net* n = x.single() ? x.single()->net() : nullptr) {
                 Net net = *n;
                 work = [&session, net] { session.run(net); };
               } else {
                 ExecutionStep step = to_execution_step(x);
                 work = [&session, step] { session.run(step); };
               }
             }
             run_interruptibly([cancel] { cancel->cancel(); }, std::move(work));
           })
      .def(
          "fetch",
          [](PySession& s, const std::string& node, const std::string& blob) {
            Tensor t;
            {
              py::gil_scoped_release released;  // collective under MpiSession: other ranks may take a while
              t = s.session->fetch(node, blob);
            }
            return to_numpy(t);
          },
          py::arg("node"), py::arg("blob"))
      .def(
          "workspace",
          [](PySession& s, const std::string& node) { return PyWorkspace(&s.session->workspace(node), nullptr); },
          py::arg("node") = "local", py::keep_alive<0, 1>(),
          "A node's workspace (C.Workspace), for inspection; moka-only: Caffe2 had one workspace for all nodes.")
      .def(
          "hosts", [](PySession& s, const std::string& node) { return s.session->hosts(node); }, py::arg("node"))
      .def("close", [](PySession& s) { s.session->close(); })
      .def("is_closed", [](PySession& s) { return s.session->is_closed(); });
  py::class_<PyLocalSession, PySession>(m, "LocalSession",
                                        "Runs TaskGroups, Tasks, steps, plans and nets in this "
                                        "process (session.LocalSession).")
      .def(py::init([](bool shared_workspace) {
             LocalSessionOptions o;
             o.shared_workspace = shared_workspace;
             return std::make_unique<PyLocalSession>(o);
           }),
           py::arg("shared_workspace") = false);
}

}  // namespace moka::python
