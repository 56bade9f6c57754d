// moka._C's binding of MpiSession (session.MpiSession; docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

namespace moka::python {

/// After bind_dsl (its base, Session).
void bind_mpi_session(pybind11::module_& m);

}  // namespace moka::python
