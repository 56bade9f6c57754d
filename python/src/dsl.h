// moka._C's bindings of the building DSL and sessions: NetBuilder and ops (net_builder), Cluster, Node, Task,
// TaskGroup, TaskOutput (task), LocalSession (session), each `with` block over the C++ builders (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

namespace moka::python {

void bind_dsl(pybind11::module_& m);

/// Runs `work` (C++ only) on a thread of its own while this thread, the GIL released, waits and checks for
/// signals every 50 ms: Ctrl-C calls `interrupt` (which must stop the work soon) and raises KeyboardInterrupt
/// once the work has ended; otherwise the work's own exception, if any, is rethrown.
void run_interruptibly(const std::function<void()>& interrupt, std::function<void()> work);

}  // namespace moka::python
