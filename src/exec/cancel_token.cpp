// CancelToken: flag plus subscribed callbacks, run once under the token's lock.
#include "moka/exec/cancel_token.h"

namespace moka {

void CancelToken::cancel() {
  std::lock_guard lk(mu_);
  if (cancelled_.exchange(true)) return;
  for (auto& [id, fn] : callbacks_) fn();
}

CancelToken::Subscription CancelToken::subscribe(std::function<void()> fn) {
  std::lock_guard lk(mu_);
  if (cancelled_.load()) {
    fn();
    return {};
  }
  const uint64_t id = next_id_++;
  callbacks_.emplace(id, std::move(fn));
  return {this, id};
}

CancelToken::Subscription::~Subscription() {
  if (!token_) return;
  std::lock_guard lk(token_->mu_);  // waits for a cancel() that is running our callback
  token_->callbacks_.erase(id_);
}

}  // namespace moka
