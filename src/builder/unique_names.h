// UniqueNames: a process-wide, never-reset set of names that hands out `base`, `base_1`, ...
// (Caffe2's Net._net_names_used and ExecutionStep._step_names_used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace moka::detail {

/// Thread-safety: all methods may be called concurrently.
class UniqueNames {
 public:
  /// The first of base, base_1, base_2, ... not handed out or reserved before; reserves it.
  std::string unique(const std::string& base) {
    std::lock_guard lock(mu_);
    // Names are never released, so every suffix up to the base's counter is taken: starting there
    // gives Caffe2's answer (the first free one) without rescanning from 1.
    auto it = next_suffix_.find(base);
    int next = it == next_suffix_.end() ? 0 : it->second;
    std::string name = next == 0 ? base : fmt::format("{}_{}", base, next);
    while (taken(name)) name = fmt::format("{}_{}", base, ++next);
    if (next == 0)
      used_.insert(name);
    else if (it != next_suffix_.end())
      it->second = next;
    else
      next_suffix_.emplace(base, next);
    return name;
  }
  /// Marks name as taken without changing it.
  void reserve(const std::string& name) {
    std::lock_guard lock(mu_);
    used_.insert(name);
  }
  /// How many names and counters are stored (for tests: a base handed out again and again must
  /// not grow it, or a job that names a new net every epoch grows for ever).
  std::size_t stored() {
    std::lock_guard lock(mu_);
    return used_.size() + next_suffix_.size();
  }

 private:
  // Handed out or reserved. Suffixed names handed out by unique() are not stored: `base_k` is
  // taken when base's counter reached k (every suffix below the counter was handed out or skipped
  // as taken), which keeps the memory per base constant.
  bool taken(const std::string& name) const {
    if (used_.contains(name)) return true;
    const std::size_t us = name.rfind('_');
    if (us == std::string::npos || us + 1 >= name.size() || name[us + 1] == '0') return false;
    int64_t k = 0;
    for (std::size_t i = us + 1; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9' || k > (int64_t{1} << 40)) return false;
      k = k * 10 + (name[i] - '0');
    }
    auto it = next_suffix_.find(std::string_view(name).substr(0, us));
    return it != next_suffix_.end() && it->second >= k;
  }

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::mutex mu_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int, Hash, std::equal_to<>> next_suffix_;  // base -> last suffix handed out
};

UniqueNames& net_names();
UniqueNames& step_names();

}  // namespace moka::detail
