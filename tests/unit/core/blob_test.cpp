// Unit tests for moka::Blob: typed access, replacement, ownership/destruction, swap/move and type-mismatch messages.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "unit/core/core_test_util.h"

// A user type outside moka's namespace, as a user's own blob content would be.
struct BlobTestFoo {
  int value = 0;
};

namespace moka {
namespace {

using test::message_of;

// Counts live instances so ownership mistakes (leaks, double deletes) show up as wrong counts.
struct Counted {
  static inline int live = 0;
  int tag;
  explicit Counted(int t = 0) : tag(t) { ++live; }
  Counted(const Counted&) = delete;
  ~Counted() { --live; }
};

TEST(Blob, DefaultIsEmpty) {
  Blob b;
  EXPECT_FALSE(b.is_initialized());
  EXPECT_EQ(b.type(), nullptr);
  EXPECT_EQ(b.type_name(), "nothing");
  EXPECT_FALSE(b.is_type<Tensor>());
  EXPECT_EQ(b.tensor_or_null(), nullptr);
}

TEST(Blob, GetOnEmptyBlobNamesExpectedType) {
  Blob b;
  EXPECT_EQ(message_of<TypeError>([&] { b.get<Tensor>(); }), "blob is empty, expected Tensor");
  EXPECT_EQ(message_of<TypeError>([&] { b.get_checked_mutable<Tensor>(); }), "blob is empty, expected Tensor");
}

TEST(Blob, GetMutableCreatesDefault) {
  Blob b;
  int& i = b.get_mutable<int>();
  EXPECT_EQ(i, 0);
  EXPECT_TRUE(b.is_initialized());
  EXPECT_TRUE(b.is_type<int>());
  EXPECT_FALSE(b.is_type<long>());
  EXPECT_EQ(b.type_name(), "int");
  i = 5;
  // Same type: the same object, content kept.
  EXPECT_EQ(&b.get_mutable<int>(), &i);
  EXPECT_EQ(b.get<int>(), 5);
}

TEST(Blob, GetMutableReplacesOtherType) {
  Blob b;
  b.get_mutable<int>() = 3;
  Tensor& t = b.get_mutable<Tensor>();
  EXPECT_TRUE(b.is_type<Tensor>());
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(b.type_name(), "Tensor");
  EXPECT_EQ(b.tensor_or_null(), &t);
}

TEST(Blob, TypeMismatchNamesBothTypes) {
  Blob b;
  b.get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  EXPECT_EQ(message_of<TypeError>([&] { b.get<int>(); }), "blob holds Tensor, expected int");
  EXPECT_EQ(message_of<TypeError>([&] { b.get<BlobTestFoo>(); }), "blob holds Tensor, expected BlobTestFoo");
  b.emplace<BlobTestFoo>();
  EXPECT_EQ(message_of<TypeError>([&] { std::as_const(b).get<Tensor>(); }), "blob holds BlobTestFoo, expected Tensor");
  // get_checked_mutable refuses instead of replacing.
  EXPECT_THROW(b.get_checked_mutable<Tensor>(), TypeError);
  EXPECT_TRUE(b.is_type<BlobTestFoo>());
  EXPECT_EQ(b.tensor_or_null(), nullptr);
}

TEST(Blob, TypeNames) {
  EXPECT_EQ(type_info_of<Tensor>().name(), "Tensor");
  EXPECT_EQ(type_info_of<int64_t>().name(), "long");
  EXPECT_EQ(type_info_of<BlobTestFoo>().name(), "BlobTestFoo");
  // Only a type directly in namespace moka loses its prefix.
  EXPECT_NE(type_info_of<Counted>().name().find("Counted"), std::string::npos);
  EXPECT_NE(type_info_of<std::string>().name().find("basic_string"), std::string::npos);
  EXPECT_EQ(&type_info_of<Tensor>(), &type_info_of<Tensor>());
  EXPECT_NE(&type_info_of<int>(), &type_info_of<unsigned>());
}

TEST(Blob, EmplaceConstructsWithArguments) {
  Blob b;
  auto& s = b.emplace<std::string>(3, 'x');
  EXPECT_EQ(s, "xxx");
  EXPECT_EQ(b.get<std::string>(), "xxx");
  Tensor& t = b.emplace<Tensor>(Tensor::vector<int32_t>({1, 2}));
  EXPECT_EQ(t, Tensor::vector<int32_t>({1, 2}));
  EXPECT_EQ(&b.get<Tensor>(), &t);
}

TEST(Blob, EmplaceDestroysPrevious) {
  Counted::live = 0;
  {
    Blob b;
    b.emplace<Counted>(1);
    EXPECT_EQ(Counted::live, 1);
    b.emplace<Counted>(2);
    EXPECT_EQ(Counted::live, 1);
    EXPECT_EQ(b.get<Counted>().tag, 2);
    b.emplace<int>(0);
    EXPECT_EQ(Counted::live, 0);
    b.emplace<Counted>(3);
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(Blob, ResetTakesOwnershipAndEmpties) {
  Counted::live = 0;
  Blob b;
  auto owned = std::make_unique<Counted>(7);
  Counted* raw = owned.get();
  EXPECT_EQ(b.reset(std::move(owned)), raw);
  EXPECT_EQ(&b.get<Counted>(), raw);
  EXPECT_EQ(Counted::live, 1);
  b.reset();
  EXPECT_EQ(Counted::live, 0);
  EXPECT_FALSE(b.is_initialized());
  EXPECT_EQ(b.type_name(), "nothing");
  b.reset();  // resetting an empty blob is harmless
  b.emplace<Counted>(1);
  EXPECT_EQ(b.reset(std::unique_ptr<Counted>()), nullptr);
  EXPECT_FALSE(b.is_initialized());
  EXPECT_EQ(Counted::live, 0);
}

TEST(Blob, SwapExchangesContents) {
  Blob a, b;
  Tensor& t = a.emplace<Tensor>(Tensor::scalar<int64_t>(4));
  b.emplace<int>(9);
  a.swap(b);
  EXPECT_TRUE(a.is_type<int>());
  EXPECT_EQ(a.get<int>(), 9);
  EXPECT_TRUE(b.is_type<Tensor>());
  EXPECT_EQ(&b.get<Tensor>(), &t);  // moved, not copied
  Blob empty;
  empty.swap(b);
  EXPECT_FALSE(b.is_initialized());
  EXPECT_EQ(&empty.get<Tensor>(), &t);
}

TEST(Blob, MoveTransfersOwnership) {
  Counted::live = 0;
  {
    Blob a;
    Counted* p = &a.emplace<Counted>(1);
    Blob b(std::move(a));
    EXPECT_FALSE(a.is_initialized());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(&b.get<Counted>(), p);
    Blob c;
    c.emplace<Counted>(2);
    c = std::move(b);
    EXPECT_EQ(Counted::live, 1);
    EXPECT_EQ(&c.get<Counted>(), p);
    Blob& self = c;
    c = std::move(self);
    EXPECT_EQ(&c.get<Counted>(), p);
    EXPECT_EQ(Counted::live, 1);
  }
  EXPECT_EQ(Counted::live, 0);
}

}  // namespace
}  // namespace moka
