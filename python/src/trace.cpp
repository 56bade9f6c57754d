// moka._C's bindings of timeline traces (moka/core/trace.h), behind moka.trace (docs/tracing.md).
#include "trace.h"

#include <pybind11/stl.h>

#include <string>

#include "moka/exec/trace_file.h"

namespace moka::python {

namespace py = pybind11;

void bind_trace(py::module_& m) {
  m.def(
      "start_trace",
      [](std::string path, const std::string& level, double sample_period_s) {
        TraceOptions o;
        o.path = std::move(path);
        o.level = trace_level_from_name(level);
        o.sample_period = std::chrono::milliseconds(static_cast<int64_t>(sample_period_s * 1000));
        start_trace(std::move(o));
      },
      py::arg("path"), py::arg("level") = "steps", py::arg("sample_period") = 0.02);
  m.def(
      "stop_trace",
      [] {
        const TraceSummary s = stop_trace();
        py::dict d;
        d["path"] = s.path;
        d["events"] = s.events;
        d["dropped"] = s.dropped;
        return d;
      },
      "Stops the trace and writes its file; returns {'path', 'events', 'dropped'}.");
  m.def("trace_running", &trace_running);
}

}  // namespace moka::python
