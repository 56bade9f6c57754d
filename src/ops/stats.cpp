// StatRegistry: the process-wide table of named int64 statistics.
#include "moka/ops/stats.h"

namespace moka {

StatRegistry& StatRegistry::global() {
  static auto* reg = new StatRegistry();  // never destroyed: timers may publish during static teardown
  return *reg;
}

std::atomic<int64_t>& StatRegistry::stat(std::string_view key) {
  std::lock_guard lk(mu_);
  auto it = stats_.find(key);
  if (it == stats_.end()) it = stats_.try_emplace(std::string(key), 0).first;
  return it->second.value;
}

int64_t StatRegistry::add(std::string_view key, int64_t delta) {
  // fetch_add wraps (defined for atomics); recompute the sum in unsigned to stay free of UB.
  const int64_t old = stat(key).fetch_add(delta);
  return static_cast<int64_t>(static_cast<uint64_t>(old) + static_cast<uint64_t>(delta));
}

void StatRegistry::set(std::string_view key, int64_t value) { stat(key).store(value); }

int64_t StatRegistry::get(std::string_view key) const {
  std::lock_guard lk(mu_);
  auto it = stats_.find(key);
  return it == stats_.end() ? 0 : it->second.value.load();
}

bool StatRegistry::has(std::string_view key) const {
  std::lock_guard lk(mu_);
  return stats_.find(key) != stats_.end();
}

std::vector<StatRegistry::Entry> StatRegistry::export_all(bool reset) {
  std::lock_guard lk(mu_);
  std::vector<Entry> out;
  out.reserve(stats_.size());
  for (auto& [k, v] : stats_) out.emplace_back(k, reset ? v.value.exchange(0) : v.value.load());
  return out;
}

}  // namespace moka
