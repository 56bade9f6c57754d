// moka::Error: message plus outer context, composed into what().
#include "moka/core/error.h"

namespace moka {

Error::Error(std::string message) : message_(std::move(message)) { rebuild(); }

void Error::add_context(std::string where) {
  context_.insert(context_.begin(), std::move(where));
  rebuild();
}

void Error::rebuild() {
  full_.clear();
  for (const auto& c : context_) {
    full_ += c;
    full_ += " > ";
  }
  if (!context_.empty()) {
    full_.resize(full_.size() - 3);
    full_ += ": ";
  }
  full_ += message_;
}

}  // namespace moka
