// moka._C's bindings of the definition builders (python/src/builder.h).
#include "builder.h"

#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "arguments.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/name_scope.h"
#include "moka/builder/plan.h"
#include "moka/core/error.h"
#include "moka/defs/json.h"

namespace py = pybind11;

namespace moka::python {
namespace {

BlobRef blob_of(const py::handle& b) {
  if (py::hasattr(b, "_moka_blob_name")) return BlobRef(b.attr("_moka_blob_name").cast<std::string>());
  if (py::isinstance<py::str>(b) || py::isinstance<py::bytes>(b)) return BlobRef(b.cast<std::string>());
  throw TypeError("a blob is named by a str, bytes or BlobReference, not " +
                  py::str(py::type::handle_of(b).attr("__name__")).cast<std::string>());
}

std::vector<Argument> arguments_of(const py::dict& kwargs) {
  std::vector<Argument> args;
  for (auto [k, v] : kwargs) {
    if (v.is_none()) continue;  // Caffe2 leaves an argument passed as None out
    args.push_back(to_argument(k.cast<std::string>(), v));
  }
  return args;
}

// The steps and nets of execution_step's `steps_or_nets` (a Net, an ExecutionStep, or a list of them).
StepsOrNets steps_or_nets(const py::handle& items) {
  auto one = [](const py::handle& x) -> StepOrNet {
    py::handle native = py::hasattr(x, "_step") ? x.attr("_step") : py::hasattr(x, "_net") ? x.attr("_net") : x;
    if (py::isinstance<ExecutionStep>(native)) return native.cast<ExecutionStep>();
    if (py::isinstance<Net>(native)) return native.cast<Net>();
    throw TypeError("execution_step: " + py::str(py::type::handle_of(x).attr("__name__")).cast<std::string>() +
                    " is neither a Net nor an ExecutionStep");
  };
  if (items.is_none()) return {};
  if (py::isinstance<py::list>(items) || py::isinstance<py::tuple>(items)) {
    std::vector<StepOrNet> list;
    for (py::handle x : items) list.push_back(one(x));
    return StepsOrNets(std::move(list));
  }
  StepOrNet single = one(items);
  if (const Net* n = single.net()) return StepsOrNets(*n);
  return StepsOrNets(*single.step());
}

}  // namespace

std::vector<BlobRef> blob_list(const py::handle& blobs) {
  if (blobs.is_none()) return {};
  if (py::isinstance<py::list>(blobs) || py::isinstance<py::tuple>(blobs)) {
    std::vector<BlobRef> out;
    for (py::handle b : blobs) out.push_back(blob_of(b));
    return out;
  }
  return {blob_of(blobs)};
}

Outputs outputs_of(const py::handle& outputs) {
  if (outputs.is_none()) return Outputs();
  if (py::isinstance<py::bool_>(outputs)) throw TypeError("outputs: a bool is not a number of outputs");
  if (py::isinstance<py::int_>(outputs)) return Outputs(outputs.cast<int>());
  return Outputs(blob_list(outputs));
}

void bind_builder(py::module_& m) {
  py::class_<Net>(m, "Net", "A net under construction (moka::Net; use moka.core.Net).")
      .def(py::init<std::string>(), py::arg("name") = "")
      .def_static(
          "from_json",
          [](const std::string& text, bool unique_name) { return Net::from_proto(net_from_json(text), unique_name); },
          py::arg("text"), py::arg("unique_name") = true)
      .def_property_readonly("name", &Net::name)
      .def(
          "op",
          [](Net& net, const std::string& type, const py::handle& inputs, const py::handle& outputs,
             const py::dict& kwargs) {
            std::vector<Arg> args;
            for (Argument& a : arguments_of(kwargs)) args.emplace_back(std::move(a));
            std::vector<std::string> names;
            for (const BlobRef& b : net.op(type, blob_list(inputs), outputs_of(outputs), std::move(args)))
              names.push_back(b.name());
            return names;
          },
          py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("args"))
      .def(
          "next_name",
          [](Net& net, const std::string& prefix, std::optional<int> output_id) {
            return net.next_name(prefix, output_id).name();
          },
          py::arg("prefix") = "", py::arg("output_id") = py::none())
      .def(
          "next_blob", [](Net& net, const std::string& prefix) { return net.next_blob(prefix).name(); },
          py::arg("prefix") = "unnamed")
      .def(
          "next_scoped_blob", [](Net& net, const std::string& prefix) { return net.next_scoped_blob(prefix).name(); },
          py::arg("prefix") = "unnamed")
      .def(
          "const",
          [](Net& net, const py::handle& value, const py::handle& blob_out, std::optional<int> dtype) {
            return net.Const(const_value(value), const_options(value, blob_out, dtype)).name();
          },
          py::arg("value"), py::arg("blob_out") = py::none(), py::arg("dtype") = py::none())
      .def("is_defined", [](const Net& net, const py::handle& b) { return net.is_defined(blob_of(b)); })
      .def("add_external_input",
           [](Net& net, const py::handle& b) { return net.add_external_input(blob_of(b)).name(); })
      .def("add_external_output", [](Net& net, const py::handle& b) { net.add_external_output(blob_of(b)); })
      .def(
          "to_json", [](const Net& net, int indent) { return to_json(net.proto(), indent); }, py::arg("indent") = -1)
      .def("__eq__", [](const Net& a, const Net& b) { return a == b; });

  py::class_<ExecutionStep>(m, "ExecutionStep", "A step of a plan (moka::ExecutionStep; use moka.core).")
      .def(py::init<std::string>(), py::arg("name") = "")
      .def_property_readonly("name", &ExecutionStep::name)
      .def("set_iter", &ExecutionStep::set_iter)
      .def("set_create_workspace", &ExecutionStep::set_create_workspace)
      .def("set_num_concurrent_instances", &ExecutionStep::set_num_concurrent_instances)
      .def("set_only_once", &ExecutionStep::set_only_once)
      .def("set_should_stop_blob", [](ExecutionStep& s, const py::handle& b) { s.set_should_stop_blob(blob_of(b)); })
      .def("set_report_net", &ExecutionStep::set_report_net)
      .def("set_concurrent_substeps", &ExecutionStep::set_concurrent_substeps)
      .def("run_every_millis", &ExecutionStep::run_every_millis)
      .def("add_substep", &ExecutionStep::add_substep)
      .def("add_net", &ExecutionStep::add_net)
      .def("has_nets", &ExecutionStep::has_nets)
      .def("has_substeps", &ExecutionStep::has_substeps)
      .def("nets", &ExecutionStep::nets)
      .def("substeps", &ExecutionStep::substeps)
      .def(
          "to_json", [](const ExecutionStep& s, int indent) { return to_json(s.proto(), indent); },
          py::arg("indent") = -1);

  m.def(
      "execution_step",
      [](const std::string& default_name, const py::handle& items, std::optional<int64_t> num_iter,
         std::optional<Net> report_net, std::optional<int32_t> report_interval, std::optional<bool> concurrent_substeps,
         const py::handle& should_stop_blob, std::optional<bool> only_once,
         std::optional<int32_t> num_concurrent_instances, bool create_workspace, int64_t run_every_ms) {
        StepOptions o;
        o.num_iter = num_iter;
        o.report_net = report_net;
        o.report_interval = report_interval;
        o.concurrent_substeps = concurrent_substeps;
        if (!should_stop_blob.is_none()) o.should_stop_blob = blob_of(should_stop_blob);
        o.only_once = only_once;
        o.num_concurrent_instances = num_concurrent_instances;
        o.create_workspace = create_workspace;
        o.run_every_ms = run_every_ms;
        return execution_step(default_name, steps_or_nets(items), o);
      },
      py::arg("default_name"), py::arg("steps_or_nets"), py::arg("num_iter") = py::none(),
      py::arg("report_net") = py::none(), py::arg("report_interval") = py::none(),
      py::arg("concurrent_substeps") = py::none(), py::arg("should_stop_blob") = py::none(),
      py::arg("only_once") = py::none(), py::arg("num_concurrent_instances") = py::none(),
      py::arg("create_workspace") = false, py::arg("run_every_ms") = 0);

  py::class_<Plan>(m, "Plan", "A plan (moka::Plan; use moka.core.Plan).")
      .def(py::init<std::string>())
      .def(py::init<const ExecutionStep&>())
      .def_property_readonly("name", &Plan::name)
      .def("add_step", &Plan::add_step)
      .def("nets", &Plan::nets)
      .def("steps", &Plan::steps)
      .def(
          "to_json", [](const Plan& p, int indent) { return to_json(p.proto(), indent); }, py::arg("indent") = -1);

  // NameScope as a context manager: the C++ guard lives from __enter__ to __exit__.
  struct PyNameScope {
    std::string prefix;
    bool reset;
    std::unique_ptr<NameScope> guard;
  };
  py::class_<PyNameScope>(m, "NameScope", "Prefixes the names made inside the block (moka::NameScope).")
      .def(py::init([](const py::handle& prefix, bool reset) {
             return PyNameScope{prefix.is_none() ? std::string() : py::str(prefix).cast<std::string>(), reset, nullptr};
           }),
           py::arg("prefix"), py::arg("reset") = false)
      .def("__enter__",
           [](PyNameScope& s) {
             if (s.guard) throw InvalidInput("NameScope: entered twice");
             s.guard = std::make_unique<NameScope>(s.prefix, s.reset);
           })
      .def("__exit__", [](PyNameScope& s, const py::args&) {
        s.guard.reset();
        return false;
      });
  m.def("current_name_scope", &current_name_scope);
  m.def("scoped_name", &scoped_name);
}

}  // namespace moka::python
