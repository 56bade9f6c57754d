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

class StatShare;
class StatSource;

/// @brief A table of named int64 statistics.
///
/// A stat is created (at 0) the first time it is named and is never removed, so the reference
/// stat() returns stays valid for the registry's lifetime: hot paths look a key up once and then
/// update the atomic directly. A key's value is its cell plus every live StatShare of the key (a
/// share is one owner's part, updated without atomic read-modify-writes; see StatShare).
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
  /// The key's value is the cell plus its live shares (StatShare).
  std::atomic<int64_t>& stat(std::string_view key);
  /// @brief Adds delta to the cell (wrapping at the int64 limits); returns the key's new value.
  int64_t add(std::string_view key, int64_t delta);
  /// @brief Sets the value (the cell to `value`, every live share's part to 0).
  void set(std::string_view key, int64_t value);
  /// @brief The current value; 0 for a key never named.
  int64_t get(std::string_view key) const;
  /// @brief True when the key has been named.
  bool has(std::string_view key) const;
  /// @brief Every (key, value), sorted by key; with reset the values are set to 0 (the keys stay). The stats of
  /// the registered sources are included (a key that a source and a cell both have, or two sources, is their
  /// sum) and are not reset: they are their objects' own figures.
  std::vector<Entry> export_all(bool reset);
  /// @brief Reads `source` at every export_all until remove_source. The source must outlive its registration.
  void add_source(const StatSource* source);
  /// Stops reading `source`; when it returns, no export reads it any more.
  void remove_source(const StatSource* source);

 private:
  friend class StatShare;
  // Each value on its own cache line: stats that different threads update (say the per-thread
  // timers of two pipes) would otherwise share map nodes' lines and bounce between cores.
  struct alignas(64) Cell {
    explicit Cell(int64_t v) : value(v) {}
    std::atomic<int64_t> value;
    std::vector<StatShare*> shares;  // live shares of the key (under mu_)
  };
  Cell& cell(std::string_view key);        // created at 0 when missing; mu_ held
  static int64_t value_of(const Cell& c);  // the cell plus its shares; mu_ held
  static int64_t take_all(Cell& c);        // value_of, resetting the cell and its shares to 0; mu_ held
  mutable std::mutex mu_;
  std::map<std::string, Cell, std::less<>> stats_;
  std::vector<const StatSource*> sources_;
};

/// @brief Stats that live in other objects (every live queue's depth, records and waits), read when the registry
/// exports instead of being pushed into it, so that the objects' hot paths count nothing extra.
/// Thread-safety: read() is called by any thread that exports, under the registry's lock.
class StatSource {
 public:
  virtual ~StatSource() = default;
  /// Appends the source's stats now.
  virtual void read(std::vector<StatRegistry::Entry>& out) const = 0;
};

/// What a pipe has published: its timer "<node>/pipe/<name>/<input>/<output>" (ns) with "/count" (batches), and
/// "/records" (the records it read, counted by CountRecords; docs/pipelines.md §5.1).
struct PipeCounts {
  std::string pipe{};   ///< the timer's key, "<node>/pipe/<name>/<input>/<output>"
  std::string label{};  ///< "<node>/<name>", for displays
  int64_t batches = 0;
  int64_t records = 0;
  bool counts_records = false;  ///< false: the pipe has no "/records" stat (its reader yields no record)
};
/// The pipes among exported stats (StatRegistry::export_all), in the order of their keys.
std::vector<PipeCounts> pipe_counts(const std::vector<StatRegistry::Entry>& stats);

/// @brief One owner's part of a stat, added to with a plain load and store instead of an atomic
/// read-modify-write.
///
/// For counters bumped on hot paths by one thread: a pipe thread's timer publishes twice per batch,
/// and a locked add (which waits for every store before it to reach the cache) cost as much there as
/// everything else the timer does. The registry counts a live share in the key's value (get,
/// export_all, add's result) and resets it with the key (by remembering what it had read, never by
/// writing the owner's word); the destructor folds what is left into the key's cell.
///
/// @code
///   StatShare batches(StatRegistry::global(), "my_pipe/batches");
///   batches.add(1);   // owner thread only
///   StatRegistry::global().get("my_pipe/batches");   // any thread: counts the share
/// @endcode
/// Thread-safety: add() by one thread at a time (the owner), never concurrently with the destructor;
/// the registry reads the share from any thread.
class StatShare {
 public:
  StatShare(StatRegistry& registry, std::string_view key);
  ~StatShare();
  StatShare(const StatShare&) = delete;
  StatShare& operator=(const StatShare&) = delete;

  /// @brief Adds delta (wrapping at the int64 limits). Owner thread only.
  void add(int64_t delta) noexcept {
    const auto v = static_cast<uint64_t>(value_.load(std::memory_order_relaxed)) + static_cast<uint64_t>(delta);
    value_.store(static_cast<int64_t>(v), std::memory_order_relaxed);
  }

 private:
  friend class StatRegistry;
  // The share's part of the value: what was added since the last reset (value_ - base_).
  int64_t part() const noexcept;
  // part(), then resets it to 0 (base_ = the value read).
  int64_t take() noexcept;

  StatRegistry& registry_;
  StatRegistry::Cell* cell_;
  std::atomic<int64_t> value_{0};  // written by the owner only
  int64_t base_ = 0;               // value_ at the last reset (under the registry's mu_)
};

}  // namespace moka
