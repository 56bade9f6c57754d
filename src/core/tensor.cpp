// Tensor storage management, copying, comparison and printing.
#include "moka/core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "moka/core/error.h"

namespace moka {

namespace detail {
void throw_dtype_mismatch(DType have, DType want) {
  throw TypeError(fmt::format("tensor has dtype {}, but {} was requested", dtype_name(have), dtype_name(want)));
}
void throw_not_scalar(const std::vector<int64_t>& shape) {
  throw TypeError(fmt::format("expected a tensor with exactly one element, got shape {}", shape_string(shape)));
}
// "3.6 TiB" for a message (the exact byte count is given beside it).
std::string approximate_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t u = 0;
  for (; bytes >= 1024 && u + 1 < std::size(units); ++u) bytes /= 1024;
  return u == 0 ? fmt::format("{:.0f} bytes", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}
// Storage of `bytes` bytes (about as many: string tensors count their std::string objects) for a
// tensor of `dtype` and `shape` could not be allocated.
[[noreturn]] void throw_out_of_memory(DType dtype, std::span<const int64_t> shape, double bytes) {
  throw OutOfMemory(fmt::format("cannot allocate a {}{} tensor ({:.0f} bytes, {}): out of memory", dtype_name(dtype),
                                shape_string(shape), bytes, approximate_bytes(bytes)));
}
void throw_values_mismatch(const std::vector<int64_t>& shape, std::size_t n) {
  throw InvalidInput(fmt::format("shape {} needs {} values, got {}", shape_string(shape), shape_numel(shape), n));
}
}  // namespace detail

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t nonzero = 1;  // product of the non-zero dimensions
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw InvalidInput(fmt::format("shape {} has a negative dimension", shape_string(shape)));
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > std::numeric_limits<int64_t>::max() / d)
      throw InvalidInput(fmt::format("shape {} is too large", shape_string(shape)));
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

std::string shape_string(std::span<const int64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) { resize(dtype, shape); }

Tensor::Tensor(const Tensor& other) { copy_from(other); }
Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) copy_from(other);
  return *this;
}
Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      numel_(other.numel_),
      bytes_(std::move(other.bytes_)),
      strings_(std::move(other.strings_)) {
  other.dtype_ = DType::Undefined;
  other.shape_.assign(1, 0);
  other.numel_ = 0;
}
Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    numel_ = other.numel_;
    bytes_ = std::move(other.bytes_);
    strings_ = std::move(other.strings_);
    other.dtype_ = DType::Undefined;
    other.shape_.assign(1, 0);
    other.numel_ = 0;
  }
  return *this;
}

void Tensor::resize_slow(DType dtype, std::span<const int64_t> shape, bool zero_new) {
  if (dtype == DType::Undefined) throw TypeError("cannot resize a tensor to dtype undefined");
  const int64_t n = shape_numel(shape);
  if (dtype == DType::String) {
    try {
      strings_.resize(static_cast<std::size_t>(n));
    } catch (const std::bad_alloc&) {
      detail::throw_out_of_memory(dtype, shape, static_cast<double>(n) * sizeof(std::string));
    } catch (const std::length_error&) {
      detail::throw_out_of_memory(dtype, shape, static_cast<double>(n) * sizeof(std::string));
    }
    if (dtype_ != DType::String) bytes_.clear();  // after the resize: a failed one leaves the tensor as it was
  } else {
    if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dtype_size(dtype)))
      throw InvalidInput(fmt::format("shape {} of {} is too large", shape_string(shape), dtype_name(dtype)));
    const std::size_t need = static_cast<std::size_t>(n) * dtype_size(dtype);
    if (bytes_.size() < need) {
      const std::size_t old = bytes_.size();
      try {
        bytes_.resize(need);  // default-initialised: new bytes are indeterminate until written
      } catch (const std::bad_alloc&) {
        detail::throw_out_of_memory(dtype, shape, static_cast<double>(need));
      } catch (const std::length_error&) {
        detail::throw_out_of_memory(dtype, shape, static_cast<double>(need));
      }
      if (zero_new) std::memset(bytes_.data() + old, 0, need - old);
    }
    if (!strings_.empty()) strings_.clear();
  }
  dtype_ = dtype;
  if (shape_.size() != shape.size() || !std::equal(shape.begin(), shape.end(), shape_.begin()))
    shape_.assign(shape.begin(), shape.end());
  numel_ = n;
}

void Tensor::resize_dim0_slow(int64_t rows, bool zero_new) {
  if (!defined() || shape_.empty())
    throw TypeError(fmt::format("cannot change dimension 0 of a {} tensor", describe()));
  if (rows < 0) throw InvalidInput(fmt::format("cannot resize dimension 0 of {} to {} rows", describe(), rows));
  int64_t inner = 1;
  for (std::size_t i = 1; i < shape_.size(); ++i) inner *= shape_[i];  // cannot overflow: a sub-product of numel_
  if (inner != 0 && rows > std::numeric_limits<int64_t>::max() / inner)
    throw InvalidInput(fmt::format("cannot resize dimension 0 of {} to {} rows: too large", describe(), rows));
  const int64_t n = rows * inner;
  try {
    grow_dim0(rows, n, zero_new);
  } catch (const std::bad_alloc&) {
    dim0_out_of_memory(rows, n);
  } catch (const std::length_error&) {
    dim0_out_of_memory(rows, n);
  }
}

void Tensor::dim0_out_of_memory(int64_t rows, int64_t n) const {
  std::vector<int64_t> shape = shape_;
  shape[0] = rows;
  const double element = dtype_ == DType::String ? sizeof(std::string) : static_cast<double>(dtype_size(dtype_));
  detail::throw_out_of_memory(dtype_, shape, static_cast<double>(n) * element);
}

void Tensor::grow_dim0(int64_t rows, int64_t n, bool zero_new) {
  // Grow by at least half the current capacity so that repeated appends are amortized linear
  // (the standard does not promise geometric growth for vector::resize).
  if (dtype_ == DType::String) {
    const auto need = static_cast<std::size_t>(n);
    if (need > strings_.capacity()) strings_.reserve(std::max(need, strings_.capacity() + strings_.capacity() / 2));
    strings_.resize(need);
  } else {
    const std::size_t es = dtype_size(dtype_);
    if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(es))
      throw InvalidInput(fmt::format("cannot resize dimension 0 of {} to {} rows: too large", describe(), rows));
    const std::size_t need = static_cast<std::size_t>(n) * es;
    if (bytes_.size() < need) {
      // The size grows with the capacity, so the next appends find their rows already there (the
      // inline path of resize_dim0); what lies past the new rows is zeroed, as fresh storage is.
      if (need > bytes_.capacity()) bytes_.reserve(std::max(need, bytes_.capacity() + bytes_.capacity() / 2));
      const std::size_t old = bytes_.size();
      const std::size_t grown = bytes_.capacity();
      bytes_.resize(grown);
      const std::size_t zero_from = zero_new ? old : need;
      std::memset(bytes_.data() + zero_from, 0, grown - zero_from);
    }
  }
  shape_[0] = rows;
  numel_ = n;
}

void Tensor::copy_from(const Tensor& other) {
  if (!other.defined()) {
    dtype_ = DType::Undefined;
    shape_ = other.shape_;
    numel_ = other.numel_;
    return;
  }
  resize(other.dtype_, other.shape_);
  if (dtype_ == DType::String) {
    std::copy(other.strings_.begin(), other.strings_.begin() + numel_, strings_.begin());
  } else if (nbytes() > 0) {
    std::memcpy(bytes_.data(), other.bytes_.data(), nbytes());
  }
}

bool Tensor::operator==(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (!defined()) return true;
  return visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    auto a = values<T>();
    auto b = other.values<T>();
    return std::equal(a.begin(), a.end(), b.begin());
  });
}

std::string Tensor::describe() const { return fmt::format("{}{}", dtype_name(dtype_), shape_string(shape_)); }

std::string Tensor::to_string(std::size_t limit) const {
  std::string out = describe();
  if (!defined()) return out;
  out += " {";
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    auto v = values<T>();
    for (std::size_t i = 0; i < v.size() && i < limit; ++i) {
      if (i) out += ", ";
      if constexpr (std::is_same_v<T, std::string>) {
        out += fmt::format("\"{}\"", v[i]);
      } else if constexpr (std::is_same_v<T, bool>) {
        out += v[i] ? "true" : "false";
      } else if constexpr (sizeof(T) == 1) {
        out += fmt::format("{}", static_cast<int>(v[i]));
      } else {
        out += fmt::format("{}", v[i]);
      }
    }
    if (v.size() > limit) out += fmt::format(", ... ({} more)", v.size() - limit);
  });
  out += "}";
  return out;
}

template <>
Tensor Tensor::from_vector<bool>(std::vector<int64_t> shape, const std::vector<bool>& values) {
  Tensor t;
  t.resize(DType::Bool, shape);
  if (static_cast<std::size_t>(t.numel()) != values.size()) detail::throw_values_mismatch(t.shape(), values.size());
  bool* d = t.mutable_data<bool>();
  for (std::size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

}  // namespace moka
