// Unit tests for the bounded what() of moka::Error (long context paths and locations elided in the
// middle) and for copy_for_rethrow (a private copy of the same dynamic type per rethrowing thread).
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "moka/core/error.h"

namespace moka {
namespace {

// An error with `levels` step locations above an operator, as a deep plan would give.
RuntimeError deep_error(int levels) {
  RuntimeError e("division by zero");
  e.add_context("operator #2 (Div)");
  for (int i = 1; i <= levels; ++i) e.add_context("step \"level" + std::to_string(i) + "\"");
  return e;
}

TEST(ErrorContext, ShortPathsArePrintedWhole) {
  const RuntimeError e = deep_error(Error::kMaxShownContext - 1);
  EXPECT_EQ(std::string(e.what()).find("more levels"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("step \"level5\" > step \"level4\""), std::string::npos) << e.what();
}

TEST(ErrorContext, LongPathsKeepTheOutermostAndInnermostLocations) {
  const RuntimeError e = deep_error(200);
  const std::string what = e.what();
  EXPECT_EQ(what,
            "step \"level200\" > step \"level199\" > step \"level198\" > (193 more levels) > step \"level4\" > "
            "step \"level3\" > step \"level2\" > step \"level1\" > operator #2 (Div): division by zero");
  // context() keeps every location.
  EXPECT_EQ(e.context().size(), 201u);
  EXPECT_EQ(e.message(), "division by zero");
}

TEST(ErrorContext, LongLocationsAreCutInTheMiddle) {
  RuntimeError e("boom");
  const std::string name(10000, 'x');
  e.add_context("step \"" + name + "\"");
  const std::string what = e.what();
  EXPECT_LE(what.size(), Error::kMaxLocationChars + 10) << what;
  EXPECT_EQ(what.rfind("step \"xxx", 0), 0u) << what;
  EXPECT_NE(what.find("xxx...xxx"), std::string::npos) << what;
  EXPECT_NE(what.find("xxx\": boom"), std::string::npos) << what;
  EXPECT_EQ(e.context().front().size(), name.size() + 7);
}

TEST(ErrorContext, CutsDoNotSplitUtf8Sequences) {
  RuntimeError e("boom");
  std::string name;
  for (int i = 0; i < 500; ++i) name += "\xC3\xA9";  // é
  e.add_context(name);
  const std::string what = e.what();
  const std::size_t dots = what.find("...");
  ASSERT_NE(dots, std::string::npos);
  EXPECT_EQ(dots % 2, 0u) << "the head ends inside a two-byte sequence";
  EXPECT_EQ(static_cast<unsigned char>(what[dots + 3]), 0xC3u) << "the tail starts inside a sequence";
}

TEST(ErrorContext, CopyForRethrowKeepsTheTypeAndGivesAPrivateObject) {
  std::exception_ptr stored;
  try {
    NotFound e("blob \"x\" does not exist");
    e.add_context("net \"n\"");
    throw e;
  } catch (...) {
    stored = std::current_exception();
  }
  const std::exception_ptr copy = copy_for_rethrow(stored);
  try {
    std::rethrow_exception(copy);
  } catch (NotFound& e) {
    e.add_context("step \"s\"");
    EXPECT_STREQ(e.what(), "step \"s\" > net \"n\": blob \"x\" does not exist");
  } catch (...) {
    FAIL() << "the copy lost its type";
  }
  try {
    std::rethrow_exception(stored);
  } catch (const NotFound& e) {
    EXPECT_STREQ(e.what(), "net \"n\": blob \"x\" does not exist") << "the stored exception was changed";
  }
}

TEST(ErrorContext, EveryErrorClassIsCopiedAsItself) {
  auto check = [](auto error) {
    using E = decltype(error);
    const std::exception_ptr copy = copy_for_rethrow(std::make_exception_ptr(error));
    EXPECT_THROW(std::rethrow_exception(copy), E);
  };
  check(InvalidInput("a"));
  check(CorruptData("b"));
  check(TypeError("c"));
  check(NotFound("d"));
  check(RuntimeError("e"));
  check(OutOfMemory("f"));
  check(Cancelled("g"));
}

// A subclass without its own clone() is not sliced to its base: it is shared as before.
class Unclonable : public RuntimeError {
 public:
  Unclonable() : RuntimeError("unclonable") {}
};

TEST(ErrorContext, SubclassesWithoutCloneAreNotSliced) {
  const std::exception_ptr e = std::make_exception_ptr(Unclonable());
  EXPECT_EQ(copy_for_rethrow(e), e);
  EXPECT_THROW(std::rethrow_exception(copy_for_rethrow(e)), Unclonable);
  const std::exception_ptr plain = std::make_exception_ptr(std::runtime_error("std"));
  EXPECT_EQ(copy_for_rethrow(plain), plain);
  EXPECT_EQ(copy_for_rethrow(nullptr), nullptr);
}

TEST(ErrorContext, ThreadsAddContextToTheirOwnCopies) {
  // Several threads rethrow one stored error, as concurrent instances of a step do.
  const std::exception_ptr stored = std::make_exception_ptr(RuntimeError("first failure"));
  std::vector<std::string> whats(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < whats.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        std::rethrow_exception(copy_for_rethrow(stored));
      } catch (Error& e) {
        for (int level = 0; level < 3; ++level) e.add_context("step \"s" + std::to_string(level) + "\"");
        whats[t] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& w : whats) EXPECT_EQ(w, "step \"s2\" > step \"s1\" > step \"s0\": first failure");
}

}  // namespace
}  // namespace moka
