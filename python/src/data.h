// moka._C's bindings of data pipelines: schema, Dataset, readers (dataio), Queue (queue_util) and pipe with Python
// processors (pipeline) — the engine behind moka.schema, moka.dataset, moka.dataio, moka.queue_util and
// moka.pipeline (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "moka/builder/net.h"
#include "moka/data/reader.h"

namespace moka::python {

void bind_data(pybind11::module_& m);
/// A reader argument: a C++ reader as is, a Python reader (a dataio.Reader subclass) as a C++ Reader that calls
/// its methods, None as null (for the C++ reader to refuse); TypeError naming `what` for anything else.
std::shared_ptr<Reader> reader_argument(const pybind11::handle& reader, const char* what);
/// A net argument: a core.Net, or `ops` (the active NetBuilder's current net); TypeError naming `what` otherwise.
Net net_argument(const pybind11::handle& net, const char* what);
/// DBFileReader and CachedReader (moka.db_file_reader, moka.cached_reader); after bind_data (their base, Reader).
void bind_db_file_reader(pybind11::module_& m);
/// TextFileReader (moka.text_file_reader); after bind_data.
void bind_text_file_reader(pybind11::module_& m);

}  // namespace moka::python
