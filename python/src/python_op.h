// Python operators: ops.Python(f) / net.Python(f) (Caffe2's calling convention, docs/python.md §3) as moka's
// callable operators, taking the GIL only to call Python.
#pragma once

#include <pybind11/pybind11.h>

#include "moka/operators/callable.h"

namespace moka::python {

/// The builder of a Python operator: `f` is a function f(inputs, outputs) — called with lists of blob views
/// (`fetch()`, `feed(value)`, `data`, `shape`, `reshape(shape)`) — or Caffe2's tuple (builder, args, kwargs),
/// whose builder(*args, **kwargs) makes one such function per operator instance. An exception f raises
/// becomes a moka::RuntimeError carrying its type, message and traceback.
CallableBuilder python_op_builder(const pybind11::object& f);

void bind_python_op(pybind11::module_& m);

}  // namespace moka::python
