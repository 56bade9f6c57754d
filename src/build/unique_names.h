// UniqueNames: a process-wide, never-reset set of names that hands out `base`, `base_1`, ...
// (Caffe2's Net._net_names_used and ExecutionStep._step_names_used).
#pragma once

#include <mutex>
#include <string>
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
    // Names are never released, so every suffix below the hint is still taken: starting there
    // gives Caffe2's answer (the first free one) without rescanning from 1.
    int& next = next_suffix_[base];
    std::string name = next == 0 ? base : fmt::format("{}_{}", base, next);
    while (used_.contains(name)) name = fmt::format("{}_{}", base, ++next);
    used_.insert(name);
    return name;
  }
  /// Marks name as taken without changing it.
  void reserve(const std::string& name) {
    std::lock_guard lock(mu_);
    used_.insert(name);
  }

 private:
  std::mutex mu_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_suffix_;
};

UniqueNames& net_names();
UniqueNames& step_names();

}  // namespace moka::detail
