// moka._C: the native part of the Python package (python/moka/): moka's errors as Python exceptions and the
// registration of every binding (workspace, builders, DSL and sessions, Python operators; docs/python.md).
#include <pybind11/pybind11.h>

#include <exception>

#include "builder.h"
#include "data.h"
#include "dsl.h"
#include "job.h"
#include "moka/moka.h"
#include "mpi_session.h"
#include "python_op.h"
#include "trace.h"
#include "workspace.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  using namespace moka;
  m.doc() = "moka's native runtime (use the moka package, not this module)";

  // moka's errors (moka/core/error.h), each also the Python exception a caller would catch for it.
  py::object base = py::reinterpret_borrow<py::object>(PyExc_Exception);
  static py::exception<Error> error(m, "Error", base.ptr());
  static py::object invalid_input = py::reinterpret_steal<py::object>(
      PyErr_NewException("moka.InvalidInput", py::make_tuple(error, py::handle(PyExc_ValueError)).ptr(), nullptr));
  static py::object corrupt_data =
      py::reinterpret_steal<py::object>(PyErr_NewException("moka.CorruptData", invalid_input.ptr(), nullptr));
  static py::object type_error = py::reinterpret_steal<py::object>(
      PyErr_NewException("moka.TypeError", py::make_tuple(error, py::handle(PyExc_TypeError)).ptr(), nullptr));
  static py::object not_found = py::reinterpret_steal<py::object>(
      PyErr_NewException("moka.NotFound", py::make_tuple(error, py::handle(PyExc_LookupError)).ptr(), nullptr));
  static py::object runtime_error = py::reinterpret_steal<py::object>(
      PyErr_NewException("moka.RuntimeError", py::make_tuple(error, py::handle(PyExc_RuntimeError)).ptr(), nullptr));
  static py::object out_of_memory = py::reinterpret_steal<py::object>(PyErr_NewException(
      "moka.OutOfMemory", py::make_tuple(runtime_error, py::handle(PyExc_MemoryError)).ptr(), nullptr));
  static py::object cancelled =
      py::reinterpret_steal<py::object>(PyErr_NewException("moka.Cancelled", error.ptr(), nullptr));
  error.attr("__module__") = "moka";
  m.attr("InvalidInput") = invalid_input;
  m.attr("CorruptData") = corrupt_data;
  m.attr("TypeError") = type_error;
  m.attr("NotFound") = not_found;
  m.attr("RuntimeError") = runtime_error;
  m.attr("OutOfMemory") = out_of_memory;
  m.attr("Cancelled") = cancelled;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CorruptData& e) {
      PyErr_SetString(corrupt_data.ptr(), e.what());
    } catch (const InvalidInput& e) {
      PyErr_SetString(invalid_input.ptr(), e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(type_error.ptr(), e.what());
    } catch (const NotFound& e) {
      PyErr_SetString(not_found.ptr(), e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(out_of_memory.ptr(), e.what());
    } catch (const RuntimeError& e) {
      PyErr_SetString(runtime_error.ptr(), e.what());
    } catch (const Cancelled& e) {
      PyErr_SetString(cancelled.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  moka::python::bind_workspace(m);
  moka::python::bind_builder(m);
  moka::python::bind_dsl(m);
  moka::python::bind_python_op(m);
  moka::python::bind_data(m);
  moka::python::bind_db_file_reader(m);
  moka::python::bind_text_file_reader(m);
  moka::python::bind_trace(m);
  moka::python::bind_job(m);
  moka::python::bind_mpi_session(m);
}
