// StatRegistry: the process-wide table of named int64 statistics, and StatShare, one owner's part of one.
#include "moka/operators/stats.h"

#include <algorithm>

namespace moka {

namespace {

int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

}  // namespace

StatRegistry& StatRegistry::global() {
  static auto* reg = new StatRegistry();  // never destroyed: timers may publish during static teardown
  return *reg;
}

StatRegistry::Cell& StatRegistry::cell(std::string_view key) {
  auto it = stats_.find(key);
  if (it == stats_.end()) it = stats_.try_emplace(std::string(key), 0).first;
  return it->second;
}

int64_t StatRegistry::value_of(const Cell& c) {
  int64_t v = c.value.load();
  for (const StatShare* s : c.shares) v = wrapping_add(v, s->part());
  return v;
}

int64_t StatRegistry::take_all(Cell& c) {
  int64_t v = c.value.exchange(0);
  for (StatShare* s : c.shares) v = wrapping_add(v, s->take());
  return v;
}

std::atomic<int64_t>& StatRegistry::stat(std::string_view key) {
  std::lock_guard lk(mu_);
  return cell(key).value;
}

int64_t StatRegistry::add(std::string_view key, int64_t delta) {
  std::lock_guard lk(mu_);
  Cell& c = cell(key);
  c.value.fetch_add(delta);  // wraps (defined for atomics)
  return value_of(c);
}

void StatRegistry::set(std::string_view key, int64_t value) {
  std::lock_guard lk(mu_);
  Cell& c = cell(key);
  for (StatShare* s : c.shares) (void)s->take();
  c.value.store(value);
}

int64_t StatRegistry::get(std::string_view key) const {
  std::lock_guard lk(mu_);
  auto it = stats_.find(key);
  return it == stats_.end() ? 0 : value_of(it->second);
}

bool StatRegistry::has(std::string_view key) const {
  std::lock_guard lk(mu_);
  return stats_.find(key) != stats_.end();
}

std::vector<StatRegistry::Entry> StatRegistry::export_all(bool reset) {
  std::lock_guard lk(mu_);
  std::vector<Entry> out;
  out.reserve(stats_.size());
  for (auto& [k, c] : stats_) out.emplace_back(k, reset ? take_all(c) : value_of(c));
  return out;
}

StatShare::StatShare(StatRegistry& registry, std::string_view key) : registry_(registry) {
  std::lock_guard lk(registry_.mu_);
  cell_ = &registry_.cell(key);
  cell_->shares.push_back(this);
}

StatShare::~StatShare() {
  std::lock_guard lk(registry_.mu_);
  cell_->value.fetch_add(take());
  std::erase(cell_->shares, this);
}

int64_t StatShare::part() const noexcept { return wrapping_sub(value_.load(std::memory_order_relaxed), base_); }

int64_t StatShare::take() noexcept {
  const int64_t now = value_.load(std::memory_order_relaxed);
  const int64_t p = wrapping_sub(now, base_);
  base_ = now;
  return p;
}

}  // namespace moka
