// moka::Error: message plus outer context, composed into a bounded what(); copies for rethrowing.
#include "moka/core/error.h"

#include <typeinfo>

namespace moka {

namespace {

// s without its middle when it is longer than `limit` bytes: the head, "...", the tail; never cut
// inside a UTF-8 sequence.
std::string shortened(const std::string& s, std::size_t limit) {
  if (s.size() <= limit) return s;
  const auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  std::size_t head = (limit - 3) / 2;
  while (head > 0 && continuation(head)) --head;
  std::size_t tail = s.size() - (limit - 3 - (limit - 3) / 2);
  while (tail < s.size() && continuation(tail)) ++tail;
  return s.substr(0, head) + "..." + s.substr(tail);
}

}  // namespace

Error::Error(std::string message) : message_(std::move(message)) { rebuild(); }

void Error::add_context(std::string where) {
  context_.insert(context_.begin(), std::move(where));
  rebuild();
}

void Error::rebuild() {
  full_.clear();
  const std::size_t n = context_.size();
  const bool elide = n > kMaxShownContext;
  for (std::size_t i = 0; i < n; ++i) {
    if (elide && i == kOuterContext) {
      full_ += "(" + std::to_string(n - kOuterContext - kInnerContext) + " more levels) > ";
      i = n - kInnerContext - 1;
      continue;
    }
    full_ += shortened(context_[i], kMaxLocationChars);
    full_ += " > ";
  }
  if (n != 0) {
    full_.resize(full_.size() - 3);
    full_ += ": ";
  }
  full_ += message_;
}

std::exception_ptr copy_for_rethrow(const std::exception_ptr& e) {
  if (!e) return e;
  try {
    std::rethrow_exception(e);
  } catch (const Error& original) {
    std::exception_ptr copy = original.clone();
    try {
      std::rethrow_exception(copy);
    } catch (const Error& c) {
      if (typeid(c) == typeid(original)) return copy;
    }
    return e;  // a subclass without clone(): shared, as before
  } catch (...) {
    return e;
  }
}

}  // namespace moka
