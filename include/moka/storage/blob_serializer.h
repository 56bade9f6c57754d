// Blob serialization: moka's versioned, checksummed binary record format for tensors, counters, tree
// cursors and registered user types (docs/checkpoint-format.md), with byte sinks/sources and a registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "moka/core/blob.h"
#include "moka/core/dtype.h"

namespace moka {

/// First four bytes of every record: "MKBR" (moka blob record).
inline constexpr std::string_view kBlobRecordMagic = "MKBR";
/// The format version this build writes, and the newest it reads.
inline constexpr uint16_t kBlobFormatVersion = 1;
/// Separator between a blob name and its chunk index in DB keys (Caffe2's kChunkIdSeparator).
inline constexpr std::string_view kChunkIdSeparator = "#%";
/// SerializeOptions::chunk_size value meaning "the default" (Caffe2's kDefaultChunkSize).
inline constexpr int64_t kDefaultChunkSize = 0;
/// SerializeOptions::chunk_size value meaning "one chunk, whatever the size" (Caffe2's kNoChunking).
inline constexpr int64_t kNoChunking = -1;
/// Elements per chunk when chunk_size is kDefaultChunkSize (Caffe2's caffe2_tensor_chunk_size flag).
inline constexpr int64_t kDefaultTensorChunkElements = 1'000'000;

/// Type names written for the built-in kinds of blob.
inline constexpr std::string_view kTensorTypeName = "moka.Tensor";
inline constexpr std::string_view kCounterTypeName = "moka.Counter";
inline constexpr std::string_view kTreeCursorTypeName = "moka.TreeCursor";
inline constexpr std::string_view kTextFileReaderTypeName = "moka.TextFileReaderInstance";

/// @brief Where serialized bytes go (a string, a file, a DB value being built).
///
/// The serializer calls begin_record(key, size), then write() one or more times with exactly
/// `size` bytes, then end_record(). `key` is the DB key Caffe2 would store the record under
/// ("w#%0", "w#%1", ... for tensor chunks, "w" for other blobs), so a DB sink can put each record
/// as its own key/value pair, while a file sink just appends the bytes.
/// Tensor payloads are passed straight from tensor storage, in pieces of at most 256 KiB that the
/// serializer hashes right after write() returns, so a sink that touches each piece at once (as
/// save_blobs' TransactionSink does) leaves it in cache for the checksum. serialize_blob keeps
/// every span it passes to write() valid and unchanged until the record's end_record() returns, so
/// a sink may also keep views of the pieces instead of copying them.
/// Thread-safety: a sink is used by one thread at a time.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  /// @brief Appends bytes.
  virtual void write(std::span<const std::byte> bytes) = 0;
  /// @brief A record of `size` bytes, stored under `key`, starts.
  virtual void begin_record(std::string_view key, uint64_t size) {
    (void)key;
    (void)size;
  }
  /// @brief The record begun last is complete.
  virtual void end_record() {}
};

/// @brief A ByteSink appending to a std::string it owns.
/// Thread-safety: none.
class StringSink final : public ByteSink {
 public:
  StringSink() = default;
  /// @brief Starts with `reserve` bytes of capacity (avoids regrowth when the size is known).
  explicit StringSink(std::size_t reserve) { data_.reserve(reserve); }
  void write(std::span<const std::byte> bytes) override {
    data_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  void begin_record(std::string_view key, uint64_t size) override;
  /// @brief The bytes written so far.
  const std::string& str() const noexcept { return data_; }
  std::string& str() noexcept { return data_; }
  /// @brief Moves the bytes out, leaving the sink empty.
  std::string take() { return std::exchange(data_, {}); }

 private:
  std::string data_;
};

/// @brief Where serialized bytes come from.
/// Thread-safety: a source is used by one thread at a time.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// @brief Reads up to into.size() bytes into `into`; returns the count, 0 only at the end.
  virtual std::size_t read(std::span<std::byte> into) = 0;
  /// @brief Bytes left, when the source knows (memory, a regular file); nullopt otherwise.
  /// Readers use it only to reject absurd length fields before allocating.
  virtual std::optional<uint64_t> remaining() const { return std::nullopt; }
};

/// @brief A ByteSource over bytes in memory (not copied: they must outlive the source).
/// Thread-safety: none.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) noexcept : data_(bytes) {}
  std::size_t read(std::span<std::byte> into) override;
  std::optional<uint64_t> remaining() const override { return data_.size() - pos_; }
  /// @brief Bytes consumed so far.
  std::size_t position() const noexcept { return pos_; }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

/// Options of serialize_blob.
struct SerializeOptions {
  /// Elements per tensor chunk, as Caffe2's Save `chunk_size`: kDefaultChunkSize (0) means
  /// kDefaultTensorChunkElements, kNoChunking (-1) one chunk for the whole tensor, > 0 that many.
  int64_t chunk_size = kDefaultChunkSize;
  /// A chunk also ends once its payload reaches this many bytes (at least one element per chunk),
  /// so string tensors with long strings still stream in bounded pieces. Ignored with kNoChunking.
  uint64_t max_chunk_bytes = uint64_t{64} << 20;
};

/// Options of deserialization: limits that keep a corrupt or hostile length field from allocating.
struct DeserializeOptions {
  /// Largest tensor (bytes of element storage; sizeof(std::string) per string element) accepted.
  uint64_t max_tensor_bytes = uint64_t{64} << 30;
  /// Largest payload of a non-tensor record (counter, cursor, user type).
  uint64_t max_object_bytes = uint64_t{1} << 30;
};

/// Kind byte of a record.
enum class RecordKind : uint8_t {
  TensorChunk = 1,  ///< a contiguous range of a tensor's elements
  Object = 2,       ///< a whole non-tensor blob, written by a registered serializer
};

/// @brief The decoded, checksum-verified header of one record.
struct RecordHeader {
  RecordKind kind = RecordKind::Object;
  std::string name;       ///< blob name
  std::string type_name;  ///< kTensorTypeName or a registered type name
  uint32_t header_size = 0;
  uint64_t payload_size = 0;
  uint64_t header_checksum = 0;  ///< also the seed of the payload checksum
  // Tensor chunks only:
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  uint64_t chunk_index = 0;
  uint64_t chunk_count = 1;
  uint64_t elem_begin = 0;
  uint64_t elem_count = 0;

  /// The DB key of this record: "name#%index" for tensor chunks, "name" otherwise.
  std::string key() const;
  /// "blob \"w\" chunk 2 of 5" / "blob \"c\" (moka.Counter)", for messages.
  std::string describe() const;
};

/// @brief XXH3-64 of bytes with a seed (the checksum every record carries).
uint64_t xxh3_64(std::span<const std::byte> bytes, uint64_t seed = 0) noexcept;

/// @brief Writes `blob` as one or more records to `out` (several for a chunked tensor).
///
/// Tensors of every dtype (0-d, empty and string tensors included) are written in chunks of
/// options.chunk_size elements; other blobs by the serializer registered for their type
/// (Counter and TreeCursor are built in). Output is deterministic: the same blob, name and
/// options always give the same bytes.
/// Throws InvalidInput naming the blob when it is empty, holds a BlobsQueue (not serializable,
/// as in Caffe2) or a type with no registered serializer ("No known serializer for T").
/// @code
///   moka::StringSink sink;
///   moka::serialize_blob("w", ws.blob("w"), sink, {.chunk_size = 1 << 20});
/// @endcode
/// Thread-safety: the blob must not be written concurrently; distinct blobs may be serialized
/// from several threads at once.
void serialize_blob(std::string_view name, const Blob& blob, ByteSink& out, const SerializeOptions& options = {});
/// @brief serialize_blob into a fresh string (sized exactly once).
std::string serialize_blob_to_string(std::string_view name, const Blob& blob, const SerializeOptions& options = {});
/// @brief Whether serialize_blob can write the blob: it holds a tensor with a dtype (or no elements)
/// or an object of a registered type. Queues, mutexes and uninitialized blobs cannot be written.
bool is_serializable(const Blob& blob);
/// @brief Total bytes serialize_blob would write (runs the serializer of non-tensor blobs).
uint64_t serialized_size(std::string_view name, const Blob& blob, const SerializeOptions& options = {});

/// @brief Reads and verifies one record header (magic, version, sizes, header checksum); leaves
/// the source at the start of the payload. Throws CorruptData naming `where` on any failure.
RecordHeader read_record_header(ByteSource& in, std::string_view where = "record");

/// @brief Rebuilds one blob from its records, accepting tensor chunks in any order (a DB backend
/// may return "w#%10" before "w#%2").
///
/// Tensor payloads are read straight into the destination tensor's storage (reusing it when the
/// blob already holds a tensor). On any error the destination blob is reset (left empty, never
/// holding partly-wrong data) and the assembler refuses further records.
/// @code
///   moka::BlobAssembler a(blob);
///   for (auto& value : db_values_of("w")) { moka::MemorySource s(value); a.add(s); }
///   a.finish();   // CorruptData if a chunk is missing
/// @endcode
/// Thread-safety: none.
class BlobAssembler {
 public:
  explicit BlobAssembler(Blob& dest, DeserializeOptions options = {}) : dest_(dest), options_(options) {}

  /// @brief Reads one whole record (header, payload, checksum) from `in`.
  void add(ByteSource& in);
  /// @brief Reads the payload of a record whose header was read with read_record_header.
  void add(const RecordHeader& header, ByteSource& in);
  /// @brief Takes `whole`, a blob that another assembler built from the single record `header`
  /// (complete, every check passed), as this blob's only record: the same state as add(header, ...)
  /// of that record would leave. Requires that nothing was added yet (InvalidInput otherwise).
  void adopt(const RecordHeader& header, Blob& whole);
  /// @brief True once every chunk of the blob has arrived.
  bool complete() const noexcept { return complete_; }
  /// @brief Throws CorruptData (and resets the blob) unless complete().
  void finish();
  /// @brief The blob name of the records seen so far ("" before the first).
  const std::string& name() const noexcept { return name_; }
  /// @brief Caps tensor sizes at what a source of known size can hold (used by deserialize_blob).
  void limit_tensor_bytes(uint64_t max) noexcept { stream_limit_ = max; }

 private:
  void add_unchecked(const RecordHeader& h, ByteSource& in);
  void add_tensor_chunk(const RecordHeader& h, ByteSource& in);
  void add_object(const RecordHeader& h, ByteSource& in);
  [[noreturn]] void fail(const std::string& message) const;

  Blob& dest_;
  DeserializeOptions options_;
  std::optional<uint64_t> stream_limit_;
  bool failed_ = false;
  bool complete_ = false;
  std::string name_;
  std::optional<RecordHeader> first_;  // header of the first tensor chunk
  std::set<uint64_t> seen_chunks_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // (elem_begin, elem_count) per chunk
  uint64_t elems_seen_ = 0;
};

/// @brief Reads one complete blob (all its records, which must be consecutive, as serialize_blob
/// writes them) from `in` into `blob`; returns the blob name stored in the records.
/// Throws CorruptData naming the blob and record on truncation, bad magic or version, checksum
/// mismatch, inconsistent sizes or an unknown type name; the blob is then left empty.
std::string deserialize_blob(ByteSource& in, Blob& blob, const DeserializeOptions& options = {});
/// @brief As above, from bytes that must hold exactly one blob (trailing bytes are an error).
std::string deserialize_blob(std::string_view bytes, Blob& blob, const DeserializeOptions& options = {});

/// @brief The blob name in a DB key: everything before the first "#%" (Caffe2's Load).
std::string_view blob_name_from_key(std::string_view key) noexcept;

/// @brief Little-endian writer for the payload of a user type's serializer.
/// Thread-safety: none.
class PayloadWriter {
 public:
  explicit PayloadWriter(std::string& out) noexcept : out_(out) {}
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  /// @brief u32 length, then the bytes (InvalidInput if longer than 4 GiB - 1).
  void str(std::string_view s);

 private:
  std::string& out_;
};

/// @brief Bounds-checked little-endian reader for a user type's payload; every read past the end
/// throws CorruptData naming `what`.
/// Thread-safety: none.
class PayloadReader {
 public:
  PayloadReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  std::string_view str();
  std::size_t remaining() const noexcept { return in_.size() - pos_; }
  /// @brief CorruptData unless every byte was consumed.
  void expect_end() const;
  /// @brief Throws CorruptData "<what>: <message>".
  [[noreturn]] void fail(std::string_view message) const;

 private:
  std::string_view take(std::size_t n);
  std::string_view in_;
  std::size_t pos_ = 0;
  std::string what_;
};

/// @brief Maps blob types to their serializers by a stable type name (the name is what records
/// store, so it must never change once data has been written with it).
///
/// Counter ("moka.Counter") and TreeCursor ("moka.TreeCursor") are registered by global().
/// @code
///   struct Stats { int64_t n = 0; double sum = 0; };
///   moka::BlobSerializerRegistry::global().register_serializer<Stats>(
///       "myapp.Stats",
///       [](const Stats& s, std::string& out) { moka::PayloadWriter w(out); w.i64(s.n); w.f64(s.sum); },
///       [](std::string_view in) {
///         moka::PayloadReader r(in, "myapp.Stats");
///         auto s = std::make_unique<Stats>();
///         s->n = r.i64(); s->sum = r.f64(); r.expect_end();
///         return s;
///       });
/// @endcode
/// Thread-safety: every method may be called concurrently.
class BlobSerializerRegistry {
 public:
  /// Appends the payload of the blob's object to `out`.
  using SerializeFn = std::function<void(const Blob&, std::string& out)>;
  /// Replaces the blob's content with the object decoded from `payload`.
  using DeserializeFn = std::function<void(std::string_view payload, Blob& blob)>;
  struct Entry {
    std::string type_name;
    const TypeInfo* type = nullptr;
    SerializeFn serialize;
    DeserializeFn deserialize;
  };

  BlobSerializerRegistry() = default;
  /// @brief The registry serialize_blob and deserialization use (with the built-in types).
  static BlobSerializerRegistry& global();

  /// @brief Registers T under type_name. InvalidInput if the name is empty, starts with "moka."
  /// while T is not a built-in, or the name or type is already registered.
  template <class T>
  void register_serializer(std::string type_name, std::function<void(const T&, std::string&)> serialize,
                           std::function<std::unique_ptr<T>(std::string_view)> deserialize) {
    register_type(
        std::move(type_name), type_info_of<T>(),
        [ser = std::move(serialize)](const Blob& b, std::string& out) { ser(b.get<T>(), out); },
        [de = std::move(deserialize)](std::string_view in, Blob& b) { b.reset(de(in)); });
  }
  /// @brief Type-erased registration.
  void register_type(std::string type_name, const TypeInfo& type, SerializeFn serialize, DeserializeFn deserialize);
  /// @brief Removes a registration (tests); false if none.
  bool unregister(std::string_view type_name);
  /// @brief The entry for a C++ type, or null.
  std::shared_ptr<const Entry> find(const TypeInfo* type) const;
  /// @brief The entry for a stored type name, or null.
  std::shared_ptr<const Entry> find(std::string_view type_name) const;
  /// @brief Every registered type name, sorted.
  std::vector<std::string> type_names() const;

 private:
  void register_builtin(std::string type_name, const TypeInfo& type, SerializeFn serialize, DeserializeFn deserialize);
  mutable std::mutex mu_;
  std::unordered_map<const TypeInfo*, std::shared_ptr<const Entry>> by_type_;
  std::unordered_map<std::string, std::shared_ptr<const Entry>> by_name_;
};

}  // namespace moka
