// moka._C's Workspace (workspace.h): feed and fetch through numpy, nets and plans run from their definitions
// with the GIL released and Ctrl-C honoured (run_interruptibly).
#include "workspace.h"

#include <pybind11/stl.h>

#include <atomic>
#include <utility>

#include "builder.h"
#include "dsl.h"
#include "moka/moka.h"
#include "numpy_tensor.h"

namespace py = pybind11;

namespace moka::python {
namespace {

// A native Net's definition, or a net's JSON text.
NetDef net_def(const py::handle& net) {
  if (py::isinstance<Net>(net)) return net.cast<const Net&>().proto();
  return net_from_json(net.cast<std::string>());
}

}  // namespace

PyWorkspace::PyWorkspace() {
  auto owned = std::make_shared<Workspace>();
  ws_ = owned.get();
  owner_ = std::move(owned);
}

PyWorkspace::PyWorkspace(Workspace* ws, std::shared_ptr<void> owner) : owner_(std::move(owner)), ws_(ws) {}

bool PyWorkspace::feed_blob(const std::string& name, const py::handle& value) {
  Tensor t = from_numpy(value, "FeedBlob \"" + name + "\"");
  ws_->create_blob(name)->get_mutable<Tensor>() = std::move(t);
  return true;
}

py::object PyWorkspace::fetch_blob(const std::string& name) const {
  Blob* b = ws_->get_blob(name);
  if (b == nullptr) throw NotFound("FetchBlob: no blob \"" + name + "\" in the workspace");
  const Tensor* t = b->tensor_or_null();
  if (t == nullptr)
    throw TypeError("FetchBlob: blob \"" + name + "\" holds " + std::string(b->type_name()) + ", not a tensor");
  return to_numpy(*t);
}

void PyWorkspace::run_net_once(const py::handle& net) {
  const NetDef def = net_def(net);
  SimpleNet instance(def, ws_);  // as Caffe2's RunNetOnce: instantiated, run once, not registered
  run_interruptibly([&] { instance.cancel(); }, [&] { instance.run(); });
}

void PyWorkspace::create_net(const py::handle& net, bool overwrite) { moka::create_net(*ws_, net_def(net), overwrite); }

void PyWorkspace::run_net(const std::string& name, int64_t num_iter) {
  NetBase* net = ws_->get_net(name);
  if (net == nullptr) throw NotFound("RunNet: no net \"" + name + "\" in the workspace (CreateNet first)");
  std::atomic<bool> stop{false};
  run_interruptibly(
      [&] {
        stop = true;
        net->cancel();
      },
      [&] {
        for (int64_t i = 0; i < num_iter && !stop; ++i) net->run();
      });
}

void PyWorkspace::run_plan(const py::handle& given) {
  const PlanDef plan =
      py::isinstance<Plan>(given) ? given.cast<const Plan&>().proto() : plan_from_json(given.cast<std::string>());
  auto cancel = std::make_shared<CancelToken>();
  RunOptions options;
  options.cancel = cancel;
  run_interruptibly([&] { cancel->cancel(); }, [&] { moka::run_plan(*ws_, plan, options); });
}

void bind_workspace(py::module_& m) {
  py::class_<PyWorkspace>(m, "Workspace", "A workspace of named blobs and nets (Caffe2's C.Workspace).")
      .def(py::init<>())
      .def("feed_blob", &PyWorkspace::feed_blob, py::arg("name"), py::arg("value"))
      .def("fetch_blob", &PyWorkspace::fetch_blob, py::arg("name"))
      .def("has_blob", &PyWorkspace::has_blob, py::arg("name"))
      .def("blob_names", &PyWorkspace::blobs)
      .def("net_names", &PyWorkspace::nets)
      .def("reset", &PyWorkspace::reset)
      .def("run_net_once", &PyWorkspace::run_net_once, py::arg("net"))
      .def("create_net", &PyWorkspace::create_net, py::arg("net"), py::arg("overwrite") = false)
      .def("run_net", &PyWorkspace::run_net, py::arg("name"), py::arg("num_iter") = 1)
      .def("run_plan", &PyWorkspace::run_plan, py::arg("plan"));
}

}  // namespace moka::python
