// Python values as operator arguments (Caffe2's utils.MakeArgument rules, docs/python.md §2).
#pragma once

#include <pybind11/pybind11.h>

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

}  // namespace moka::python
