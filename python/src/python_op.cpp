// Python operators (python/src/python_op.h).
#include "python_op.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "builder.h"
#include "moka/builder/ops.h"
#include "moka/core/error.h"
#include "numpy_tensor.h"

namespace py = pybind11;

namespace moka::python {
namespace {

// A Python object kept by C++ (a registered builder, an operator's function): released under the GIL, and not
// at all once the interpreter has finished (the registry of callables outlives it).
std::shared_ptr<py::object> keep(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    } else {
      p->release();  // the interpreter is gone: nothing to decrement
      delete p;
    }
  });
}

// A blob as the function sees it, valid during its call.
struct BlobView {
  Blob* blob;
  Tensor& tensor() const {
    Tensor* t = blob->tensor_or_null();
    return t ? *t : blob->get_mutable<Tensor>();
  }
};

std::string python_error_text(py::error_already_set& e) {
  std::string text;
  try {
    py::module_ tb = py::module_::import("traceback");
    py::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
    for (py::handle l : lines) text += l.cast<std::string>();
  } catch (...) {
    text = e.what();
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Python operators on several threads queue here before they wait for the GIL. Threads that wait for the GIL
// itself make CPython hand it over on every release (the holder sleeps until a waiter has taken it: a context
// switch per call, 3x slower on two threads than on one); waiting on this gate instead, the GIL has no waiter
// and a release costs nothing. The wait is bounded (a Python function that runs Python operators on other
// threads, through a nested run, must not deadlock on it): past it a thread waits for the GIL as before.
class PythonCallGate {
 public:
  PythonCallGate() : lock_(gate(), std::defer_lock) { (void)lock_.try_lock_for(std::chrono::milliseconds(2)); }

 private:
  static std::timed_mutex& gate() {
    static std::timed_mutex m;
    return m;
  }
  std::unique_lock<std::timed_mutex> lock_;
};

CallableFn python_fn(std::shared_ptr<py::object> f) {
  return [f](std::span<Blob* const> inputs, std::span<Blob* const> outputs) {
    const PythonCallGate gate;  // released after the GIL
    py::gil_scoped_acquire gil;
    try {
      py::list in, out;
      for (Blob* b : inputs) in.append(BlobView{b});
      for (Blob* b : outputs) out.append(BlobView{b});
      (*f)(in, out);
    } catch (py::error_already_set& e) {
      throw RuntimeError("Python operator raised:\n" + python_error_text(e));
    }
  };
}

}  // namespace

CallableBuilder python_op_builder(const py::object& f) {
  if (py::isinstance<py::tuple>(f)) {
    py::tuple t = f;
    if (py::len(t) != 3)
      throw InvalidInput("ops.Python: a builder is a tuple (builder, args, kwargs) of 3, not " +
                         std::to_string(py::len(t)));
    auto builder = keep(t[0]);
    auto args = keep(py::tuple(t[1]));
    auto kwargs = keep(py::dict(t[2]));
    return [builder, args, kwargs]() -> CallableFn {
      py::gil_scoped_acquire gil;
      try {
        py::object fn = (*builder)(*py::tuple(*args), **py::dict(*kwargs));
        return python_fn(keep(std::move(fn)));
      } catch (py::error_already_set& e) {
        throw RuntimeError("Python operator builder raised:\n" + python_error_text(e));
      }
    };
  }
  if (!PyCallable_Check(f.ptr())) throw TypeError("ops.Python: expected a function or (builder, args, kwargs)");
  auto fn = keep(f);
  return [fn]() -> CallableFn { return python_fn(fn); };
}

void bind_python_op(py::module_& m) {
  py::class_<BlobView>(m, "BlobView", "A blob inside a Python operator's call (fetch, feed, data, shape).")
      .def("fetch", [](const BlobView& v) { return to_numpy(v.tensor()); })
      .def("feed",
           [](const BlobView& v, const py::handle& value) {
             v.tensor() = from_numpy(value, "a Python operator's output");
             return true;
           })
      .def_property_readonly("shape", [](const BlobView& v) { return v.tensor().shape(); })
      .def("reshape",
           [](const BlobView& v, const std::vector<int64_t>& shape) {
             Tensor& t = v.tensor();
             t.resize(t.defined() ? t.dtype() : DType::Float, shape);
           })
      // A numpy view of the tensor's storage (no copy), valid during the call.
      .def_property_readonly("data", [](py::object self) -> py::object {
        const BlobView& v = self.cast<const BlobView&>();
        Tensor& t = v.tensor();
        if (t.dtype() == DType::String) return to_numpy(t);
        py::object copy = to_numpy(t);  // the dtype and shape numpy gives it
        py::array like = copy;
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
        return py::array(like.dtype(), shape, t.raw_mutable_data(), self);
      });

  m.def(
      "python_op",
      [](const py::object& f, const py::handle& inputs, const py::handle& outputs, const py::handle& net) {
        CallableBuilder builder = python_op_builder(f);
        std::vector<std::string> names;
        BlobRefs refs;
        if (net.is_none()) {
          refs = ops::call(std::move(builder), blob_list(inputs), outputs_of(outputs));
        } else {
          Net& n = net.cast<Net&>();
          refs = n.op(kCallableOpType, blob_list(inputs), outputs_of(outputs),
                      {Arg("token", register_callable(std::move(builder)))});
        }
        for (const BlobRef& b : refs) names.push_back(b.name());
        return names;
      },
      py::arg("f"), py::arg("inputs"), py::arg("outputs"), py::arg("net") = py::none());
}

}  // namespace moka::python
