// Blob: a type-erased, owning holder for a Tensor or any C++ object (counters, timers, queues, users' types).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "moka/core/tensor.h"

namespace moka {

/// Identity of a C++ type held by a Blob. One constant object per type (type_info_v<T>), so
/// type checks are a pointer comparison against a link-time constant.
struct TypeInfo {
  void (*destroy)(void*);
  const std::type_info& (*cpp_type)();
  /// Readable name: the demangled C++ name, without "moka::" for moka's own types.
  std::string_view name() const;
};

namespace detail {
std::string demangle(const char* mangled);
[[noreturn]] void throw_blob_type(const TypeInfo* have, const TypeInfo& want);
template <class T>
void destroy_object(void* p) {
  delete static_cast<T*>(p);
}
template <class T>
const std::type_info& cpp_type_of() {
  return typeid(T);
}
}  // namespace detail

template <class T>
inline constexpr TypeInfo type_info_v{&detail::destroy_object<T>, &detail::cpp_type_of<T>};

/// @brief The TypeInfo of T; one object per type, so pointers compare for identity.
template <class T>
constexpr const TypeInfo& type_info_of() {
  return type_info_v<T>;
}

/// @brief Holds at most one object of any type, owning it.
///
/// @code
///   Blob b;
///   b.get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
///   b.is_type<Tensor>();        // true
///   b.get<Counter>();           // throws TypeError: "blob holds Tensor, expected Counter"
/// @endcode
/// Thread-safety: none; the workspace gives out stable pointers and operators synchronise use.
class Blob {
 public:
  Blob() noexcept = default;
  ~Blob() { reset(); }
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;
  Blob(Blob&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), type_(std::exchange(o.type_, nullptr)) {}
  Blob& operator=(Blob&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      type_ = std::exchange(o.type_, nullptr);
    }
    return *this;
  }

  /// True when the blob holds an object.
  bool is_initialized() const noexcept { return ptr_ != nullptr; }
  template <class T>
  bool is_type() const noexcept {
    return type_ == &type_info_of<T>();
  }
  /// Name of the held type, or "nothing".
  std::string_view type_name() const noexcept;
  const TypeInfo* type() const noexcept { return type_; }

  /// The held T; throws TypeError naming both types when the blob holds something else.
  template <class T>
  const T& get() const {
    if (!is_type<T>()) detail::throw_blob_type(type_, type_info_of<T>());
    return *static_cast<const T*>(ptr_);
  }
  template <class T>
  T& get_checked_mutable() {
    if (!is_type<T>()) detail::throw_blob_type(type_, type_info_of<T>());
    return *static_cast<T*>(ptr_);
  }
  /// The held T, replacing any other content with a default-constructed T (Caffe2's GetMutable).
  template <class T>
  T& get_mutable() {
    if (is_type<T>()) return *static_cast<T*>(ptr_);
    return emplace<T>();
  }
  /// Replaces the content with T(args...).
  template <class T, class... Args>
  T& emplace(Args&&... args) {
    auto owned = std::make_unique<T>(std::forward<Args>(args)...);
    return *reset(std::move(owned));
  }
  /// Takes ownership of obj (may be null, which empties the blob).
  template <class T>
  T* reset(std::unique_ptr<T> obj) {
    reset();
    if (obj) {
      ptr_ = obj.release();
      type_ = &type_info_of<T>();
    }
    return static_cast<T*>(ptr_);
  }
  /// Destroys the content.
  void reset() noexcept {
    if (ptr_) type_->destroy(ptr_);
    ptr_ = nullptr;
    type_ = nullptr;
  }
  /// Exchanges contents (queues move blobs this way, never copying tensors).
  void swap(Blob& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(type_, other.type_);
  }

  /// The held Tensor, or nullptr if the blob holds something else (fast path for operators).
  Tensor* tensor_or_null() noexcept { return is_type<Tensor>() ? static_cast<Tensor*>(ptr_) : nullptr; }
  const Tensor* tensor_or_null() const noexcept {
    return is_type<Tensor>() ? static_cast<const Tensor*>(ptr_) : nullptr;
  }

 private:
  void* ptr_ = nullptr;
  const TypeInfo* type_ = nullptr;
};

}  // namespace moka
