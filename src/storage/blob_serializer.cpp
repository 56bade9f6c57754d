// Blob serialization: writes and reads moka's checksummed blob records (format in docs/checkpoint-format.md).
#include "moka/storage/blob_serializer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/counter.h"
#include "moka/operators/text_file_reader.h"
#include "moka/operators/tree_cursor.h"
#include "storage/xxh3_fast.h"

// XXH3 comes from io/xxh3_fast.h: the widest vector unit the CPU has (xxHash used header-only).

namespace moka {

// Numbers are stored little-endian and tensor payloads are copied straight from storage, which is
// only correct on little-endian hosts (every platform moka builds on).
static_assert(std::endian::native == std::endian::little, "moka's blob format assumes a little-endian host");

namespace {

// Fixed part of a record header: magic, version, kind, flags, header size, payload size.
constexpr std::size_t kFixedHeaderSize = 20;
constexpr std::size_t kChecksumSize = 8;
// No legitimate header comes near this (names and shapes); a larger value is corruption.
constexpr uint32_t kMaxHeaderSize = 1u << 20;
// Object payloads and string chunks are read in pieces of at most this, so a lying length on a
// source of unknown size fails at the end of the data instead of allocating first.
constexpr std::size_t kReadPiece = std::size_t{16} << 20;

std::span<const std::byte> as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

void put_u16(std::string& out, uint16_t v) {
  char b[2];
  std::memcpy(b, &v, 2);
  out.append(b, 2);
}
void put_u32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}
void put_u64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}
template <class T>
T load_le(const char* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string hex(uint64_t v) { return fmt::format("{:#018x}", v); }

// Computes the header bytes (checksum included) of a record.
std::string build_header(RecordKind kind, std::string_view name, std::string_view type_name, uint64_t payload_size,
                         const RecordHeader* tensor) {
  if (name.size() > kMaxHeaderSize / 2)
    throw InvalidInput(fmt::format("Cannot serialize blob \"{}...\": the name is {} bytes long (limit {})",
                                   name.substr(0, 64), name.size(), kMaxHeaderSize / 2));
  std::string h;
  h.reserve(64 + name.size() + type_name.size() + (tensor ? tensor->shape.size() * 8 : 0));
  h.append(kBlobRecordMagic);
  put_u16(h, kBlobFormatVersion);
  h.push_back(static_cast<char>(kind));
  h.push_back(0);  // flags
  put_u32(h, 0);   // header size, patched below
  put_u64(h, payload_size);
  put_u32(h, static_cast<uint32_t>(name.size()));
  h.append(name);
  put_u32(h, static_cast<uint32_t>(type_name.size()));
  h.append(type_name);
  if (tensor) {
    put_u32(h, static_cast<uint32_t>(static_cast<int32_t>(tensor->dtype)));
    put_u32(h, static_cast<uint32_t>(tensor->shape.size()));
    for (int64_t d : tensor->shape) put_u64(h, static_cast<uint64_t>(d));
    put_u64(h, tensor->chunk_index);
    put_u64(h, tensor->chunk_count);
    put_u64(h, tensor->elem_begin);
    put_u64(h, tensor->elem_count);
  }
  const uint32_t size = static_cast<uint32_t>(h.size() + kChecksumSize);
  if (size > kMaxHeaderSize)
    throw InvalidInput(fmt::format("Cannot serialize blob \"{}\": its record header would be {} bytes (limit {})",
                                   name.substr(0, 64), size, kMaxHeaderSize));
  std::memcpy(h.data() + 8, &size, 4);
  put_u64(h, xxh3_64(as_bytes(h)));
  return h;
}

uint64_t header_checksum_of(const std::string& header) {
  return load_le<uint64_t>(header.data() + header.size() - kChecksumSize);
}

// One chunk of a tensor: elements [begin, begin + count), `bytes` of payload.
struct ChunkPlan {
  uint64_t begin;
  uint64_t count;
  uint64_t bytes;
};

std::vector<ChunkPlan> plan_chunks(const Tensor& t, const SerializeOptions& opt) {
  const uint64_t numel = static_cast<uint64_t>(t.numel());
  std::vector<ChunkPlan> chunks;
  if (numel == 0) {
    chunks.push_back({0, 0, 0});
    return chunks;
  }
  if (opt.chunk_size < kNoChunking) throw InvalidInput(fmt::format("chunk_size must be >= -1, got {}", opt.chunk_size));
  const bool unchunked = opt.chunk_size == kNoChunking;
  const uint64_t per_chunk = unchunked                             ? numel
                             : opt.chunk_size == kDefaultChunkSize ? uint64_t{kDefaultTensorChunkElements}
                                                                   : static_cast<uint64_t>(opt.chunk_size);
  const uint64_t max_bytes =
      unchunked ? std::numeric_limits<uint64_t>::max() : std::max<uint64_t>(opt.max_chunk_bytes, 1);
  if (t.dtype() != DType::String) {
    const uint64_t item = dtype_size(t.dtype());
    const uint64_t n = std::max<uint64_t>(1, std::min(per_chunk, max_bytes / item));
    chunks.reserve(static_cast<std::size_t>((numel + n - 1) / n));
    for (uint64_t b = 0; b < numel; b += n) {
      const uint64_t c = std::min(n, numel - b);
      chunks.push_back({b, c, c * item});
    }
    return chunks;
  }
  auto strings = t.values<std::string>();
  uint64_t b = 0, c = 0, bytes = 0;
  for (uint64_t i = 0; i < numel; ++i) {
    const auto& s = strings[i];
    if (s.size() > std::numeric_limits<uint32_t>::max())
      throw InvalidInput(
          fmt::format("string element {} is {} bytes long; the format's limit is 4 GiB - 1", i, s.size()));
    if (c > 0 && (c == per_chunk || bytes >= max_bytes)) {
      chunks.push_back({b, c, bytes});
      b = i;
      c = 0;
      bytes = 0;
    }
    ++c;
    bytes += 4 + s.size();
  }
  chunks.push_back({b, c, bytes});
  return chunks;
}

RecordHeader tensor_header_fields(const Tensor& t, std::size_t index, std::size_t count, const ChunkPlan& c) {
  RecordHeader h;
  h.kind = RecordKind::TensorChunk;
  h.dtype = t.dtype();
  h.shape = t.shape();
  h.chunk_index = index;
  h.chunk_count = count;
  h.elem_begin = c.begin;
  h.elem_count = c.count;
  return h;
}

std::string key_of(std::string_view name, RecordKind kind, uint64_t chunk) {
  if (kind == RecordKind::TensorChunk) return fmt::format("{}{}{}", name, kChunkIdSeparator, chunk);
  return std::string(name);
}

// `buf` holds the bytes until the record ends: serialize_blob promises sinks that every span it
// writes stays valid until end_record() (see ByteSink).
void write_checksum(ByteSink& out, uint64_t sum, std::byte (&buf)[8]) {
  std::memcpy(buf, &sum, 8);
  out.write(buf);
}

// Payloads move in pieces this size: each piece is hashed right after it was copied, while it is
// still in cache, so checksumming costs no second trip through memory.
constexpr std::size_t kHashPiece = std::size_t{256} << 10;

// Writes body to out in pieces, returning its XXH3-64 with `seed` (same value as xxh3_64(body, seed)).
uint64_t write_hashed(ByteSink& out, std::span<const std::byte> body, uint64_t seed) {
  if (body.size() <= kHashPiece) {
    out.write(body);
    return xxh3_64(body, seed);
  }
  detail::Xxh3Stream state(seed);
  for (std::size_t pos = 0; pos < body.size(); pos += kHashPiece) {
    auto piece = body.subspan(pos, std::min(kHashPiece, body.size() - pos));
    out.write(piece);
    state.update(piece.data(), piece.size());
  }
  return state.digest();
}

// Reads exactly into.size() bytes; false if the source ends first (`got` says how many arrived).
bool read_full(ByteSource& in, std::span<std::byte> into, std::size_t& got) {
  got = 0;
  while (got < into.size()) {
    const std::size_t n = in.read(into.subspan(got));
    if (n == 0) return false;
    got += n;
  }
  return true;
}

// Reads exactly dst.size() bytes into dst in pieces, hashing each piece as it lands. False if the
// source ends first (`got` says how many arrived).
bool read_hashed(ByteSource& in, std::span<std::byte> dst, uint64_t seed, uint64_t& hash, std::size_t& got) {
  if (dst.size() <= kHashPiece) {
    // One piece: the one-shot hash, without a streaming state to set up.
    if (!read_full(in, dst, got)) return false;
    hash = xxh3_64(dst, seed);
    return true;
  }
  detail::Xxh3Stream state(seed);
  got = 0;
  while (got < dst.size()) {
    auto piece = dst.subspan(got, std::min(kHashPiece, dst.size() - got));
    std::size_t n = 0;
    while (n < piece.size()) {
      const std::size_t r = in.read(piece.subspan(n));
      if (r == 0) {
        got += n;
        return false;
      }
      n += r;
    }
    state.update(piece.data(), piece.size());
    got += piece.size();
  }
  hash = state.digest();
  return true;
}

void serialize_tensor(std::string_view name, const Tensor& t, ByteSink& out, const SerializeOptions& opt) {
  const std::vector<ChunkPlan> chunks = plan_chunks(t, opt);
  std::string payload;  // strings only
  std::byte sum[8];
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const ChunkPlan& c = chunks[i];
    const RecordHeader fields = tensor_header_fields(t, i, chunks.size(), c);
    const std::string header = build_header(RecordKind::TensorChunk, name, kTensorTypeName, c.bytes, &fields);
    const uint64_t seed = header_checksum_of(header);
    out.begin_record(key_of(name, RecordKind::TensorChunk, i), header.size() + c.bytes + kChecksumSize);
    out.write(as_bytes(header));
    std::span<const std::byte> body;
    if (t.dtype() == DType::String) {
      payload.clear();
      payload.reserve(c.bytes);
      auto strings = t.values<std::string>();
      for (uint64_t e = c.begin; e < c.begin + c.count; ++e) {
        put_u32(payload, static_cast<uint32_t>(strings[e].size()));
        payload.append(strings[e]);
      }
      body = as_bytes(payload);
    } else if (c.bytes > 0) {
      // Straight from tensor storage: no copy before the sink.
      body = {t.raw_data() + c.begin * dtype_size(t.dtype()), c.bytes};
    }
    write_checksum(out, write_hashed(out, body, seed), sum);
    out.end_record();
  }
}

[[noreturn]] void throw_no_serializer(std::string_view name, const Blob& blob) {
  if (blob.is_type<BlobsQueuePtr>())
    throw InvalidInput(
        fmt::format("No known serializer for BlobsQueue (blob \"{}\"): queues are not serializable, as in Caffe2; "
                    "leave queue blobs out of the blobs to save",
                    name));
  throw InvalidInput(fmt::format(
      "No known serializer for {} (blob \"{}\"); register one with BlobSerializerRegistry::register_serializer",
      blob.type_name(), name));
}

std::shared_ptr<const BlobSerializerRegistry::Entry> entry_for(std::string_view name, const Blob& blob) {
  if (!blob.is_initialized())
    throw InvalidInput(fmt::format("Cannot serialize blob \"{}\": it is uninitialized (holds nothing)", name));
  auto entry = BlobSerializerRegistry::global().find(blob.type());
  if (!entry) throw_no_serializer(name, blob);
  return entry;
}

}  // namespace

// ---------------------------------------------------------------- sinks, sources, checksum

void StringSink::begin_record(std::string_view, uint64_t size) {
  // Grow geometrically ourselves: reserve(exact) on every record would copy the string each time.
  const std::size_t need = data_.size() + static_cast<std::size_t>(size);
  if (need > data_.capacity()) data_.reserve(std::max(need, data_.capacity() * 2));
}

std::size_t MemorySource::read(std::span<std::byte> into) {
  const std::size_t n = std::min(into.size(), data_.size() - pos_);
  if (n > 0) std::memcpy(into.data(), data_.data() + pos_, n);
  pos_ += n;
  return n;
}

uint64_t xxh3_64(std::span<const std::byte> bytes, uint64_t seed) noexcept {
  return detail::xxh3_64_fast(bytes.data(), bytes.size(), seed);
}

std::string RecordHeader::key() const { return key_of(name, kind, chunk_index); }

std::string RecordHeader::describe() const {
  if (kind == RecordKind::TensorChunk) return fmt::format("blob \"{}\" chunk {} of {}", name, chunk_index, chunk_count);
  return fmt::format("blob \"{}\" ({})", name, type_name);
}

std::string_view blob_name_from_key(std::string_view key) noexcept {
  const auto pos = key.find(kChunkIdSeparator);
  return pos == std::string_view::npos ? key : key.substr(0, pos);
}

// ---------------------------------------------------------------- writing

bool is_serializable(const Blob& blob) {
  if (!blob.is_initialized()) return false;
  if (const Tensor* t = blob.tensor_or_null()) return t->defined() || t->numel() == 0;
  return BlobSerializerRegistry::global().find(blob.type()) != nullptr;
}

void serialize_blob(std::string_view name, const Blob& blob, ByteSink& out, const SerializeOptions& options) {
  if (const Tensor* t = blob.tensor_or_null()) {
    if (!t->defined() && t->numel() != 0)
      throw InvalidInput(fmt::format("Cannot serialize blob \"{}\": tensor has no dtype", name));
    serialize_tensor(name, *t, out, options);
    return;
  }
  auto entry = entry_for(name, blob);
  std::string payload;
  entry->serialize(blob, payload);
  const std::string header = build_header(RecordKind::Object, name, entry->type_name, payload.size(), nullptr);
  out.begin_record(key_of(name, RecordKind::Object, 0), header.size() + payload.size() + kChecksumSize);
  out.write(as_bytes(header));
  out.write(as_bytes(payload));
  std::byte sum[8];
  write_checksum(out, xxh3_64(as_bytes(payload), header_checksum_of(header)), sum);
  out.end_record();
}

uint64_t serialized_size(std::string_view name, const Blob& blob, const SerializeOptions& options) {
  if (const Tensor* t = blob.tensor_or_null()) {
    const std::vector<ChunkPlan> chunks = plan_chunks(*t, options);
    // Every chunk header has the same size: only the numbers in it differ.
    const RecordHeader fields = tensor_header_fields(*t, 0, chunks.size(), chunks[0]);
    const uint64_t header = build_header(RecordKind::TensorChunk, name, kTensorTypeName, 0, &fields).size();
    uint64_t total = 0;
    for (const auto& c : chunks) total += header + c.bytes + kChecksumSize;
    return total;
  }
  auto entry = entry_for(name, blob);
  std::string payload;
  entry->serialize(blob, payload);
  return build_header(RecordKind::Object, name, entry->type_name, 0, nullptr).size() + payload.size() + kChecksumSize;
}

std::string serialize_blob_to_string(std::string_view name, const Blob& blob, const SerializeOptions& options) {
  StringSink sink(blob.tensor_or_null() ? static_cast<std::size_t>(serialized_size(name, blob, options)) : 0);
  serialize_blob(name, blob, sink, options);
  return sink.take();
}

// ---------------------------------------------------------------- reading headers

RecordHeader read_record_header(ByteSource& in, std::string_view where) {
  auto corrupt = [&](const std::string& what) -> CorruptData {
    return CorruptData(fmt::format("{}: {}", where, what));
  };
  // Typical headers (a name, a type name, a few dimensions) fit on the stack: no allocation per record.
  char small[512];
  std::unique_ptr<char[]> large;
  char* buf = small;
  std::size_t got = 0;
  if (!read_full(in, {reinterpret_cast<std::byte*>(buf), kFixedHeaderSize}, got))
    throw corrupt(got == 0 ? "no record: the data ends here (truncated?)"
                           : fmt::format("truncated: the data ends {} bytes into a record header", got));
  if (std::string_view(buf, 4) != kBlobRecordMagic)
    throw corrupt(fmt::format("bad magic {:02x} {:02x} {:02x} {:02x} (expected \"MKBR\"): not a moka blob record",
                              static_cast<uint8_t>(buf[0]), static_cast<uint8_t>(buf[1]), static_cast<uint8_t>(buf[2]),
                              static_cast<uint8_t>(buf[3])));
  const uint16_t version = load_le<uint16_t>(buf + 4);
  if (version == 0 || version > kBlobFormatVersion)
    throw corrupt(
        fmt::format("unsupported format version {} (this build reads versions 1 to {})", version, kBlobFormatVersion));
  RecordHeader h;
  const uint8_t kind = static_cast<uint8_t>(buf[6]);
  const uint8_t flags = static_cast<uint8_t>(buf[7]);
  h.header_size = load_le<uint32_t>(buf + 8);
  h.payload_size = load_le<uint64_t>(buf + 12);
  if (h.header_size < kFixedHeaderSize + 8 + kChecksumSize || h.header_size > kMaxHeaderSize)
    throw corrupt(fmt::format("header size {} out of range [{}, {}]", h.header_size,
                              kFixedHeaderSize + 8 + kChecksumSize, kMaxHeaderSize));
  if (auto left = in.remaining(); left && *left < h.header_size - kFixedHeaderSize)
    throw corrupt(fmt::format("truncated: the header needs {} more bytes, the data has {}",
                              h.header_size - kFixedHeaderSize, *left));
  if (h.header_size > sizeof(small)) {
    large = std::make_unique<char[]>(h.header_size);
    std::memcpy(large.get(), small, kFixedHeaderSize);
    buf = large.get();
  }
  if (!read_full(in, {reinterpret_cast<std::byte*>(buf) + kFixedHeaderSize, h.header_size - kFixedHeaderSize}, got))
    throw corrupt(fmt::format("truncated: the data ends {} bytes into a {}-byte record header", kFixedHeaderSize + got,
                              h.header_size));
  h.header_checksum = load_le<uint64_t>(buf + h.header_size - kChecksumSize);
  const uint64_t computed = xxh3_64(as_bytes(std::string_view(buf, h.header_size - kChecksumSize)));
  if (computed != h.header_checksum)
    throw corrupt(fmt::format("header checksum mismatch (stored {}, computed {}): the record header is corrupt",
                              hex(h.header_checksum), hex(computed)));
  // The header is now known intact: anything odd below is a writer bug or a crafted record.
  if (kind != static_cast<uint8_t>(RecordKind::TensorChunk) && kind != static_cast<uint8_t>(RecordKind::Object))
    throw corrupt(fmt::format("unknown record kind {}", kind));
  if (flags != 0) throw corrupt(fmt::format("unsupported flags {:#04x} (version 1 defines none)", flags));
  h.kind = static_cast<RecordKind>(kind);

  const std::string_view body(buf + kFixedHeaderSize, h.header_size - kFixedHeaderSize - kChecksumSize);
  std::size_t pos = 0;
  auto need = [&](std::size_t n) {
    if (body.size() - pos < n) throw corrupt("header fields run past the header size");
  };
  auto u32 = [&] {
    need(4);
    auto v = load_le<uint32_t>(body.data() + pos);
    pos += 4;
    return v;
  };
  auto u64 = [&] {
    need(8);
    auto v = load_le<uint64_t>(body.data() + pos);
    pos += 8;
    return v;
  };
  auto text = [&] {
    const uint32_t n = u32();
    need(n);
    std::string s(body.substr(pos, n));
    pos += n;
    return s;
  };
  h.name = text();
  h.type_name = text();
  // Formatted only for a message (a load of many small blobs would otherwise format once per record).
  const auto where_blob = [&] { return fmt::format("{} (blob \"{}\")", where, h.name); };
  if (h.kind == RecordKind::TensorChunk) {
    if (h.type_name != kTensorTypeName)
      throw CorruptData(fmt::format("{}: tensor chunk with type name \"{}\"", where_blob(), h.type_name));
    const int32_t code = static_cast<int32_t>(u32());
    const auto dtype = dtype_from_code(code);
    if (!dtype && code != 0)
      throw CorruptData(fmt::format("{}: unknown dtype code {}", where_blob(), describe_dtype_code(code)));
    h.dtype = dtype.value_or(DType::Undefined);
    const uint32_t ndim = u32();
    need(std::size_t{ndim} * 8);
    h.shape.resize(ndim);
    for (auto& d : h.shape) d = static_cast<int64_t>(u64());
    h.chunk_index = u64();
    h.chunk_count = u64();
    h.elem_begin = u64();
    h.elem_count = u64();
  }
  if (pos != body.size())
    throw CorruptData(fmt::format("{}: {} unexpected bytes at the end of the header", where_blob(), body.size() - pos));
  return h;
}

// ---------------------------------------------------------------- reassembly

void BlobAssembler::fail(const std::string& message) const { throw CorruptData(message); }

void BlobAssembler::add(ByteSource& in) {
  if (failed_) throw InvalidInput("BlobAssembler: an earlier record failed; start over with a new assembler");
  RecordHeader h;
  try {
    h = read_record_header(in, "record header");
  } catch (...) {
    failed_ = true;
    dest_.reset();
    throw;
  }
  add(h, in);
}

void BlobAssembler::add(const RecordHeader& h, ByteSource& in) {
  if (failed_) throw InvalidInput("BlobAssembler: an earlier record failed; start over with a new assembler");
  try {
    add_unchecked(h, in);
  } catch (...) {
    failed_ = true;
    dest_.reset();
    throw;
  }
}

void BlobAssembler::adopt(const RecordHeader& h, Blob& whole) {
  if (failed_ || complete_ || !name_.empty() || h.chunk_count != 1)
    throw InvalidInput(fmt::format("BlobAssembler: cannot adopt {} as the whole of blob \"{}\"", h.describe(), name_));
  dest_.reset();
  dest_.swap(whole);
  name_ = h.name;
  if (h.kind == RecordKind::TensorChunk) {
    first_ = h;
    elems_seen_ = h.elem_count;
  }
  complete_ = true;
}

void BlobAssembler::add_unchecked(const RecordHeader& h, ByteSource& in) {
  if (complete_) fail(fmt::format("{}: the blob is already complete; this record is extra", h.describe()));
  if (!name_.empty() && h.name != name_) fail(fmt::format("{}: expected a record of blob \"{}\"", h.describe(), name_));
  name_ = h.name;
  if (h.kind == RecordKind::TensorChunk)
    add_tensor_chunk(h, in);
  else
    add_object(h, in);
}

namespace {

// Reads `size` payload bytes into a string, growing it as bytes arrive. `what()` names the record
// (called only to build an error message).
template <class What>
std::string read_payload(ByteSource& in, uint64_t size, const What& what) {
  if (auto left = in.remaining(); left && *left < size)
    throw CorruptData(fmt::format("{}: truncated: the payload needs {} bytes, the data has {}", what(), size, *left));
  std::string out;
  while (out.size() < size) {
    const std::size_t old = out.size();
    const std::size_t piece = static_cast<std::size_t>(std::min<uint64_t>(size - old, kReadPiece));
    out.resize(old + piece);
    std::size_t got = 0;
    if (!read_full(in, {reinterpret_cast<std::byte*>(out.data()) + old, piece}, got))
      throw CorruptData(
          fmt::format("{}: truncated: the data ends {} bytes into a {}-byte payload", what(), old + got, size));
  }
  return out;
}

template <class What>
void verify_payload(ByteSource& in, uint64_t computed, const What& what) {
  std::byte b[8];
  std::size_t got = 0;
  if (!read_full(in, b, got))
    throw CorruptData(fmt::format("{}: truncated: the data ends {} bytes into the payload checksum", what(), got));
  const uint64_t stored = load_le<uint64_t>(reinterpret_cast<const char*>(b));
  if (stored != computed)
    throw CorruptData(fmt::format("{}: payload checksum mismatch (stored {}, computed {}): the data is corrupt", what(),
                                  hex(stored), hex(computed)));
}

}  // namespace

void BlobAssembler::add_tensor_chunk(const RecordHeader& h, ByteSource& in) {
  // Formatted only for an error message: a load of many small tensors would otherwise build one
  // string per record.
  const auto what = [&h] { return h.describe(); };
  if (first_) {
    if (h.dtype != first_->dtype || h.shape != first_->shape || h.chunk_count != first_->chunk_count)
      fail(fmt::format("{}: dtype {}, shape {}, {} chunks disagree with an earlier chunk ({}, {}, {} chunks)", what(),
                       dtype_name(h.dtype), shape_string(h.shape), h.chunk_count, dtype_name(first_->dtype),
                       shape_string(first_->shape), first_->chunk_count));
  } else if (dest_.is_initialized() && !dest_.is_type<Tensor>()) {
    dest_.reset();  // loading replaces whatever was there (Caffe2 resets the blob first)
  }
  // Shape and ranges.
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d < 0) fail(fmt::format("{}: negative dimension in shape {}", what(), shape_string(h.shape)));
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      fail(fmt::format("{}: shape {} overflows", what(), shape_string(h.shape)));
    numel *= static_cast<uint64_t>(d);
  }
  if (h.dtype == DType::Undefined && numel != 0)
    fail(fmt::format("{}: a tensor without dtype must be empty, shape is {}", what(), shape_string(h.shape)));
  const uint64_t item = h.dtype == DType::String ? sizeof(std::string) : dtype_size(h.dtype);
  // Memory: sizeof(std::string) per string. Stored: strings take at least their 4-byte length.
  const uint64_t stored_item = h.dtype == DType::String ? 4 : item;
  if (item != 0 && numel > options_.max_tensor_bytes / item)
    fail(
        fmt::format("{}: shape {} of {} needs more than {} bytes; refusing (a corrupt size, or raise "
                    "DeserializeOptions::max_tensor_bytes)",
                    what(), shape_string(h.shape), dtype_name(h.dtype), options_.max_tensor_bytes));
  if (stored_item != 0 && stream_limit_ && numel > *stream_limit_ / stored_item)
    fail(fmt::format("{}: shape {} of {} needs more bytes than the {} the data holds (truncated or corrupt)", what(),
                     shape_string(h.shape), dtype_name(h.dtype), *stream_limit_));
  if (h.chunk_count == 0 || h.chunk_count > std::max<uint64_t>(numel, 1) || h.chunk_index >= h.chunk_count)
    fail(fmt::format("{}: impossible chunk numbering for {} elements", what(), numel));
  if (h.elem_begin > numel || h.elem_count > numel - h.elem_begin || (numel > 0 && h.elem_count == 0))
    fail(
        fmt::format("{}: element range [{}, +{}) does not fit {} elements", what(), h.elem_begin, h.elem_count, numel));
  if (h.dtype != DType::String && h.payload_size != h.elem_count * item)
    fail(fmt::format("{}: payload is {} bytes, {} elements of {} need {}", what(), h.payload_size, h.elem_count,
                     dtype_name(h.dtype), h.elem_count * item));
  if (h.dtype == DType::String && (h.elem_count > h.payload_size / 4))
    fail(fmt::format("{}: payload of {} bytes cannot hold {} strings", what(), h.payload_size, h.elem_count));
  // A blob of one chunk (most blobs) needs no set: a second record of it finds the blob complete.
  if (h.chunk_count > 1 && !seen_chunks_.insert(h.chunk_index).second)
    fail(fmt::format("{}: chunk appears twice", what()));

  if (!first_) {
    first_ = h;
    Tensor& t = dest_.get_mutable<Tensor>();
    if (h.dtype == DType::Undefined)
      t = Tensor();
    else if (h.dtype == DType::String)
      t.resize(h.dtype, h.shape);
    else
      t.resize_for_overwrite(h.dtype, h.shape);  // every element is written by some chunk (checked below)
  }
  Tensor& t = dest_.get_checked_mutable<Tensor>();
  if (h.dtype == DType::String) {
    const std::string payload = read_payload(in, h.payload_size, what);
    verify_payload(in, xxh3_64(as_bytes(payload), h.header_checksum), what);
    auto strings = t.values<std::string>();
    std::size_t pos = 0;
    for (uint64_t e = h.elem_begin; e < h.elem_begin + h.elem_count; ++e) {
      if (payload.size() - pos < 4) fail(fmt::format("{}: string {} runs past the payload", what(), e));
      const uint32_t n = load_le<uint32_t>(payload.data() + pos);
      pos += 4;
      if (payload.size() - pos < n) fail(fmt::format("{}: string {} runs past the payload", what(), e));
      strings[e].assign(payload.data() + pos, n);
      pos += n;
    }
    if (pos != payload.size())
      fail(fmt::format("{}: {} bytes left over after the strings", what(), payload.size() - pos));
  } else if (h.payload_size > 0) {
    // Straight into the tensor's storage, hashed piece by piece while the bytes are still in cache.
    if (auto left = in.remaining(); left && *left < h.payload_size)
      fail(fmt::format("{}: truncated: the payload needs {} bytes, the data has {}", what(), h.payload_size, *left));
    std::span<std::byte> dst(t.raw_mutable_data() + h.elem_begin * item, h.payload_size);
    std::size_t got = 0;
    uint64_t hash = 0;
    if (!read_hashed(in, dst, h.header_checksum, hash, got))
      fail(fmt::format("{}: truncated: the data ends {} bytes into a {}-byte payload", what(), got, h.payload_size));
    verify_payload(in, hash, what);
    if (h.dtype == DType::Bool) {
      // A bool byte other than 0 or 1 would be undefined behaviour to read.
      for (std::size_t i = 0; i < dst.size(); ++i)
        if (static_cast<uint8_t>(dst[i]) > 1)
          fail(fmt::format("{}: bool element {} has byte value {}", what(), h.elem_begin + i,
                           static_cast<unsigned>(dst[i])));
    }
  } else {
    verify_payload(in, xxh3_64({}, h.header_checksum), what);
  }
  elems_seen_ += h.elem_count;
  if (h.chunk_count == 1) {
    // The only chunk must cover every element (the check below, without the bookkeeping).
    if (h.elem_begin != 0)
      fail(fmt::format("blob \"{}\": chunk element ranges overlap or leave a gap at element 0", h.name));
    if (h.elem_count != numel)
      fail(fmt::format("blob \"{}\": chunks cover {} of {} elements", h.name, h.elem_count, numel));
    complete_ = true;
    return;
  }
  ranges_.emplace_back(h.elem_begin, h.elem_count);
  if (seen_chunks_.size() == h.chunk_count) {
    // Every index arrived: the ranges must tile [0, numel) exactly, without overlap or gap.
    std::sort(ranges_.begin(), ranges_.end());
    uint64_t next = 0;
    for (const auto& [b, c] : ranges_) {
      if (b != next)
        fail(fmt::format("blob \"{}\": chunk element ranges overlap or leave a gap at element {}", h.name, next));
      next = b + c;
    }
    if (next != numel) fail(fmt::format("blob \"{}\": chunks cover {} of {} elements", h.name, next, numel));
    complete_ = true;
  }
}

void BlobAssembler::add_object(const RecordHeader& h, ByteSource& in) {
  const std::string what = h.describe();
  if (first_) fail(fmt::format("{}: a non-tensor record among tensor chunks", what));
  auto entry = BlobSerializerRegistry::global().find(h.type_name);
  if (!entry)
    fail(fmt::format("{}: unknown type name \"{}\": no deserializer is registered for it", what, h.type_name));
  if (h.payload_size > options_.max_object_bytes)
    fail(fmt::format("{}: payload of {} bytes exceeds DeserializeOptions::max_object_bytes ({})", what, h.payload_size,
                     options_.max_object_bytes));
  const std::string payload = read_payload(in, h.payload_size, [&what] { return what; });
  verify_payload(in, xxh3_64(as_bytes(payload), h.header_checksum), [&what] { return what; });
  dest_.reset();
  try {
    entry->deserialize(payload, dest_);
  } catch (CorruptData& e) {
    e.add_context(what);
    throw;
  } catch (const Error& e) {
    // The checksum held, so the bytes are what was written, yet the type's reader refuses them.
    throw CorruptData(fmt::format("{}: the {} deserializer rejected the payload: {}", what, h.type_name, e.what()));
  }
  complete_ = true;
}

void BlobAssembler::finish() {
  if (complete_ && !failed_) return;
  failed_ = true;
  dest_.reset();
  if (name_.empty()) throw CorruptData("no record of the blob was found");
  std::string missing;
  if (first_) {
    int shown = 0;
    for (uint64_t i = 0; i < first_->chunk_count && shown < 5; ++i)
      if (!seen_chunks_.count(i)) missing += fmt::format("{}{}", shown++ ? ", " : "", i);
    throw CorruptData(fmt::format("blob \"{}\": incomplete: {} of {} chunks present; missing chunk(s) {}{}", name_,
                                  seen_chunks_.size(), first_->chunk_count, missing,
                                  first_->chunk_count - seen_chunks_.size() > 5 ? ", ..." : ""));
  }
  throw CorruptData(fmt::format("blob \"{}\": incomplete", name_));
}

namespace {

// Reads records until the blob is complete. `mem` (when the source is one) gives record offsets
// for messages.
std::string read_one_blob(ByteSource& in, Blob& blob, const DeserializeOptions& options, const MemorySource* mem) {
  BlobAssembler a(blob, options);
  // All chunks follow in this source, so a tensor cannot need more bytes than it has left.
  if (auto left = in.remaining()) a.limit_tensor_bytes(*left);
  for (uint64_t ordinal = 0; !a.complete(); ++ordinal) {
    const std::size_t start = mem ? mem->position() : 0;
    try {
      a.add(in);
    } catch (Error& e) {
      std::string where = a.name().empty() ? fmt::format("record {}", ordinal)
                                           : fmt::format("record {} of blob \"{}\"", ordinal, a.name());
      if (mem) where += fmt::format(" (starting at byte {})", start);
      e.add_context(where);
      throw;
    }
  }
  return a.name();
}

}  // namespace

std::string deserialize_blob(ByteSource& in, Blob& blob, const DeserializeOptions& options) {
  return read_one_blob(in, blob, options, dynamic_cast<const MemorySource*>(&in));
}

std::string deserialize_blob(std::string_view bytes, Blob& blob, const DeserializeOptions& options) {
  MemorySource src(bytes);
  std::string name = read_one_blob(src, blob, options, &src);
  if (src.position() != bytes.size()) {
    blob.reset();
    throw CorruptData(fmt::format("blob \"{}\": {} unexpected bytes after its last record (at byte {})", name,
                                  bytes.size() - src.position(), src.position()));
  }
  return name;
}

// ---------------------------------------------------------------- payload helpers

void PayloadWriter::u32(uint32_t v) { put_u32(out_, v); }
void PayloadWriter::u64(uint64_t v) { put_u64(out_, v); }
void PayloadWriter::f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
void PayloadWriter::str(std::string_view s) {
  if (s.size() > std::numeric_limits<uint32_t>::max())
    throw InvalidInput(fmt::format("string of {} bytes is too long to serialize (limit 4 GiB - 1)", s.size()));
  u32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

std::string_view PayloadReader::take(std::size_t n) {
  if (in_.size() - pos_ < n)
    fail(fmt::format("payload ends early (needs {} more bytes at offset {}, has {})", n, pos_, in_.size() - pos_));
  auto s = in_.substr(pos_, n);
  pos_ += n;
  return s;
}
uint32_t PayloadReader::u32() { return load_le<uint32_t>(take(4).data()); }
uint64_t PayloadReader::u64() { return load_le<uint64_t>(take(8).data()); }
double PayloadReader::f64() { return std::bit_cast<double>(u64()); }
std::string_view PayloadReader::str() { return take(u32()); }
void PayloadReader::expect_end() const {
  if (pos_ != in_.size()) fail(fmt::format("{} unexpected bytes at the end of the payload", in_.size() - pos_));
}
void PayloadReader::fail(std::string_view message) const { throw CorruptData(fmt::format("{}: {}", what_, message)); }

// ---------------------------------------------------------------- registry

void BlobSerializerRegistry::register_builtin(std::string type_name, const TypeInfo& type, SerializeFn serialize,
                                              DeserializeFn deserialize) {
  auto e = std::make_shared<Entry>(Entry{std::move(type_name), &type, std::move(serialize), std::move(deserialize)});
  std::lock_guard lk(mu_);
  by_type_[&type] = e;
  by_name_[e->type_name] = e;
}

void BlobSerializerRegistry::register_type(std::string type_name, const TypeInfo& type, SerializeFn serialize,
                                           DeserializeFn deserialize) {
  if (type_name.empty()) throw InvalidInput("register_serializer: the type name must not be empty");
  if (type_name.rfind("moka.", 0) == 0)
    throw InvalidInput(
        fmt::format("register_serializer: type names starting with \"moka.\" are reserved (got \"{}\")", type_name));
  if (&type == &type_info_of<Tensor>()) throw InvalidInput("register_serializer: Tensor has a built-in serializer");
  if (!serialize || !deserialize)
    throw InvalidInput(fmt::format("register_serializer(\"{}\"): both functions are required", type_name));
  auto e = std::make_shared<Entry>(Entry{std::move(type_name), &type, std::move(serialize), std::move(deserialize)});
  std::lock_guard lk(mu_);
  if (by_name_.count(e->type_name))
    throw InvalidInput(fmt::format("register_serializer: type name \"{}\" is already registered", e->type_name));
  if (auto it = by_type_.find(&type); it != by_type_.end())
    throw InvalidInput(fmt::format("register_serializer: type {} already has a serializer (\"{}\")", type.name(),
                                   it->second->type_name));
  by_type_[&type] = e;
  by_name_[e->type_name] = e;
}

bool BlobSerializerRegistry::unregister(std::string_view type_name) {
  std::lock_guard lk(mu_);
  auto it = by_name_.find(std::string(type_name));
  if (it == by_name_.end()) return false;
  by_type_.erase(it->second->type);
  by_name_.erase(it);
  return true;
}

std::shared_ptr<const BlobSerializerRegistry::Entry> BlobSerializerRegistry::find(const TypeInfo* type) const {
  std::lock_guard lk(mu_);
  auto it = by_type_.find(type);
  return it == by_type_.end() ? nullptr : it->second;
}

std::shared_ptr<const BlobSerializerRegistry::Entry> BlobSerializerRegistry::find(std::string_view type_name) const {
  std::lock_guard lk(mu_);
  auto it = by_name_.find(std::string(type_name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> BlobSerializerRegistry::type_names() const {
  std::vector<std::string> names;
  {
    std::lock_guard lk(mu_);
    for (const auto& [n, e] : by_name_) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

BlobSerializerRegistry& BlobSerializerRegistry::global() {
  static BlobSerializerRegistry* registry = [] {
    auto* reg = new BlobSerializerRegistry();
    // Counter: its current value as int64 (Caffe2 stores the same number as an INT64 tensor [1]; docs/operators.md §2).
    reg->register_builtin(
        std::string(kCounterTypeName), type_info_of<Counter>(),
        [](const Blob& b, std::string& out) { PayloadWriter(out).i64(b.get<Counter>().retrieve()); },
        [](std::string_view in, Blob& b) {
          PayloadReader r(in, "Counter payload");
          const int64_t v = r.i64();
          r.expect_end();
          b.emplace<Counter>(v);
        });
    // TreeCursor: field names and offsets, enough to rebuild the cursor at the same position.
    reg->register_builtin(
        std::string(kTreeCursorTypeName), type_info_of<TreeCursor>(),
        [](const Blob& b, std::string& out) {
          const auto& c = b.get<TreeCursor>();
          PayloadWriter w(out);
          w.u32(static_cast<uint32_t>(c.field_names().size()));
          for (const auto& f : c.field_names()) w.str(f);
          const std::vector<int64_t> offsets = c.offsets();
          w.u32(static_cast<uint32_t>(offsets.size()));
          for (int64_t o : offsets) w.i64(o);
        },
        [](std::string_view in, Blob& b) {
          PayloadReader r(in, "TreeCursor payload");
          const uint32_t nfields = r.u32();
          if (nfields > r.remaining() / 4) r.fail(fmt::format("{} field names cannot fit", nfields));
          std::vector<std::string> fields;
          fields.reserve(nfields);
          for (uint32_t i = 0; i < nfields; ++i) fields.emplace_back(r.str());
          const uint32_t noffsets = r.u32();
          if (noffsets > r.remaining() / 8) r.fail(fmt::format("{} offsets cannot fit", noffsets));
          std::vector<int64_t> offsets(noffsets);
          for (auto& o : offsets) o = r.i64();
          r.expect_end();
          auto cursor = std::make_unique<TreeCursor>(std::move(fields));
          cursor->set_offsets(std::move(offsets));
          b.reset(std::move(cursor));
        });
    // TextFileReaderInstance: what it reads and where it stands. Loading reopens the file and checks that the
    // position is the start of a line of it (docs/pipelines.md §10).
    reg->register_builtin(
        std::string(kTextFileReaderTypeName), type_info_of<TextFileReaderInstance>(),
        [](const Blob& b, std::string& out) {
          const auto& reader = b.get<TextFileReaderInstance>();
          const TextFileReaderSpec& spec = reader.spec();
          const TextFileReaderPosition pos = reader.position();
          PayloadWriter w(out);
          w.str(spec.filename);
          w.u32(static_cast<uint32_t>(spec.field_types.size()));
          for (DType t : spec.field_types) w.u32(static_cast<uint32_t>(t));
          w.u32(static_cast<uint32_t>(spec.field_names.size()));
          for (const auto& n : spec.field_names) w.str(n);
          w.i64(spec.num_passes);
          w.u32(static_cast<uint8_t>(spec.delimiter));
          w.i64(pos.pass);
          w.i64(pos.offset);
          w.i64(pos.line);
        },
        [](std::string_view in, Blob& b) {
          PayloadReader r(in, "TextFileReaderInstance payload");
          TextFileReaderSpec spec;
          spec.filename = std::string(r.str());
          const uint32_t ntypes = r.u32();
          if (ntypes > r.remaining() / 4) r.fail(fmt::format("{} field types cannot fit", ntypes));
          for (uint32_t i = 0; i < ntypes; ++i) {
            const uint32_t code = r.u32();
            const std::optional<DType> t = dtype_from_code(code);
            if (!t) r.fail(fmt::format("field type {} is {}", i, describe_dtype_code(code)));
            spec.field_types.push_back(*t);
          }
          const uint32_t nnames = r.u32();
          if (nnames > r.remaining() / 4) r.fail(fmt::format("{} field names cannot fit", nnames));
          for (uint32_t i = 0; i < nnames; ++i) spec.field_names.emplace_back(r.str());
          spec.num_passes = r.i64();
          const uint32_t delimiter = r.u32();
          if (delimiter > 255) r.fail(fmt::format("delimiter code {} is not a byte", delimiter));
          spec.delimiter = static_cast<char>(static_cast<uint8_t>(delimiter));
          TextFileReaderPosition pos;
          pos.pass = r.i64();
          pos.offset = r.i64();
          pos.line = r.i64();
          r.expect_end();
          b.reset(std::make_unique<TextFileReaderInstance>(std::move(spec), pos));
        });
    return reg;
  }();
  return *registry;
}

}  // namespace moka
