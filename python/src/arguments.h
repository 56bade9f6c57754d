// Python values as operator arguments (Caffe2's utils.MakeArgument rules, docs/python.md §2).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "moka/builder/net.h"
#include "moka/defs/argument.h"

namespace moka::python {

/// `value` as argument `name`: bool and int → i, float → f, str/bytes → s, a Net → n, lists (and numpy arrays)
/// of ints, floats, strings or Nets → ints, floats, strings, nets. TypeError naming the argument otherwise.
Argument to_argument(const std::string& name, const pybind11::handle& value);

/// A value for Const (Caffe2's `net.Const` / `ops.Const`): bool, int (int64), float (float64), str/bytes, a 1-d list
/// of one of them or a 0-/1-d numpy array. InvalidInput for more dimensions, TypeError for anything else.
ConstValue const_value(const pybind11::handle& value);

/// Const's options: `blob_out` (None or a blob), and the element type — `dtype` (a DType code) when given, else
/// a numpy value's own dtype (so `np.float32(2)` stays float32, as in Caffe2), else the value's kind.
ConstOptions const_options(const pybind11::handle& value, const pybind11::handle& blob_out, std::optional<int> dtype);

}  // namespace moka::python
