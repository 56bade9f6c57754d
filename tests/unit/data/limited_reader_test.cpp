// Unit tests: the durations of ReaderWithTimeLimit and ReaderWithDelay — values whose nanoseconds do not
// fit int64 (inf, NaN, 1e300, negative) are refused at build time, naming the argument and the value;
// the largest valid ones become the exact nanosecond count.
#include <gtest/gtest.h>

#include <limits>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using moka::testing::invalid_input;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct BadDuration {
  double seconds;
  const char* shown;  // how the message writes it
};

std::vector<BadDuration> bad_durations() {
  return {{kInf, "= inf"}, {-kInf, "= -inf"},   {kNaN, "= nan"},        {1e300, "= 1e+300"},
          {-1.0, "= -1"},  {-1e-9, "= -1e-09"}, {9.3e9, "= 9300000000"}};
}

TEST(ReaderWithTimeLimit, NonFiniteAndHugeDurationsAreInvalidInput) {
  for (const auto& [secs, shown] : bad_durations()) {
    SCOPED_TRACE(secs);
    const std::string msg = invalid_input([&] { ReaderWithTimeLimit(std::make_shared<CounterReader>(), secs); });
    EXPECT_NE(msg.find("ReaderWithTimeLimit"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("argument \"duration\" ") + shown), std::string::npos) << msg;
    EXPECT_NE(msg.find("duration must be >= 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("finite"), std::string::npos) << msg;
  }
}

TEST(ReaderWithDelay, NonFiniteAndHugeDelaysAreInvalidInput) {
  for (const auto& [secs, shown] : bad_durations()) {
    SCOPED_TRACE(secs);
    const std::string msg = invalid_input([&] { ReaderWithDelay(std::make_shared<CounterReader>(), secs); });
    EXPECT_NE(msg.find("ReaderWithDelay"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("argument \"delay\" ") + shown), std::string::npos) << msg;
    EXPECT_NE(msg.find("finite"), std::string::npos) << msg;
  }
}

// The int64 nanoseconds that the time limit's init net compares the timer against.
int64_t limit_ns(double secs) {
  ReaderWithTimeLimit limited(std::make_shared<CounterReader>(), secs);
  Net init("rwtl_init"), exit_net("rwtl_exit");
  limited.setup_ex(init, exit_net);
  const OperatorDef& fill = init.proto().op.back();
  EXPECT_EQ(fill.type, "ConstantFill");
  for (const Argument& a : fill.arg)
    if (a.name == "value" && a.i) return *a.i;
  ADD_FAILURE() << "no int value argument";
  return -1;
}

TEST(ReaderWithTimeLimit, LargeFiniteDurationsBecomeExactNanoseconds) {
  EXPECT_EQ(limit_ns(2.5), 2'500'000'000);
  EXPECT_EQ(limit_ns(1e9), 1'000'000'000'000'000'000);  // about 31 years: valid, no overflow
  EXPECT_EQ(limit_ns(9.2e9), 9'200'000'000'000'000'000);
  // Large finite delays are accepted too (the sleep would be that long).
  ReaderWithDelay delayed(std::make_shared<CounterReader>(), 9.2e9);
  EXPECT_EQ(delayed.type_name(), "ReaderWithDelay");
}

}  // namespace
}  // namespace moka
