// LoadPrefetcher: decodes the later tensor records of a DB on helper threads while load_bound_blobs
// reads the first ones, so a load uses more than one core. load_bound_blobs stays the only judge:
// it adopts a prefetched blob only where its own sequential pass would have decoded that same
// record into a fresh blob, and reads the record itself otherwise (same result, same errors).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "moka/core/blob.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"

namespace moka::detail {

/// A record a helper decoded: its header, its value size, and the blob (complete and verified).
struct PrefetchedRecord {
  RecordHeader header;
  uint64_t value_size = 0;
  Blob blob;
};

/// @brief Prefetching of whole single-chunk tensor records of one DB opened in Read mode.
///
/// start() walks the DB's keys (only for DBs whose keys and value sizes come from an in-memory
/// index, DB::indexed()) and splits the wanted records' bytes evenly between the calling thread and
/// `threads - 1` helpers. For each helper's share it reads the record headers and allocates each
/// tensor on the calling thread, so that its memory comes from, and goes back to, the caller's
/// malloc arena (a helper thread's arena is unmapped when its blocks are freed, and its next use
/// faults every page in again); the helpers then read, hash and check the records into them.
/// Records whose header does not qualify (not a tensor, strings, several chunks, unreadable) are
/// left to the caller.
///
/// The caller walks the DB in key order, counting records from 0, and calls take() for each record
/// it would decode into a fresh blob; take() waits for a helper's record and returns it, or null
/// when the caller must read the record itself (a helper's error is dropped: the caller's own read
/// reports it). Destruction stops the helpers and joins them.
/// Thread-safety: take() and destruction from the thread that called start().
class LoadPrefetcher {
 public:
  /// Whether the caller will read the record of a DB key (a requested name, or load_all).
  using Wanted = std::function<bool(std::string_view key)>;

  /// @brief A prefetcher with helpers running, or null when the DB is not indexed, threads < 2,
  /// or the wanted records hold fewer than `min_bytes` bytes. Returns null rather than throwing
  /// when something goes wrong: the caller then loads alone and meets the problem itself.
  static std::unique_ptr<LoadPrefetcher> start(DB& db, const Wanted& wanted, std::size_t threads, uint64_t min_bytes);
  ~LoadPrefetcher();
  LoadPrefetcher(const LoadPrefetcher&) = delete;
  LoadPrefetcher& operator=(const LoadPrefetcher&) = delete;

  /// @brief The prefetched record at `ordinal` (whose key must be `key`), once decoded; null when
  /// there is none or its decoding failed. Ordinals must not decrease from call to call. The
  /// record's blob may be taken.
  PrefetchedRecord* take(std::size_t ordinal, std::string_view key);

  /// @brief Records handed to helpers (for tests).
  std::size_t prefetched() const noexcept { return items_.size(); }

 private:
  enum State : uint8_t { kPending, kDone, kFailed };
  struct Item {
    std::size_t ordinal = 0;
    std::string key;
    PrefetchedRecord record;
  };
  LoadPrefetcher() = default;
  void run_helper(std::unique_ptr<Cursor> cursor, std::size_t begin, std::size_t end) noexcept;

  std::vector<Item> items_;
  std::unique_ptr<std::atomic<uint8_t>[]> states_;
  std::size_t next_ = 0;  // the first item take() has not passed yet
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace moka::detail
