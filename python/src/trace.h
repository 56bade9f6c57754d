// moka._C's bindings of timeline traces (moka/core/trace.h): start_trace, stop_trace, trace_running.
#pragma once

#include <pybind11/pybind11.h>

namespace moka::python {

void bind_trace(pybind11::module_& m);

}  // namespace moka::python
