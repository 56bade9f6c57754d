// StatRegistry: process-wide named int64 statistics (Caffe2's StatRegistry), exported by StatRegistryExport.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moka {

/// @brief A table of named int64 statistics.
///
/// A stat is created (at 0) the first time it is named and is never removed, so the reference
/// stat() returns stays valid for the registry's lifetime: hot paths look a key up once and then
/// update the atomic directly.
///
/// @code
///   StatRegistry::global().add("atomic_iter/stats/iter/num_iter", 1);
///   auto all = StatRegistry::global().export_all(/*reset=*/true);  // sorted by key
/// @endcode
/// Thread-safety: every method may be called concurrently.
class StatRegistry {
 public:
  using Entry = std::pair<std::string, int64_t>;

  StatRegistry() = default;
  StatRegistry(const StatRegistry&) = delete;
  StatRegistry& operator=(const StatRegistry&) = delete;

  /// @brief The process-wide registry (never destroyed, so it is usable during static teardown).
  static StatRegistry& global();

  /// @brief The stat's value cell, created at 0 when missing. Stable for the registry's lifetime.
  std::atomic<int64_t>& stat(std::string_view key);
  /// @brief Adds delta (wrapping at the int64 limits); returns the new value.
  int64_t add(std::string_view key, int64_t delta);
  /// @brief Sets the value.
  void set(std::string_view key, int64_t value);
  /// @brief The current value; 0 for a key never named.
  int64_t get(std::string_view key) const;
  /// @brief True when the key has been named.
  bool has(std::string_view key) const;
  /// @brief Every (key, value), sorted by key; with reset the values are set to 0 (the keys stay).
  std::vector<Entry> export_all(bool reset);

 private:
  // Each value on its own cache line: stats that different threads update (say the per-thread
  // timers of two pipes) would otherwise share map nodes' lines and bounce between cores.
  struct alignas(64) Cell {
    explicit Cell(int64_t v) : value(v) {}
    std::atomic<int64_t> value;
  };
  mutable std::mutex mu_;
  std::map<std::string, Cell, std::less<>> stats_;
};

}  // namespace moka
