// Unit tests of BlobRef and the context stacks (Caffe2 context.py semantics; docs/building-plans.md §6).
#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <unordered_set>

#include "moka/builder/blob_ref.h"
#include "moka/builder/context.h"
#include "moka/core/error.h"

namespace moka {
namespace {

TEST(BlobRef, ConvertsComparesAndPrints) {
  BlobRef a = "x";
  BlobRef b = std::string("x");
  BlobRef c;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.name(), "x");
  EXPECT_TRUE(c.empty());
  EXPECT_LT(BlobRef("a"), BlobRef("b"));
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), "x");
  std::unordered_set<BlobRef> set{a, b, "y"};
  EXPECT_EQ(set.size(), 2u);
  const char* null_name = nullptr;
  EXPECT_THROW(BlobRef{null_name}, InvalidInput);
}

TEST(BlobRef, ListConvertsToSingleOnlyWithOneElement) {
  BlobRefs one{"a"};
  BlobRef a = one;
  EXPECT_EQ(a.name(), "a");
  BlobRefs two{"a", "b"};
  try {
    BlobRef b = two;
    FAIL() << b;
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("expected exactly one output blob, got 2"), std::string::npos) << e.what();
  }
}

struct Job {};
struct Node : DefaultManaged {
  static inline int constructed = 0;
  Node() { ++constructed; }
};

TEST(Context, PushPopAndCurrent) {
  EXPECT_EQ(Context<Job>::current(false), nullptr);
  Job outer, inner;
  {
    ContextGuard<Job> g1(outer);
    EXPECT_EQ(Context<Job>::current(), &outer);
    with_context(inner, [&] { EXPECT_EQ(Context<Job>::current(), &inner); });
    EXPECT_EQ(Context<Job>::current(), &outer);
    EXPECT_EQ(Context<Job>::depth(), 1u);
  }
  EXPECT_EQ(Context<Job>::depth(), 0u);
  Job given;
  EXPECT_EQ(Context<Job>::current(&given, true), &given);
  EXPECT_EQ(Context<Job>::current(nullptr, false), nullptr);
}

TEST(Context, RequiredButNoneActive) {
  try {
    Context<Job>::current();
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_STREQ(e.what(), "Context Job is required but none is active.");
  }
}

TEST(Context, PopMustMatchInnermost) {
  Job a, b;
  Context<Job>::push(a);
  Context<Job>::push(b);
  EXPECT_THROW(Context<Job>::pop(a), InvalidInput);
  Context<Job>::pop(b);
  Context<Job>::pop(a);
  EXPECT_EQ(Context<Job>::depth(), 0u);
}

TEST(Context, GuardUnwindsOnExceptionAndRepairsStack) {
  Job a, leaked;
  try {
    with_context(a, [&] {
      Context<Job>::push(leaked);  // never popped: the guard of `a` removes it too
      throw std::runtime_error("boom");
    });
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(Context<Job>::depth(), 0u);
}

TEST(Context, DefaultManagedCreatesAndKeepsOnePerThread) {
  Node* first = Context<Node>::current();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(Context<Node>::current(), first);  // pushed permanently
  Node mine;
  with_context(mine, [&] { EXPECT_EQ(Context<Node>::current(), &mine); });
  EXPECT_EQ(Context<Node>::current(), first);
  Node* other_thread = nullptr;
  std::thread([&] { other_thread = Context<Node>::current(); }).join();
  EXPECT_NE(other_thread, first);
}

TEST(Context, StacksAreThreadLocal) {
  Job a;
  ContextGuard<Job> g(a);
  bool seen = true;
  std::thread([&] { seen = Context<Job>::current(false) != nullptr; }).join();
  EXPECT_FALSE(seen);
}

TEST(Context, NetBuilderNameHookDefaultsToEmpty) {
  EXPECT_EQ(current_net_builder_name(), "");
  detail::set_net_builder_name_source([] { return std::string("nb"); });
  EXPECT_EQ(current_net_builder_name(), "nb");
  detail::set_net_builder_name_source(nullptr);
  EXPECT_EQ(current_net_builder_name(), "");
}

}  // namespace
}  // namespace moka
