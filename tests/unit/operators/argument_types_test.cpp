// Unit tests of the schema's argument type checks: a float argument given as a string is refused by name when the
// operator is made (it once passed the check and was read as an absent integer).
#include <gtest/gtest.h>

#include "ops_test_util.h"

namespace moka {
namespace {

using test::create_op;
using test::expect_error;

TEST(ArgumentTypes, AFloatArgumentGivenAsAStringIsRefused) {
  Workspace ws;
  expect_error<InvalidInput>(
      [&] { create_op(ws, "DequeueBlobs", {"q"}, {"x"}, {make_arg("timeout_secs", std::string("soon"))}); },
      {"timeout_secs", "must be float", "got \"s\""});
  expect_error<InvalidInput>([&] { create_op(ws, "Scale", {"x"}, {"y"}, {make_arg("scale", std::string("2"))}); },
                             {"scale", "must be float"});
  // An integer is still a float argument's value.
  test::feed(ws, "x", Tensor::vector<float>({1.5f}));
  EXPECT_NO_THROW(create_op(ws, "Scale", {"x"}, {"y"}, {make_arg("scale", int64_t{2})}));
  // A fill's value (a number: int, float or string by dtype) still takes a string.
  EXPECT_NO_THROW(create_op(ws, "ConstantFill", {}, {"s"},
                            {make_arg("value", std::string("a")), make_arg("dtype", int64_t{4}),
                             make_arg("shape", std::vector<int64_t>{1})}));
}

}  // namespace
}  // namespace moka
