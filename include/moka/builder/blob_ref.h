// BlobRef: a cheap, copyable handle to a blob name (Caffe2's BlobReference), and BlobRefs, the
// outputs of one added operator.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace moka {

/// @brief The name of a blob, as the builders hand it around.
///
/// A BlobRef is only a name: it does not know which net defined it, and it is valid in any net
/// (a net that reads a blob it does not define lists it as an external input). It converts
/// implicitly from string literals and std::string, so `net.op("Add", {"a", b})` mixes both.
///
/// @code
///   moka::BlobRef x = "x";
///   moka::BlobRef y = net.op("Add", {x, x});   // "<net>/Add"
///   std::cout << y;                            // prints the name
/// @endcode
/// Thread-safety: a value type; distinct objects may be used concurrently.
class BlobRef {
 public:
  /// An empty reference, to be assigned later (e.g. inside a builder lambda).
  BlobRef() = default;
  BlobRef(const char* name);  // NOLINT(google-explicit-constructor): literals convert on purpose
  BlobRef(std::string name) : name_(std::move(name)) {}  // NOLINT(google-explicit-constructor)
  /// Deleted so that a literal 0 (a null pointer constant) cannot silently become a blob name;
  /// write `0` only where a count is expected.
  BlobRef(int) = delete;
  BlobRef(std::nullptr_t) = delete;

  const std::string& name() const noexcept { return name_; }
  bool empty() const noexcept { return name_.empty(); }
  explicit operator const std::string&() const noexcept { return name_; }

  friend bool operator==(const BlobRef&, const BlobRef&) = default;
  friend std::strong_ordering operator<=>(const BlobRef& a, const BlobRef& b) { return a.name_ <=> b.name_; }

 private:
  std::string name_;
};

/// Writes the blob's name.
std::ostream& operator<<(std::ostream& os, const BlobRef& b);

/// @brief The output blobs of one added operator, in order.
///
/// Converts to a single BlobRef when the operator has exactly one output, so
/// `BlobRef y = net.op("Add", {a, b});` reads like Caffe2's `y = net.Add([a, b])`. Converting
/// a list of any other size throws InvalidInput.
/// Thread-safety: a value type.
class BlobRefs : public std::vector<BlobRef> {
 public:
  using std::vector<BlobRef>::vector;
  BlobRefs(std::vector<BlobRef> v) : std::vector<BlobRef>(std::move(v)) {}  // NOLINT
  /// The only element; InvalidInput unless size() == 1.
  const BlobRef& single() const;
  operator BlobRef() const { return single(); }  // NOLINT(google-explicit-constructor)
};

}  // namespace moka

template <>
struct std::hash<moka::BlobRef> {
  std::size_t operator()(const moka::BlobRef& b) const noexcept { return std::hash<std::string>{}(b.name()); }
};
