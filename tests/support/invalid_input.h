// Test helpers: the message of the InvalidInput (or any moka::Error) a callable throws; the test fails
// when it throws none.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "moka/core/error.h"

namespace moka::testing {

template <class F>
std::string invalid_input(F&& fn) {
  try {
    fn();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidInput thrown";
  return {};
}

/// The message of any moka::Error the callable throws.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no moka::Error thrown";
  return {};
}

}  // namespace moka::testing
