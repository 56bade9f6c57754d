// Test helper: the message of the InvalidInput a callable throws (fails the test when it throws none).
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

}  // namespace moka::testing
