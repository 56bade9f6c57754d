// moka._C's bindings of the definition builders: Net, ExecutionStep, execution_step, Plan, NameScope
// (moka/builder/, docs/python.md §2) — the engine behind moka.core.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/net.h"

namespace moka::python {

/// Blob names from a Python str, bytes, core.BlobReference, or a list of them.
std::vector<BlobRef> blob_list(const pybind11::handle& blobs);
/// Caffe2's `outputs=`: None (one automatic name), an int (that many), a name or a list of names.
Outputs outputs_of(const pybind11::handle& outputs);

void bind_builder(pybind11::module_& m);

}  // namespace moka::python
