// Python values as operator arguments (python/src/arguments.h).
#include "arguments.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "builder.h"
#include "moka/builder/net.h"
#include "moka/core/error.h"
#include "numpy_tensor.h"

namespace py = pybind11;

namespace moka::python {
namespace {

bool is_int(const py::handle& v) {
  return py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) ||
         py::isinstance(v, py::module_::import("numpy").attr("integer")) ||
         py::isinstance(v, py::module_::import("numpy").attr("bool_"));
}
bool is_float(const py::handle& v) {
  return py::isinstance<py::float_>(v) || py::isinstance(v, py::module_::import("numpy").attr("floating"));
}
bool is_text(const py::handle& v) {
  return py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v) ||
         py::hasattr(v, "_moka_blob_name");  // a core.BlobReference
}
std::string text_of(const py::handle& v) {
  if (py::hasattr(v, "_moka_blob_name")) return v.attr("_moka_blob_name").cast<std::string>();
  return v.cast<std::string>();
}
// A core.Net (the Python class, holding the native one in `_net`) or a native Net.
const Net* net_of(const py::handle& v) {
  if (py::isinstance<Net>(v)) return &v.cast<const Net&>();
  if (py::hasattr(v, "_net") && py::isinstance<Net>(v.attr("_net"))) return &v.attr("_net").cast<const Net&>();
  return nullptr;
}
std::string type_name(const py::handle& v) { return py::str(py::type::handle_of(v).attr("__name__")); }

}  // namespace

Argument to_argument(const std::string& name, const py::handle& given) {
  Argument a;
  a.name = name;
  py::object value = py::reinterpret_borrow<py::object>(given);
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance(value, np.attr("ndarray"))) value = value.attr("tolist")();
  if (const Net* net = net_of(value)) {
    a.n = std::make_shared<const NetDef>(net->proto());
  } else if (is_int(value)) {
    a.i = py::int_(value).cast<int64_t>();
  } else if (is_float(value)) {
    a.f = py::float_(value).cast<double>();
  } else if (is_text(value)) {
    a.s = text_of(value);
  } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::sequence items = value;
    bool ints = true, floats = true, texts = true, nets = true;
    for (py::handle item : items) {
      ints = ints && is_int(item);
      floats = floats && (is_int(item) || is_float(item));
      texts = texts && is_text(item);
      nets = nets && net_of(item) != nullptr;
    }
    if (ints) {
      a.ints.emplace();
      for (py::handle item : items)
        a.ints->push_back(py::int_(py::reinterpret_borrow<py::object>(item)).cast<int64_t>());
    } else if (floats) {
      a.floats.emplace();
      for (py::handle item : items)
        a.floats->push_back(py::float_(py::reinterpret_borrow<py::object>(item)).cast<double>());
    } else if (texts) {
      a.strings.emplace();
      for (py::handle item : items) a.strings->push_back(text_of(item));
    } else if (nets && py::len(items) > 0) {
      a.nets.emplace();
      for (py::handle item : items) a.nets->push_back(net_of(item)->proto());
    } else {
      std::string kinds;
      for (py::handle item : items) kinds += (kinds.empty() ? "" : ", ") + type_name(item);
      throw TypeError(
          fmt::format("argument \"{}\": a list of [{}] is not an operator argument (ints, floats, "
                      "strings or nets)",
                      name, kinds));
    }
  } else {
    throw TypeError(
        fmt::format("argument \"{}\": a value of type {} is not an operator argument", name, type_name(value)));
  }
  return a;
}

ConstValue const_value(const py::handle& given) {
  py::object v = py::reinterpret_borrow<py::object>(given);
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance(v, np.attr("ndarray"))) {
    if (v.attr("ndim").cast<int>() > 1) throw InvalidInput("Const: a value of more than one dimension (use FeedBlob)");
    v = v.attr("tolist")();
  }
  if (py::isinstance(v, np.attr("generic"))) v = v.attr("item")();
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence items = v;
    bool bools = true, ints = true, floats = true, texts = true;
    for (py::handle x : items) {
      const bool b = py::isinstance<py::bool_>(x), i = !b && py::isinstance<py::int_>(x);
      bools = bools && b;
      ints = ints && i;
      floats = floats && (i || py::isinstance<py::float_>(x));
      texts = texts && (py::isinstance<py::str>(x) || py::isinstance<py::bytes>(x));
    }
    if (bools && py::len(items) > 0) return items.cast<std::vector<bool>>();
    if (ints) return items.cast<std::vector<int64_t>>();
    if (floats) return items.cast<std::vector<double>>();
    if (texts) return items.cast<std::vector<std::string>>();
  }
  throw TypeError("Const: a value of type " + py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>() +
                  " (a number, bool, string, or a list of them)");
}

ConstOptions const_options(const py::handle& value, const py::handle& blob_out, std::optional<int> dtype) {
  ConstOptions opts;
  if (!blob_out.is_none()) opts.blob_out = blob_list(blob_out).at(0);
  py::module_ np = py::module_::import("numpy");
  if (dtype) {
    opts.dtype = static_cast<DType>(*dtype);
  } else if (py::isinstance(value, np.attr("ndarray")) || py::isinstance(value, np.attr("generic"))) {
    opts.dtype = from_numpy(np.attr("empty")(0, py::arg("dtype") = value.attr("dtype")), "Const").dtype();
  }
  return opts;
}

}  // namespace moka::python
