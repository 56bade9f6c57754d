// Tensors to numpy arrays and back, with Caffe2's dtype mapping (docs/python.md §3).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "moka/core/tensor.h"

namespace moka::python {

/// A copy of `t` as a numpy array of its dtype and shape (0-d for a scalar); strings as an object array of
/// bytes, as Caffe2's FetchBlob returns them.
pybind11::object to_numpy(const Tensor& t);

/// `value` (a numpy array, or anything numpy.asarray takes: Python scalars, lists, bytes, str) as a tensor:
/// bool, int8/16/32/64, uint8, float32/64 keep their dtype, str/bytes/object arrays of them become strings.
/// InvalidInput naming `what` for a dtype moka has no tensor of (complex, uint16/32/64, float16, datetime).
Tensor from_numpy(const pybind11::handle& value, const std::string& what);

}  // namespace moka::python
