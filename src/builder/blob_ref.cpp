// BlobRef and BlobRefs: construction checks and printing.
#include "moka/builder/blob_ref.h"

#include <ostream>

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {

BlobRef::BlobRef(const char* name) {
  // A null char* is a programming error that std::string would turn into undefined behaviour.
  if (name == nullptr) throw InvalidInput("BlobRef: a blob name cannot be a null pointer");
  name_ = name;
}

std::ostream& operator<<(std::ostream& os, const BlobRef& b) { return os << b.name(); }

const BlobRef& BlobRefs::single() const {
  if (size() != 1) {
    std::string names;
    for (const auto& b : *this) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", b.name());
    throw InvalidInput(
        fmt::format("expected exactly one output blob, got {} ([{}]); use the list of outputs", size(), names));
  }
  return front();
}

}  // namespace moka
