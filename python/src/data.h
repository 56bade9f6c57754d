// moka._C's bindings of data pipelines: schema, Dataset, readers (dataio), Queue (queue_util) and pipe with Python
// processors (pipeline) — the engine behind moka.schema, moka.dataset, moka.dataio, moka.queue_util and
// moka.pipeline (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

namespace moka::python {

void bind_data(pybind11::module_& m);
/// DBFileReader and CachedReader (moka.db_file_reader, moka.cached_reader); after bind_data (their base, Reader).
void bind_db_file_reader(pybind11::module_& m);

}  // namespace moka::python
