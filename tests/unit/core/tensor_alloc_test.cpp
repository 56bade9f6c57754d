// Unit tests for Tensor allocation limits: storage that cannot be allocated is an OutOfMemory naming
// dtype, shape and bytes (the tensor unchanged), and shapes whose non-zero dimensions overflow are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "unit/core/core_test_util.h"

namespace moka {
namespace {

using test::message_of;

// 2^50 float32 elements are 4 PiB: more than any process's address space (47 bits), so the mapping
// fails whatever the overcommit setting, at once and without touching memory.
constexpr int64_t kHuge = int64_t{1} << 50;

TEST(TensorAlloc, StorageThatCannotBeAllocatedIsOutOfMemory) {
  Tensor t = Tensor::vector<float>({1.5f, 2.5f});
  const std::string msg = message_of<OutOfMemory>([&] { t.resize(DType::Float, {kHuge}); });
  EXPECT_EQ(msg, "cannot allocate a float32[1125899906842624] tensor (4503599627370496 bytes, 4.0 PiB): out of memory");
  EXPECT_EQ(t, Tensor::vector<float>({1.5f, 2.5f})) << "a failed resize leaves the tensor as it was";
  EXPECT_THROW(Tensor(DType::Int64, {kHuge, 2}), OutOfMemory);
  EXPECT_THROW(Tensor(DType::Int64, {kHuge, 2}), RuntimeError) << "a kind of RuntimeError (exit 1 in the CLI)";
}

TEST(TensorAlloc, GrowingDimensionZeroBeyondMemoryIsOutOfMemory) {
  Tensor t(DType::Float, {1, 4});
  t.mutable_data<float>()[3] = 7.0f;
  const std::string msg = message_of<OutOfMemory>([&] { t.resize_dim0(kHuge / 4); });
  EXPECT_NE(msg.find("float32[281474976710656,4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4503599627370496 bytes"), std::string::npos) << msg;
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(t.values<float>()[3], 7.0f);
}

TEST(TensorAlloc, ShapesWhoseNonZeroDimensionsOverflowAreRefused) {
  // No elements, but a row of [0, 2^40, 2^40] would hold 2^80 of them: refused, so that code
  // multiplying a tensor's trailing dimensions (its row size) cannot overflow.
  const std::vector<int64_t> shape{0, int64_t{1} << 40, int64_t{1} << 40};
  const std::string msg = message_of<InvalidInput>([&] { (void)shape_numel(shape); });
  EXPECT_NE(msg.find("[0,1099511627776,1099511627776] is too large"), std::string::npos) << msg;
  EXPECT_THROW(Tensor(DType::Float, shape), InvalidInput);
  EXPECT_EQ(shape_numel(std::vector<int64_t>{0, int64_t{1} << 31, int64_t{1} << 31}), 0);
  EXPECT_EQ(shape_numel(std::vector<int64_t>{int64_t{1} << 61, 0, 2}), 0);
  EXPECT_THROW(shape_numel(std::vector<int64_t>{int64_t{1} << 62, 0, 2}), InvalidInput);
}

TEST(TensorAlloc, ResizeDim0OfAnEmptyTensorWithWideRows) {
  // The row size (2^31 * 2^31 = 2^62 elements) fits in int64; any row count but 0 does not.
  Tensor t(DType::Int8, {0, int64_t{1} << 31, int64_t{1} << 31});
  const std::string msg = message_of<InvalidInput>([&] { t.resize_dim0(4); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  t.resize_dim0(0);
  EXPECT_EQ(t.numel(), 0);
}

}  // namespace
}  // namespace moka
