// StatRegistry: the process-wide table of named int64 statistics, and StatShare, one owner's part of one.
#include "moka/operators/stats.h"

#include <algorithm>
#include <map>
#include <string_view>

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
  if (sources_.empty()) return out;
  const std::size_t own = out.size();
  for (const StatSource* source : sources_) source->read(out);
  // Merge the sources' entries into the sorted cells, summing equal keys.
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(own), out.end(),
            [](const Entry& a, const Entry& b) { return a.first < b.first; });
  std::inplace_merge(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(own), out.end(),
                     [](const Entry& a, const Entry& b) { return a.first < b.first; });
  std::vector<Entry> merged;
  merged.reserve(out.size());
  for (auto& e : out) {
    if (!merged.empty() && merged.back().first == e.first)
      merged.back().second = wrapping_add(merged.back().second, e.second);
    else
      merged.push_back(std::move(e));
  }
  return merged;
}

void StatRegistry::add_source(const StatSource* source) {
  std::lock_guard lk(mu_);
  sources_.push_back(source);
}

void StatRegistry::remove_source(const StatSource* source) {
  std::lock_guard lk(mu_);
  std::erase(sources_, source);
}

std::vector<PipeCounts> pipe_counts(const std::vector<StatRegistry::Entry>& stats) {
  constexpr std::string_view kPipeMark = "/pipe/";
  constexpr std::string_view kCountSuffix = "/count";
  constexpr std::string_view kRecordsSuffix = "/records";
  std::map<std::string_view, int64_t> records;  // "<pipe>" -> its "<pipe>/records"
  for (const auto& [key, value] : stats)
    if (key.ends_with(kRecordsSuffix))
      records.emplace(std::string_view(key).substr(0, key.size() - kRecordsSuffix.size()), value);
  std::vector<PipeCounts> out;
  for (const auto& [key, value] : stats) {
    const std::size_t mark = key.find(kPipeMark);
    // The name comes between the mark and the suffix: "a/pipe/count" is no pipe.
    if (mark == std::string::npos || !key.ends_with(kCountSuffix) ||
        key.size() - kCountSuffix.size() <= mark + kPipeMark.size())
      continue;
    PipeCounts p;
    p.pipe = key.substr(0, key.size() - kCountSuffix.size());
    const std::size_t at = mark + kPipeMark.size();
    const std::size_t end = p.pipe.find('/', at);
    p.label = key.substr(0, mark) + "/" + p.pipe.substr(at, end == std::string::npos ? std::string::npos : end - at);
    p.batches = value;
    out.push_back(std::move(p));
  }
  for (PipeCounts& p : out) {
    const auto it = records.find(p.pipe);
    if (it == records.end()) continue;
    p.records = it->second;
    p.counts_records = true;
  }
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
