// moka._C's binding of MpiSession (moka/mpi/mpi_session.h): session.MpiSession, a session whose nodes live on the
// ranks of an Open MPI job, with the run, fetch and workspace methods of every session (dsl.cpp; docs/python.md).
#include "mpi_session.h"

#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>

#include "binding_objects.h"
#include "moka/mpi/mpi_session.h"

namespace moka::python {

namespace py = pybind11;

namespace {

struct PyMpiSession : PySession {
  explicit PyMpiSession(MpiSessionOptions o) : PySession(std::make_unique<MpiSession>(std::move(o))) {}
  MpiSession& mpi() { return static_cast<MpiSession&>(*session); }
};

}  // namespace

void bind_mpi_session(py::module_& m) {
  py::class_<PyMpiSession, PySession>(m, "MpiSession",
                                      "Runs TaskGroups, Tasks, steps, plans and nets across the ranks of an MPI job, "
                                      "each node on one rank (session.MpiSession).")
      .def(py::init([](std::map<std::string, int> node_ranks) {
             MpiSessionOptions o;
             o.node_ranks = std::move(node_ranks);
             std::unique_ptr<PyMpiSession> s;
             {
               py::gil_scoped_release released;  // collective: MPI's start-up waits for every rank
               s = std::make_unique<PyMpiSession>(std::move(o));
             }
             return s;
           }),
           py::arg("node_ranks") = std::map<std::string, int>{})
      .def_property_readonly("rank", [](PyMpiSession& s) { return s.mpi().rank(); })
      .def_property_readonly("size", [](PyMpiSession& s) { return s.mpi().size(); })
      .def(
          "rank_of", [](PyMpiSession& s, const std::string& node) { return s.mpi().rank_of(node); }, py::arg("node"));
  m.def("launched_by_mpi", &launched_by_mpi, "Whether mpirun or srun started this process.");
}

}  // namespace moka::python
