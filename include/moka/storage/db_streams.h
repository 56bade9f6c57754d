// TransactionSink and CursorValueSource: the blob serializer's ByteSink / ByteSource over a DB
// transaction and a cursor, the way save_blobs and load_blobs connect records to a DB.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"

namespace moka {

/// @brief A ByteSink that streams each record serialize_blob produces into the transaction:
/// begin_record → Transaction::begin_put, write → put_part, end_record → end_put. Tensor bytes
/// go from tensor storage to the DB piece by piece (minidb hashes and buffers each piece while it is
/// still in cache from the serializer's own checksum pass), never copied into a record string.
/// @code
///   auto txn = db->new_transaction();
///   moka::TransactionSink sink(*txn);
///   moka::serialize_blob("w", ws.blob("w"), sink);
///   txn->commit();
/// @endcode
/// Thread-safety: none (one serializer at a time, like the transaction).
class TransactionSink final : public ByteSink {
 public:
  explicit TransactionSink(Transaction& txn) : txn_(txn) {}
  void begin_record(std::string_view key, uint64_t size) override { txn_.begin_put(key, size); }
  void write(std::span<const std::byte> bytes) override {
    if (bytes.empty()) return;
    txn_.put_part(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    bytes_ += bytes.size();
  }
  void end_record() override { txn_.end_put(); }
  /// @brief Value bytes put so far.
  uint64_t bytes() const noexcept { return bytes_; }

 private:
  Transaction& txn_;
  uint64_t bytes_ = 0;
};

/// @brief The current value of a cursor as a ByteSource, read through Cursor::read_value, so a
/// reader of records (BlobAssembler) puts a tensor chunk into tensor storage straight from the DB.
/// Checks are those of read_value (for minidb: record header, lengths and key, not the payload
/// hash — blob records carry their own checksums).
/// Thread-safety: none; the cursor must stay on the same record while the source is used.
class CursorValueSource final : public ByteSource {
 public:
  explicit CursorValueSource(Cursor& c) : c_(c), size_(c.value_size()) {}
  std::size_t read(std::span<std::byte> into) override {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(into.size(), size_ - pos_));
    if (n > 0) c_.read_value(pos_, into.first(n));
    pos_ += n;
    return n;
  }
  std::optional<uint64_t> remaining() const override { return size_ - pos_; }
  /// @brief The value's size in bytes.
  uint64_t size() const noexcept { return size_; }
  /// @brief Bytes read so far.
  uint64_t position() const noexcept { return pos_; }

 private:
  Cursor& c_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace moka
