// Tensor: a contiguous n-d array of one DType (any rank, 0-d scalars included) with checked typed access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "moka/core/dtype.h"

namespace moka {

namespace detail {
[[noreturn]] void throw_dtype_mismatch(DType have, DType want);
[[noreturn]] void throw_not_scalar(const std::vector<int64_t>& shape);
[[noreturn]] void throw_values_mismatch(const std::vector<int64_t>& shape, std::size_t n);

/// Tensor storage of this many bytes or more is mapped on its own (src/core/large_storage.cpp):
/// 2 MiB-aligned, with transparent huge pages requested.
inline constexpr std::size_t kLargeStorageBytes = std::size_t{2} << 20;
/// @brief n >= kLargeStorageBytes bytes of uninitialised memory; throws std::bad_alloc when none is left.
/// Thread-safety: thread-safe.
void* allocate_large_storage(std::size_t n);
/// @brief Returns what allocate_large_storage(n) gave, with the same n.
void free_large_storage(void* p, std::size_t n) noexcept;

/// @brief The allocator of tensor storage and of other large byte buffers (checkpoint snapshots).
/// Allocates without value-initialising, so growth can skip zero-filling (resize_for_overwrite).
/// Large storage comes from allocate_large_storage: huge pages make a page fault cover 2 MiB
/// instead of 4 KiB (a load into fresh tensors is mostly page faults otherwise).
template <class T>
struct StorageAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = StorageAllocator<U>;
  };
  using std::allocator<T>::allocator;
  T* allocate(std::size_t n) {
    if (n * sizeof(T) >= kLargeStorageBytes) return static_cast<T*>(allocate_large_storage(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kLargeStorageBytes)
      free_large_storage(p, n * sizeof(T));
    else
      std::allocator<T>::deallocate(p, n);
  }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

/// @brief A dense, contiguous, row-major array of elements of one DType.
///
/// Storage is reused when a tensor is resized to a size that fits what it already holds
/// (Caffe2's Resize semantics), so operators that write the same shape every iteration do not
/// touch the heap. A default-constructed tensor has dtype Undefined and shape {0}.
///
/// @code
///   Tensor t = Tensor::scalar<int64_t>(5);      // 0-d
///   Tensor v(DType::Float, {2, 3});              // zero-filled
///   v.mutable_data<float>()[4] = 1.5f;
///   t.item<int64_t>();                          // 5; item<float>() throws TypeError
/// @endcode
/// Thread-safety: none; a tensor is owned by one operator at a time.
class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled (empty strings) tensor.
  Tensor(DType dtype, std::vector<int64_t> shape);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  template <class T>
  static Tensor scalar(T value);
  template <class T>
  static Tensor from_vector(std::vector<int64_t> shape, const std::vector<T>& values);
  /// 1-d tensor of the given values.
  template <class T>
  static Tensor vector(const std::vector<T>& values);

  DType dtype() const noexcept { return dtype_; }
  const std::vector<int64_t>& shape() const noexcept { return shape_; }
  int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t ndim() const noexcept { return shape_.size(); }
  int64_t numel() const noexcept { return numel_; }
  bool defined() const noexcept { return dtype_ != DType::Undefined; }

  /// Sets dtype and shape. Keeps the storage when it is large enough; new elements have
  /// unspecified values (zero for freshly allocated storage). Throws InvalidInput for negative
  /// dimensions or a size that overflows, OutOfMemory (naming dtype, shape and bytes) when the
  /// storage cannot be allocated; the tensor is then unchanged.
  void resize(DType dtype, std::span<const int64_t> shape) {
    // Steady state of every loop: same dtype and shape as last time, nothing to do.
    if (dtype == dtype_ && same_shape(shape)) return;
    resize_slow(dtype, shape);
  }
  void resize(DType dtype, std::initializer_list<int64_t> shape) {
    resize(dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  /// As resize, but freshly allocated storage is not zero-filled: for callers that write every
  /// element before anything reads it (deserialization), which saves one pass over new memory.
  void resize_for_overwrite(DType dtype, std::span<const int64_t> shape) {
    if (dtype == dtype_ && same_shape(shape)) return;
    resize_slow(dtype, shape, /*zero_new=*/false);
  }
  /// Same dtype and shape as other (values not copied).
  void resize_like(const Tensor& other) { resize(other.dtype_, other.shape_); }
  /// Sets dimension 0 to `rows`, keeping the values of every row that remains (Caffe2's
  /// Extend/ShrinkTo). Storage grows geometrically, so appending rows one batch at a time costs
  /// amortized O(appended values). Needs a defined tensor with ndim() >= 1 (TypeError otherwise);
  /// InvalidInput for a negative or too large row count, OutOfMemory when the storage cannot grow. New rows have
  /// unspecified values: zero where the storage grows (rows a shrink dropped come back with their old values), except
  /// with zero_new = false, for callers that write every new row before anything reads it (appends), which saves a pass
  /// over them.
  void resize_dim0(int64_t rows, bool zero_new = true) {
    // Steady state of appending to a vector: its storage already holds the rows (it grows by half
    // at a time, see resize_dim0_slow), so only the shape changes.
    if (shape_.size() == 1 && rows >= 0 && rows < (int64_t{1} << 56) &&
        static_cast<std::size_t>(rows) * dtype_size(dtype_) <= bytes_.size() && dtype_size(dtype_) != 0) {
      shape_[0] = rows;
      numel_ = rows;
      return;
    }
    resize_dim0_slow(rows, zero_new);
  }

  template <class T>
  T* mutable_data() {
    check<T>();
    return data_ptr<T>();
  }
  template <class T>
  const T* data() const {
    check<T>();
    return const_cast<Tensor*>(this)->data_ptr<T>();
  }
  template <class T>
  std::span<T> values() {
    return {mutable_data<T>(), static_cast<std::size_t>(numel_)};
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(numel_)};
  }
  /// Makes this a 0-d tensor of T holding `value` (a status or flag operators write on every
  /// run): inline when it already is one, as from the run before.
  template <class T>
  void set_scalar(T value) {
    if (dtype_ != dtype_of<T>() || !shape_.empty()) resize(dtype_of<T>(), {});
    data_ptr<T>()[0] = std::move(value);
  }
  /// The single element of a tensor with numel() == 1 (shape [] or [1] or [1,1]...).
  template <class T>
  T item() const {
    if (numel_ != 1) detail::throw_not_scalar(shape_);
    return data<T>()[0];
  }
  /// Raw bytes of a non-string tensor.
  const std::byte* raw_data() const noexcept { return bytes_.data(); }
  std::byte* raw_mutable_data() noexcept { return bytes_.data(); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }

  /// Deep copy of dtype, shape and values, reusing this tensor's storage.
  void copy_from(const Tensor& other);
  /// Equal dtype, shape and values (NaN != NaN).
  bool operator==(const Tensor& other) const;

  /// "int64[2,3] {1, 2, 3, 4, 5, 6}", at most `limit` values shown.
  std::string to_string(std::size_t limit = 32) const;
  /// "int64[2,3]"
  std::string describe() const;

 private:
  void resize_slow(DType dtype, std::span<const int64_t> shape, bool zero_new = true);
  void resize_dim0_slow(int64_t rows, bool zero_new);
  void grow_dim0(int64_t rows, int64_t n, bool zero_new);
  [[noreturn]] void dim0_out_of_memory(int64_t rows, int64_t n) const;
  // An element loop, not std::equal: that becomes a memcmp call, which costs more than the
  // one or two dimensions of a typical batch (resize runs once per operator per batch).
  bool same_shape(std::span<const int64_t> shape) const noexcept {
    if (shape.size() != shape_.size()) return false;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (shape[i] != shape_[i]) return false;
    return true;
  }
  template <class T>
  void check() const {
    if (dtype_ != dtype_of<T>()) detail::throw_dtype_mismatch(dtype_, dtype_of<T>());
  }
  template <class T>
  T* data_ptr() {
    if constexpr (std::is_same_v<T, std::string>) {
      return strings_.data();
    } else {
      return reinterpret_cast<T*>(bytes_.data());
    }
  }

  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_{0};
  int64_t numel_ = 0;
  // Never shrinks; grows zero-filled except by resize_for_overwrite and over the rows that
  // resize_dim0(…, zero_new = false) adds. Its size may exceed nbytes(): resize_dim0 grows it by
  // half at a time, and bytes past nbytes() are zero or values a shrink left.
  std::vector<std::byte, detail::StorageAllocator<std::byte>> bytes_;
  std::vector<std::string> strings_;  // used when dtype_ == String
};

/// Product of dimensions; throws InvalidInput for negative dimensions or overflow. The product of
/// the non-zero dimensions must fit in int64 too ([0, 2^40, 2^40] is refused although it has no
/// elements), so every sub-product of a valid shape does: code that multiplies some dimensions of
/// a tensor (its row size) cannot overflow.
int64_t shape_numel(std::span<const int64_t> shape);
/// "[2,3]"
std::string shape_string(std::span<const int64_t> shape);

template <class T>
Tensor Tensor::scalar(T value) {
  Tensor t;
  t.resize(dtype_of<T>(), {});
  t.mutable_data<T>()[0] = std::move(value);
  return t;
}

template <class T>
Tensor Tensor::from_vector(std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t;
  t.resize(dtype_of<T>(), shape);
  if (static_cast<std::size_t>(t.numel()) != values.size()) detail::throw_values_mismatch(t.shape(), values.size());
  std::copy(values.begin(), values.end(), t.mutable_data<T>());
  return t;
}

template <class T>
Tensor Tensor::vector(const std::vector<T>& values) {
  return from_vector<T>({static_cast<int64_t>(values.size())}, values);
}

// std::vector<bool> is bit-packed; give it its own overloads.
template <>
Tensor Tensor::from_vector<bool>(std::vector<int64_t> shape, const std::vector<bool>& values);

}  // namespace moka
