// Unit tests for moka::Error and its subclasses: messages, context chains, dynamic type preserved.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "moka/core/error.h"

namespace moka {
namespace {

TEST(Error, MessageWithoutContext) {
  Error e("something broke");
  EXPECT_STREQ(e.what(), "something broke");
  EXPECT_EQ(e.message(), "something broke");
  EXPECT_TRUE(e.context().empty());
}

TEST(Error, ContextIsPrependedOutermostFirst) {
  RuntimeError e("operator failed");
  e.add_context("operator #2 (Add)");
  e.add_context("net \"n\"");
  e.add_context("step \"train\"");
  EXPECT_STREQ(e.what(), "step \"train\" > net \"n\" > operator #2 (Add): operator failed");
  EXPECT_EQ(e.message(), "operator failed");
  ASSERT_EQ(e.context().size(), 3u);
  EXPECT_EQ(e.context().front(), "step \"train\"");
  EXPECT_EQ(e.context().back(), "operator #2 (Add)");
}

TEST(Error, RethrowKeepsDynamicType) {
  try {
    try {
      throw NotFound("blob \"x\" does not exist");
    } catch (Error& e) {
      e.add_context("net \"init\"");
      throw;
    }
  } catch (const NotFound& e) {
    EXPECT_STREQ(e.what(), "net \"init\": blob \"x\" does not exist");
    return;
  } catch (...) {
    FAIL() << "NotFound lost its type";
  }
  FAIL() << "nothing thrown";
}

TEST(Error, HierarchyIsCatchableAsBaseAndStdException) {
  auto throws = [](int which) {
    switch (which) {
      case 0:
        throw InvalidInput("a");
      case 1:
        throw TypeError("b");
      case 2:
        throw NotFound("c");
      case 3:
        throw RuntimeError("d");
      default:
        throw Cancelled("e");
    }
  };
  for (int i = 0; i < 5; ++i) {
    EXPECT_THROW(throws(i), Error) << i;
    EXPECT_THROW(throws(i), std::exception) << i;
  }
  EXPECT_THROW(throws(0), InvalidInput);
  EXPECT_THROW(throws(1), TypeError);
  EXPECT_THROW(throws(2), NotFound);
  EXPECT_THROW(throws(3), RuntimeError);
  EXPECT_THROW(throws(4), Cancelled);
}

TEST(Error, CopyKeepsContext) {
  InvalidInput e("bad flag");
  e.add_context("moka run");
  InvalidInput copy = e;
  EXPECT_STREQ(copy.what(), "moka run: bad flag");
  copy.add_context("outer");
  EXPECT_STREQ(e.what(), "moka run: bad flag");
  EXPECT_STREQ(copy.what(), "outer > moka run: bad flag");
}

}  // namespace
}  // namespace moka
