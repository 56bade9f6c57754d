// Helpers shared by the core unit tests: readable Tensor printing for gtest and exception-message capture.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <ostream>
#include <string>

#include "moka/core/tensor.h"

namespace moka {

// gtest finds this by ADL, so failed EXPECT_EQ on tensors print "int64[2] {1, 2}" instead of bytes.
inline void PrintTo(const Tensor& t, std::ostream* os) { *os << t.to_string(); }

namespace test {

// Runs `body`; returns what() of the E it throws. Records a failure if it throws nothing or something else.
template <class E, class F>
std::string message_of(F&& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "nothing thrown";
  return {};
}

}  // namespace test
}  // namespace moka
