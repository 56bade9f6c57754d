// Tensors to numpy arrays and back (python/src/numpy_tensor.h).
#include "numpy_tensor.h"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "moka/core/error.h"

namespace py = pybind11;

namespace moka::python {
namespace {

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Bool:
      return py::dtype::of<bool>();
    case DType::Int8:
      return py::dtype::of<int8_t>();
    case DType::UInt8:
      return py::dtype::of<uint8_t>();
    case DType::Int16:
      return py::dtype::of<int16_t>();
    case DType::Int32:
      return py::dtype::of<int32_t>();
    case DType::Int64:
      return py::dtype::of<int64_t>();
    case DType::Float:
      return py::dtype::of<float>();
    case DType::Double:
      return py::dtype::of<double>();
    default:
      throw InvalidInput(fmt::format("a tensor of dtype {} has no numpy dtype", dtype_name(t)));
  }
}

// numpy's kind and item size to moka's dtype; Undefined when moka has none.
DType moka_dtype(char kind, py::ssize_t itemsize) {
  switch (kind) {
    case 'b':
      return itemsize == 1 ? DType::Bool : DType::Undefined;
    case 'i':
      return itemsize == 1   ? DType::Int8
             : itemsize == 2 ? DType::Int16
             : itemsize == 4 ? DType::Int32
             : itemsize == 8 ? DType::Int64
                             : DType::Undefined;
    case 'u':
      return itemsize == 1 ? DType::UInt8 : DType::Undefined;
    case 'f':
      return itemsize == 4 ? DType::Float : itemsize == 8 ? DType::Double : DType::Undefined;
    default:
      return DType::Undefined;
  }
}

std::vector<int64_t> shape_of(const py::array& a) {
  std::vector<int64_t> shape(static_cast<std::size_t>(a.ndim()));
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape[static_cast<std::size_t>(i)] = a.shape(i);
  return shape;
}

}  // namespace

py::object to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::String) {
    py::array out(py::dtype("O"), shape);
    auto values = t.values<std::string>();
    auto* items = static_cast<PyObject**>(out.mutable_data());
    for (std::size_t i = 0; i < values.size(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(values[i].data(), static_cast<py::ssize_t>(values[i].size()));
      if (b == nullptr) throw py::error_already_set();
      Py_XDECREF(items[i]);  // numpy filled the object array with None
      items[i] = b;
    }
    return out;
  }
  py::array out(numpy_dtype(t.dtype()), shape);
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw_data(), t.nbytes());
  return out;
}

Tensor from_numpy(const py::handle& value, const std::string& what) {
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(value);
  const char kind = a.dtype().kind();
  Tensor t;
  if (kind == 'S' || kind == 'U' || kind == 'O') {
    const std::vector<int64_t> shape = shape_of(a);
    t.resize(DType::String, shape);
    auto out = t.values<std::string>();
    py::object flat = a.attr("ravel")();
    std::size_t i = 0;
    for (py::handle item : flat) {
      if (py::isinstance<py::bytes>(item)) {
        out[i++] = item.cast<std::string>();
      } else if (py::isinstance<py::str>(item)) {
        out[i++] = item.cast<std::string>();  // UTF-8
      } else {
        throw TypeError(fmt::format("{}: an object array holds {} (only str and bytes become string tensors)", what,
                                    py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>()));
      }
    }
    return t;
  }
  const DType dtype = moka_dtype(kind, a.itemsize());
  if (dtype == DType::Undefined)
    throw TypeError(
        fmt::format("{}: numpy dtype {} has no moka tensor dtype (bool, int8/16/32/64, uint8, "
                    "float32/64, strings)",
                    what, py::str(a.dtype()).cast<std::string>()));
  py::array c = np.attr("ascontiguousarray")(a);  // (1-d for a 0-d array: the shape comes from `a`)
  t.resize_for_overwrite(dtype, shape_of(a));
  if (t.nbytes() > 0) std::memcpy(t.raw_mutable_data(), c.data(), t.nbytes());
  return t;
}

}  // namespace moka::python
