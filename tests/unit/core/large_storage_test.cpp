// Unit tests for large tensor storage (src/core/large_storage.cpp): 2 MiB alignment, huge pages
// requested, reuse of freed mappings, zero-filling, and values kept across growth into and out of it.
#include <gtest/gtest.h>
#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/tensor.h"

namespace moka {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

// The VmFlags line of the /proc/self/smaps entry whose range holds `addr` ("" if none).
std::string vm_flags_of(const void* addr) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool huge_pages_never() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.empty() || s.find("[never]") != std::string::npos;
}

TEST(LargeStorage, LargeTensorsAreAlignedToHugePagesAndZeroFilled) {
  Tensor t(DType::Float, {3 * static_cast<int64_t>(kMiB) / 4});  // 3 MiB
  ASSERT_EQ(t.nbytes(), 3 * kMiB);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw_data()) % (2 * kMiB), 0u);
  EXPECT_TRUE(all_zero(t.raw_data(), t.nbytes()));
  // Writable to the last byte (the mapping covers the whole tensor).
  t.mutable_data<float>()[t.numel() - 1] = 1.5f;
  EXPECT_EQ(t.data<float>()[t.numel() - 1], 1.5f);
}

TEST(LargeStorage, HugePagesAreRequestedForTheMapping) {
  if (huge_pages_never()) GTEST_SKIP() << "transparent huge pages are off on this system";
  Tensor t(DType::UInt8, {static_cast<int64_t>(4 * kMiB)});
  const std::string flags = vm_flags_of(t.raw_data());
  ASSERT_FALSE(flags.empty()) << "no /proc/self/smaps entry holds the tensor";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(LargeStorage, SmallTensorsStayOnTheHeap) {
  Tensor t(DType::UInt8, {static_cast<int64_t>(kMiB)});
  // malloc'd memory has no huge-page hint of ours, whatever its alignment.
  if (!huge_pages_never()) {
    EXPECT_EQ(vm_flags_of(t.raw_data()).find(" hg"), std::string::npos);
  }
  EXPECT_TRUE(all_zero(t.raw_data(), t.nbytes()));
}

TEST(LargeStorage, GrowingIntoLargeStorageKeepsValuesAndZeroFillsTheRest) {
  Tensor t = Tensor::vector<int64_t>({1, 2, 3});
  const int64_t rows = static_cast<int64_t>(3 * kMiB / sizeof(int64_t));
  t.resize_dim0(rows);
  ASSERT_EQ(t.numel(), rows);
  EXPECT_EQ(t.data<int64_t>()[0], 1);
  EXPECT_EQ(t.data<int64_t>()[2], 3);
  EXPECT_TRUE(all_zero(t.raw_data() + 3 * sizeof(int64_t), t.nbytes() - 3 * sizeof(int64_t)));
  // Grow again: the values move into a bigger mapping, the new rows are zero.
  t.mutable_data<int64_t>()[rows - 1] = 7;
  t.resize_dim0(2 * rows);
  EXPECT_EQ(t.data<int64_t>()[2], 3);
  EXPECT_EQ(t.data<int64_t>()[rows - 1], 7);
  EXPECT_TRUE(all_zero(t.raw_data() + rows * sizeof(int64_t), rows * sizeof(int64_t)));
}

TEST(LargeStorage, GrowingInsideStorageThatHeldValuesStillZeroFills) {
  // Only storage that was just mapped may skip the zero-fill: storage kept from before (here across
  // a switch to strings and back, which keeps the capacity) held values and must be cleared.
  Tensor t(DType::UInt8, {static_cast<int64_t>(4 * kMiB)});
  const std::byte* storage = t.raw_data();
  std::memset(t.raw_mutable_data(), 0xAB, t.nbytes());
  t.resize(DType::String, {2});
  t.resize(DType::UInt8, {static_cast<int64_t>(4 * kMiB)});
  EXPECT_EQ(t.raw_data(), storage);  // reused, not remapped
  EXPECT_TRUE(all_zero(t.raw_data(), t.nbytes()));
}

TEST(LargeStorage, ResizeForOverwriteCopyAndMoveWork) {
  Tensor t;
  const std::vector<int64_t> shape{static_cast<int64_t>(5 * kMiB / sizeof(double))};
  t.resize_for_overwrite(DType::Double, shape);
  double* d = t.mutable_data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<double>(i);
  Tensor copy(t);
  EXPECT_EQ(copy, t);
  EXPECT_NE(copy.raw_data(), t.raw_data());
  Tensor moved(std::move(copy));
  EXPECT_EQ(moved, t);
  // Back to a small dtype and shape: the storage is kept (it never shrinks) and still works.
  moved.resize(DType::Int32, {4});
  moved.mutable_data<int32_t>()[3] = 9;
  EXPECT_EQ(moved.data<int32_t>()[3], 9);
  // And out to a string tensor and back.
  moved.resize(DType::String, {2});
  moved.resize(DType::Float, {static_cast<int64_t>(3 * kMiB)});
  EXPECT_EQ(moved.numel(), static_cast<int64_t>(3 * kMiB));
}

TEST(LargeStorage, AFreedMappingIsReusedAndZeroFilledAgain) {
  const int64_t n = static_cast<int64_t>(6 * kMiB);
  const std::byte* first = nullptr;
  {
    Tensor t(DType::UInt8, {n});
    first = t.raw_data();
    std::memset(t.raw_mutable_data(), 0xCD, t.nbytes());
  }
  Tensor again(DType::UInt8, {n});
  EXPECT_EQ(again.raw_data(), first);  // the newest freed mapping of that length
  EXPECT_TRUE(all_zero(again.raw_data(), again.nbytes()));
  // resize_for_overwrite promises nothing about the values, but the tensor is whole and writable.
  Tensor other;
  other.resize_for_overwrite(DType::UInt8, std::vector<int64_t>{n});
  EXPECT_NE(other.raw_data(), first);
  other.raw_mutable_data()[n - 1] = std::byte{2};
}

TEST(LargeStorage, ARefusedMappingThrowsOutOfMemoryAndKeepsTheTensor) {
  // 256 TiB: more than x86-64 user address space, so the kernel refuses the mapping whatever the
  // overcommit policy.
  Tensor t(DType::UInt8, {static_cast<int64_t>(3 * kMiB)});
  t.raw_mutable_data()[5] = std::byte{7};
  const std::byte* before = t.raw_data();
  const std::vector<int64_t> huge{int64_t{1} << 48};
  EXPECT_THROW(detail::allocate_large_storage(std::size_t{1} << 48), std::bad_alloc);
  // The tensor turns the allocator's bad_alloc into an OutOfMemory naming its dtype and shape.
  EXPECT_THROW(t.resize_for_overwrite(DType::UInt8, huge), OutOfMemory);
  EXPECT_THROW(t.resize(DType::UInt8, huge), OutOfMemory);
  // The failed growth left the tensor as it was (vector's strong guarantee), and usable.
  EXPECT_EQ(t.numel(), static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(t.raw_data(), before);
  EXPECT_EQ(t.raw_data()[5], std::byte{7});
  Tensor after(DType::UInt8, {static_cast<int64_t>(3 * kMiB)});
  after.raw_mutable_data()[3 * kMiB - 1] = std::byte{1};
}

#if defined(__SANITIZE_ADDRESS__)
TEST(LargeStorage, AddressSanitizerSeesOverflows) {
  Tensor t(DType::UInt8, {static_cast<int64_t>(3 * kMiB + 100)});
  const std::byte* end = t.raw_data() + t.nbytes();
  EXPECT_FALSE(__asan_address_is_poisoned(t.raw_data()));
  EXPECT_FALSE(__asan_address_is_poisoned(end - 1));
  EXPECT_TRUE(__asan_address_is_poisoned(end));
}
#endif

TEST(LargeStorage, ManyAllocationsAreGivenBack) {
  // 200 × 64 MiB would not fit in this machine's memory if frees leaked (RSS, not just address space:
  // every tensor is written to the end).
  for (int i = 0; i < 200; ++i) {
    Tensor t;
    t.resize_for_overwrite(DType::UInt8, std::vector<int64_t>{static_cast<int64_t>(64 * kMiB)});
    t.raw_mutable_data()[t.nbytes() - 1] = std::byte{1};
    t.raw_mutable_data()[0] = std::byte{1};
  }
  SUCCEED();
}

}  // namespace
}  // namespace moka
