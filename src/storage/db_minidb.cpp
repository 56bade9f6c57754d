// minidb: moka's single-file DB. Records carry XXH3-64 checksums, a key-sorted index and a trailer at
// the end of the file, and a commit publishes atomically (tmp file, fsync, rename, directory fsync). See
// docs/db-backends.md. Readers map the file and hand out views into the mapping (pread into a buffer where mapping
// fails).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/storage/db.h"
#include "storage/write_behind.h"
#include "storage/xxh3_fast.h"

// Header-only use of xxHash for the small hashes (headers, index, chain); record payloads go through
// io/xxh3_fast.h, which uses the widest vector unit the CPU has.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace moka::detail {
namespace {

constexpr char kFileMagic[8] = {'M', 'O', 'K', 'A', 'M', 'I', 'N', 'I'};
constexpr char kTrailerMagic[8] = {'M', 'I', 'N', 'I', 'E', 'N', 'D', '\n'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kRecordMagic = 0x3152444d;  // "MDR1" little-endian
constexpr size_t kHeaderSize = 32;
constexpr size_t kRecordHeaderSize = 32;
constexpr size_t kTrailerSize = 64;
constexpr size_t kIndexEntryFixed = 20;       // u64 offset, u64 value_len, u32 key_len
constexpr size_t kWriteBufferSize = 4 << 20;  // sequential writes in 4 MiB pieces
constexpr size_t kWritesInFlight = 2;         // full buffers the writer thread may hold at once
constexpr size_t kCopyChunk = 8 << 20;

// All integers are little-endian on disk whatever the host is.
void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string errno_text(int err) { return std::strerror(err); }

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw CorruptData(fmt::format("minidb file '{}' is corrupt or truncated: {}", path, what));
}

// Reads exactly n bytes at off; a short read means the file shrank under us (truncated).
void pread_all(int fd, char* buf, size_t n, uint64_t off, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(off));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("minidb file '{}': read at offset {} failed: {}", path, off, errno_text(errno)));
    }
    if (got == 0) corrupt(path, fmt::format("unexpected end of file at offset {}", off));
    buf += got;
    n -= static_cast<size_t>(got);
    off += static_cast<uint64_t>(got);
  }
}

// Reads exactly iov[i].iov_len bytes into each iov[i] from off, with as few preadv() calls as the
// kernel allows (updates iov as bytes arrive); a short read means the file shrank (truncated).
void preadv_all(int fd, iovec* iov, int n, uint64_t off, const std::string& path) {
  while (n > 0 && iov->iov_len == 0) ++iov, --n;
  while (n > 0) {
    const ssize_t got = ::preadv(fd, iov, n, static_cast<off_t>(off));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("minidb file '{}': read at offset {} failed: {}", path, off, errno_text(errno)));
    }
    if (got == 0) corrupt(path, fmt::format("unexpected end of file at offset {}", off));
    off += static_cast<uint64_t>(got);
    size_t done = static_cast<size_t>(got);
    while (n > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      ++iov, --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
}

void write_all(int fd, const char* buf, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t put = ::write(fd, buf, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("minidb file '{}': write failed: {}", path, errno_text(errno)));
    }
    buf += put;
    n -= static_cast<size_t>(put);
  }
}

uint64_t hash_header(const char* p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

// A read-only shared mapping of a whole file; unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (data_) ::munmap(const_cast<char*>(data_), len_);
  }
  // Maps [0, len) of fd; false (and nothing mapped) when the kernel refuses.
  bool map(int fd, size_t len) {
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<const char*>(p);
    len_ = len;
    return true;
  }
  const char* data() const { return data_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  const char* data_ = nullptr;
  size_t len_ = 0;
};

// MOKA_MINIDB_NO_MMAP=1 makes readers use pread (for filesystems where mapping misbehaves, and tests).
bool mmap_disabled() {
  const char* v = std::getenv("MOKA_MINIDB_NO_MMAP");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// One live record in the index.
struct IndexEntry {
  std::string key;
  uint64_t offset = 0;
  uint64_t value_len = 0;
};

// An opened, validated minidb file: header, trailer and index checked; records checked when read.
// Immutable after open, so cursors on different threads may share it (they only pread).
struct MiniFile {
  std::string path;
  Fd fd;
  Mapping map;  // the whole file, when mapping worked; else records are pread
  uint64_t file_size = 0;
  uint64_t data_end = 0;  // = index offset
  uint64_t data_hash = 0;
  std::vector<IndexEntry> index;  // sorted by key, strictly increasing
};

// Record header of `rec_index` (ordinal in the index, for messages) at `offset`, checked.
struct RecordHeader {
  uint32_t key_len;
  uint64_t value_len;
  uint64_t payload_hash;
};

// `where()` names the record in messages; it is only called on failure (formatting is not free).
template <class Where>
RecordHeader parse_record_header(const char* h, uint64_t offset, const Where& where, const std::string& path) {
  if (get_u32(h) != kRecordMagic) corrupt(path, fmt::format("{} at offset {}: bad record magic", where(), offset));
  if (get_u64(h + 24) != hash_header(h, 24, offset))
    corrupt(path, fmt::format("{} at offset {}: record header checksum mismatch", where(), offset));
  return RecordHeader{get_u32(h + 4), get_u64(h + 8), get_u64(h + 16)};
}

// n bytes at off of an opened file (the caller checked off + n <= file_size): a pointer into the
// mapping, or `scratch` filled by pread.
const char* bytes_at(const MiniFile& f, uint64_t off, size_t n, std::vector<char>& scratch) {
  if (f.map) return f.map.data() + off;
  if (scratch.size() < n) scratch.resize(n);
  pread_all(f.fd.get(), scratch.data(), n, off, f.path);
  return scratch.data();
}

// Faults [off, off + n) of the mapping in with one call, reading from disk as needed, and starts
// read-ahead of the record that will probably be read next. A file that another process truncated
// after we mapped it gives EFAULT here instead of SIGBUS on first touch (a truncation that races
// with the consumer's use of a returned view is not caught; moka's writers never truncate a
// published file, they replace it by rename).
void populate(const MiniFile& f, uint64_t off, uint64_t n, uint64_t next_off, uint64_t next_n) {
  if (n == 0) return;
  static const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t mask = static_cast<uint64_t>(page) - 1;
  char* base = const_cast<char*>(f.map.data());
  if (next_n > 0) {
    const uint64_t b = next_off & ~mask;
    (void)::madvise(base + b, next_off + next_n - b, MADV_WILLNEED);  // advice only: errors do not matter
  }
#ifdef MADV_POPULATE_READ
  const uint64_t b = off & ~mask;
  if (::madvise(base + b, off + n - b, MADV_POPULATE_READ) != 0) {
    const int err = errno;
    if (err == EFAULT)
      corrupt(f.path, fmt::format("the file shrank while being read (bytes {}..{} are gone)", off, off + n));
    if (err == EINTR) return;  // the reader faults the pages in itself
    // EINVAL: a kernel before 5.14; ENOMEM/EIO are reported as they are.
    if (err != EINVAL)
      throw RuntimeError(
          fmt::format("minidb file '{}': reading bytes {}..{} failed: {}", f.path, off, off + n, errno_text(err)));
  }
#else
  (void)off;
#endif
}

std::shared_ptr<MiniFile> open_mini_file(const std::string& path) {
  auto f = std::make_shared<MiniFile>();
  f->path = path;
  f->fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f->fd) {
    const int err = errno;
    const std::string text = fmt::format("Cannot open file: {} (db_type minidb): {}", path, errno_text(err));
    if (err == ENOENT || err == ENOTDIR) throw NotFound(text);
    throw RuntimeError(text);
  }
  struct stat st {};
  if (::fstat(f->fd.get(), &st) != 0)
    throw RuntimeError(fmt::format("minidb file '{}': stat failed: {}", path, errno_text(errno)));
  if (!S_ISREG(st.st_mode)) throw RuntimeError(fmt::format("minidb path '{}' is not a regular file", path));
  f->file_size = static_cast<uint64_t>(st.st_size);
  if (f->file_size < kHeaderSize + kTrailerSize)
    corrupt(path,
            fmt::format("{} bytes, shorter than an empty minidb ({} bytes)", f->file_size, kHeaderSize + kTrailerSize));

  // Map the whole file; the checks below then read the mapping. Every record is bounds-checked
  // against the size we mapped, so no view ever reaches past the mapping.
  if (!mmap_disabled()) (void)f->map.map(f->fd.get(), static_cast<size_t>(f->file_size));
  std::vector<char> scratch;
  if (f->map) populate(*f, 0, kHeaderSize, 0, 0);
  const char* header = bytes_at(*f, 0, kHeaderSize, scratch);
  if (std::memcmp(header, kFileMagic, 8) != 0)
    throw CorruptData(fmt::format("minidb file '{}' is not a minidb file (bad magic)", path));
  if (get_u64(header + 24) != hash_header(header, 24, 0)) corrupt(path, "file header checksum mismatch");
  if (get_u32(header + 8) != kVersion)
    throw CorruptData(fmt::format("minidb file '{}' has format version {}, this moka reads version {}", path,
                                  get_u32(header + 8), kVersion));

  if (f->map) populate(*f, f->file_size - kTrailerSize, kTrailerSize, 0, 0);
  char trailer[kTrailerSize];
  std::memcpy(trailer, bytes_at(*f, f->file_size - kTrailerSize, kTrailerSize, scratch), kTrailerSize);
  if (std::memcmp(trailer + 56, kTrailerMagic, 8) != 0) corrupt(path, "no trailer at the end of the file");
  if (get_u64(trailer + 48) != hash_header(trailer, 48, 0)) corrupt(path, "trailer checksum mismatch");
  const uint64_t index_offset = get_u64(trailer);
  const uint64_t index_size = get_u64(trailer + 8);
  const uint64_t record_count = get_u64(trailer + 16);
  f->data_hash = get_u64(trailer + 24);
  const uint64_t index_hash = get_u64(trailer + 32);
  if (get_u64(trailer + 40) != f->file_size)
    corrupt(path, fmt::format("the trailer says {} bytes, the file has {}", get_u64(trailer + 40), f->file_size));
  if (index_offset < kHeaderSize || index_offset > f->file_size - kTrailerSize ||
      index_size != f->file_size - kTrailerSize - index_offset)
    corrupt(path, "index bounds in the trailer do not match the file");
  f->data_end = index_offset;

  if (f->map) populate(*f, index_offset, index_size, 0, 0);
  const char* index = bytes_at(*f, index_offset, static_cast<size_t>(index_size), scratch);
  if (XXH3_64bits(index, index_size) != index_hash) corrupt(path, "index checksum mismatch");
  if (record_count > index_size / kIndexEntryFixed) corrupt(path, "record count larger than the index");
  f->index.reserve(record_count);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < record_count; ++i) {
    if (index_size - pos < kIndexEntryFixed) corrupt(path, fmt::format("index entry {} is cut short", i));
    IndexEntry e;
    e.offset = get_u64(index + pos);
    e.value_len = get_u64(index + pos + 8);
    const uint32_t key_len = get_u32(index + pos + 16);
    pos += kIndexEntryFixed;
    if (index_size - pos < key_len) corrupt(path, fmt::format("index entry {} is cut short", i));
    e.key.assign(index + pos, key_len);
    pos += key_len;
    // The record must lie inside the data region (written so that no sum can overflow).
    if (e.offset < kHeaderSize || e.offset > index_offset || index_offset - e.offset < kRecordHeaderSize ||
        index_offset - e.offset - kRecordHeaderSize < key_len ||
        index_offset - e.offset - kRecordHeaderSize - key_len < e.value_len)
      corrupt(path, fmt::format("index entry {} (key '{}') points outside the data", i, printable_key(e.key)));
    if (!f->index.empty() && !(f->index.back().key < e.key))
      corrupt(path, fmt::format("index entry {} (key '{}') is out of order", i, printable_key(e.key)));
    f->index.push_back(std::move(e));
  }
  if (pos != index_size) corrupt(path, "trailing bytes after the index");
  return f;
}

// Walks every record of the data region in file order, checking each; returns the whole-file
// chain hash (XXH3 over the file header and every record header) and the offsets seen.
uint64_t scan_records(const MiniFile& f, std::vector<uint64_t>* offsets) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  std::vector<char> scratch;
  if (f.map) populate(f, 0, kHeaderSize, 0, 0);
  XXH3_64bits_update(&st, bytes_at(f, 0, kHeaderSize, scratch), kHeaderSize);
  uint64_t off = kHeaderSize;
  uint64_t n = 0;
  while (off < f.data_end) {
    const auto where = [n] { return fmt::format("record #{} in file order", n); };
    if (f.data_end - off < kRecordHeaderSize)
      corrupt(f.path, fmt::format("{} at offset {} is cut short", where(), off));
    char rh[kRecordHeaderSize];
    if (f.map) populate(f, off, kRecordHeaderSize, 0, 0);
    std::memcpy(rh, bytes_at(f, off, kRecordHeaderSize, scratch), kRecordHeaderSize);
    const RecordHeader h = parse_record_header(rh, off, where, f.path);
    XXH3_64bits_update(&st, rh, kRecordHeaderSize);
    const uint64_t payload = uint64_t{h.key_len} + h.value_len;
    if (f.data_end - off - kRecordHeaderSize < payload)
      corrupt(f.path, fmt::format("{} at offset {} runs past the data region", where(), off));
    Xxh3Stream ps(off);
    uint64_t p = off + kRecordHeaderSize;
    uint64_t left = payload;
    while (left > 0) {
      // Pieces bound the pread buffer (and the range populated at once) for values of any size.
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, kCopyChunk));
      if (f.map) populate(f, p, chunk, 0, 0);
      ps.update(bytes_at(f, p, chunk, scratch), chunk);
      p += chunk;
      left -= chunk;
    }
    if (ps.digest() != h.payload_hash)
      corrupt(f.path, fmt::format("{} at offset {}: payload checksum mismatch", where(), off));
    if (offsets) offsets->push_back(off);
    off = p;
    ++n;
  }
  return XXH3_64bits_digest(&st);
}

class MiniCursor final : public Cursor {
 public:
  explicit MiniCursor(std::shared_ptr<const MiniFile> f) : f_(std::move(f)) {}
  void seek(std::string_view key) override {
    if (!f_) return;
    auto it = std::lower_bound(f_->index.begin(), f_->index.end(), key,
                               [](const IndexEntry& e, std::string_view k) { return std::string_view(e.key) < k; });
    move_to(static_cast<size_t>(it - f_->index.begin()));
  }
  void seek_to_first() override { move_to(0); }
  void next() override {
    if (!valid()) throw RuntimeError("minidb cursor: next() on an invalid cursor");
    move_to(pos_ + 1);
  }
  std::string_view key() override {
    if (!valid()) throw RuntimeError("minidb cursor: key() on an invalid cursor");
    return f_->index[pos_].key;
  }
  std::string_view value() override {
    if (!valid()) throw RuntimeError("minidb cursor: value() on an invalid cursor");
    if (!record_) load(true);
    if (!payload_checked_) check_payload();
    return current_value();
  }
  std::string_view value_unhashed() override {
    if (!valid()) throw RuntimeError("minidb cursor: value_unhashed() on an invalid cursor");
    if (!record_) load(false);
    return current_value();
  }
  bool valid() override { return f_ && pos_ < f_->index.size(); }
  uint64_t value_size() override {
    if (!valid()) throw RuntimeError("minidb cursor: value_size() on an invalid cursor");
    return f_->index[pos_].value_len;
  }
  // pread straight into dst (one kernel copy, as a plain read() would make; a view into the
  // mapping would cost mapping the pages and then a copy). The first call for a record reads the
  // record header, key and the first kPrefix value bytes in one pread and checks them.
  void read_value(uint64_t offset, std::span<std::byte> dst) override {
    if (!valid()) throw RuntimeError("minidb cursor: read_value() on an invalid cursor");
    const IndexEntry& e = f_->index[pos_];
    if (offset > e.value_len || dst.size() > e.value_len - offset)
      throw_bad_value_range(offset, dst.size(), e.value_len);
    if (!prefix_) load_prefix();
    const uint64_t value_at = e.offset + kRecordHeaderSize + e.key.size();
    size_t done = 0;
    if (offset >= cache_off_ && offset < cache_off_ + cache_len_) {
      done = static_cast<size_t>(std::min<uint64_t>(dst.size(), cache_off_ + cache_len_ - offset));
      std::memcpy(dst.data(), cache_ + (offset - cache_off_), done);
    }
    if (done == dst.size()) return;
    char* to = reinterpret_cast<char*>(dst.data()) + done;
    const uint64_t from = offset + done;
    const uint64_t end = offset + dst.size();
    const uint64_t rest = e.value_len - end;
    if (rest <= kPrefix) {
      // The read reaches the record's end (or all but a few bytes of it: a blob record's checksum,
      // which comes along into pbuf_). When the next record in key order starts right there, as
      // it does in a file written in key order, its header, key and value prefix come along too
      // (into nbuf_), so that a load of many records makes one system call per record, as a
      // plain read() of each would.
      iovec iov[3] = {{to, static_cast<size_t>(end - from)}, {pbuf_.get(), static_cast<size_t>(rest)}, {nullptr, 0}};
      const size_t nx = pos_ + 1;
      bool prefetch = false;
      const uint64_t record_end = value_at + e.value_len;
      if (nx < f_->index.size() && f_->index[nx].offset == record_end) {
        const IndexEntry& n = f_->index[nx];
        const uint64_t nlen = kRecordHeaderSize + n.key.size() + std::min<uint64_t>(n.value_len, kPrefix);
        if (nlen > ncap_) {
          nbuf_.reset(new char[nlen]);
          ncap_ = nlen;
        }
        iov[2] = {nbuf_.get(), static_cast<size_t>(nlen)};
        prefetch = true;
      }
      prefetched_ = kNone;  // nbuf_ may be overwritten; it is valid again only once the read completed
      preadv_all(f_->fd.get(), iov, 3, value_at + from, f_->path);
      if (prefetch) prefetched_ = nx;
      cache_ = pbuf_.get();
      cache_off_ = end;
      cache_len_ = rest;
    } else {
      pread_all(f_->fd.get(), to, static_cast<size_t>(end - from), value_at + from, f_->path);
    }
  }

 private:
  static constexpr uint64_t kPrefix = 4096;
  static constexpr size_t kNone = static_cast<size_t>(-1);
  void move_to(size_t pos) {
    pos_ = pos;
    record_ = nullptr;
    payload_checked_ = false;
    prefix_ = false;
  }
  // read_value's first step for a record: header, key and up to kPrefix value bytes, checked as in
  // load() except for the payload hash (read_value's caller verifies the value bytes).
  void load_prefix() {
    const IndexEntry& e = f_->index[pos_];
    const uint64_t len = kRecordHeaderSize + e.key.size() + std::min<uint64_t>(e.value_len, kPrefix);
    if (prefetched_ == pos_) {
      // The previous record's last read brought these bytes along (same length: same index entry).
      std::swap(pbuf_, nbuf_);
      std::swap(pcap_, ncap_);
      prefetched_ = kNone;
    } else {
      if (len > pcap_) {
        pbuf_.reset(new char[len]);
        pcap_ = len;
      }
      pread_all(f_->fd.get(), pbuf_.get(), len, e.offset, f_->path);
    }
    const auto where = [&] { return record_name(); };
    const RecordHeader h = parse_record_header(pbuf_.get(), e.offset, where, f_->path);
    if (h.key_len != e.key.size() || h.value_len != e.value_len)
      corrupt(f_->path, fmt::format("{} at offset {}: lengths differ from the index", where(), e.offset));
    if (std::memcmp(pbuf_.get() + kRecordHeaderSize, e.key.data(), e.key.size()) != 0)
      corrupt(f_->path, fmt::format("{} at offset {}: key differs from the index", where(), e.offset));
    cache_ = pbuf_.get() + kRecordHeaderSize + e.key.size();
    cache_off_ = 0;
    cache_len_ = len - kRecordHeaderSize - e.key.size();
    prefix_ = true;
  }
  std::string_view current_value() const {
    return {record_ + kRecordHeaderSize + f_->index[pos_].key.size(), f_->index[pos_].value_len};
  }
  std::string record_name() const {
    return fmt::format("record {} (key '{}')", pos_, printable_key(f_->index[pos_].key));
  }
  // The payload (key + value) checksum of the loaded record.
  void check_payload() {
    const IndexEntry& e = f_->index[pos_];
    if (xxh3_64_fast(record_ + kRecordHeaderSize, e.key.size() + e.value_len, e.offset) != payload_hash_)
      corrupt(f_->path, fmt::format("{} at offset {}: payload checksum mismatch", record_name(), e.offset));
    payload_checked_ = true;
  }
  // The whole record (header, key, value) in memory, then every check: a record is never returned
  // unverified (with hash_payload false, the caller checks the value bytes: value_unhashed()).
  // Mapped file: the record is checked where it lies in the mapping and the view points there (no
  // copy); otherwise one pread into a per-cursor buffer.
  void load(bool hash_payload) {
    const IndexEntry& e = f_->index[pos_];
    const auto where = [&] { return record_name(); };
    const uint64_t total = kRecordHeaderSize + e.key.size() + e.value_len;  // inside the file: checked at open
    const char* rec = nullptr;
    if (f_->map) {
      // Read-ahead of the next record in key order overlaps its disk reads with our checks.
      const bool has_next = pos_ + 1 < f_->index.size();
      const IndexEntry* next = has_next ? &f_->index[pos_ + 1] : nullptr;
      populate(*f_, e.offset, total, next ? next->offset : 0,
               next ? kRecordHeaderSize + next->key.size() + next->value_len : 0);
      rec = f_->map.data() + e.offset;
    } else {
      if (total > cap_) {
        buf_.reset(new char[total]);
        cap_ = total;
      }
      pread_all(f_->fd.get(), buf_.get(), total, e.offset, f_->path);
      rec = buf_.get();
    }
    const RecordHeader h = parse_record_header(rec, e.offset, where, f_->path);
    if (h.key_len != e.key.size() || h.value_len != e.value_len)
      corrupt(f_->path, fmt::format("{} at offset {}: lengths differ from the index", where(), e.offset));
    record_ = rec;
    payload_hash_ = h.payload_hash;
    payload_checked_ = false;
    try {
      if (hash_payload) check_payload();
      if (std::memcmp(rec + kRecordHeaderSize, e.key.data(), e.key.size()) != 0)
        corrupt(f_->path, fmt::format("{} at offset {}: key differs from the index", where(), e.offset));
    } catch (...) {
      record_ = nullptr;  // a failed record is never handed out by a later call
      throw;
    }
  }

  std::shared_ptr<const MiniFile> f_;
  size_t pos_ = 0;
  const char* record_ = nullptr;  // the checked current record (mapping or buf_); null until loaded
  uint64_t payload_hash_ = 0;     // from record_'s header
  bool payload_checked_ = false;  // whether record_'s payload checksum was verified
  std::unique_ptr<char[]> buf_;
  uint64_t cap_ = 0;
  // read_value: the current record's header and key were checked; value bytes
  // [cache_off_, cache_off_ + cache_len_) are at cache_ (inside pbuf_, capacity pcap_).
  bool prefix_ = false;
  std::unique_ptr<char[]> pbuf_;
  uint64_t pcap_ = 0;
  const char* cache_ = nullptr;
  uint64_t cache_off_ = 0;
  uint64_t cache_len_ = 0;
  // Header, key and value prefix of record prefetched_ (index position; kNone: none), read along
  // with the end of the record before it; load_prefix takes them instead of reading again.
  std::unique_ptr<char[]> nbuf_;
  uint64_t ncap_ = 0;
  size_t prefetched_ = kNone;
};

// Where a committed key's record lives.
struct Loc {
  uint64_t offset;
  uint64_t value_len;
};

// The write side of an open minidb, shared by the DB and its transaction so that either may go first.
class MiniWriter {
 public:
  MiniWriter(std::string path, DbMode mode) : path_(std::move(path)), mode_(mode) {
    tmp_path_ = fmt::format("{}.tmp-{}", path_, ::getpid());
    state_.reset(XXH3_createState());
    if (!state_) throw RuntimeError("minidb: out of memory for the hash state");
    struct stat st {};
    const bool exists = ::stat(path_.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
      throw RuntimeError(
          fmt::format("Cannot open file: {} (db_type minidb, {} mode): it is a directory", path_, to_string(mode_)));
    try {
      if (mode_ == DbMode::Write && exists) {
        // Append = copy the committed data into a fresh tmp file; the published file is never modified.
        auto old = open_mini_file(path_);
        XXH3_64bits_reset(state_.get());
        const uint64_t chain = scan_records_into_state(*old);
        if (chain != old->data_hash) corrupt(path_, "whole-file checksum mismatch");
        for (const auto& e : old->index) committed_[e.key] = Loc{e.offset, e.value_len};
        start_tmp_from(*old);
        published_ = true;
      } else {
        start_fresh_tmp();
      }
    } catch (...) {
      abandon();  // no tmp file outlives a failed open
      throw;
    }
  }
  ~MiniWriter() { abandon(); }
  MiniWriter(const MiniWriter&) = delete;
  MiniWriter& operator=(const MiniWriter&) = delete;

  const std::string& path() const { return path_; }
  bool closed() const { return closed_; }
  bool txn_live = false;

  void put(std::string_view key, std::span<const std::string_view> pieces,
           std::map<std::string, Loc, std::less<>>& pending) {
    check_writable(key);
    const uint64_t offset = pos_;
    uint64_t value_size = 0;
    for (std::string_view p : pieces) value_size += p.size();
    Xxh3Stream ps(offset);
    ps.update(key.data(), key.size());
    for (std::string_view p : pieces) ps.update(p.data(), p.size());
    char h[kRecordHeaderSize];
    fill_record_header(h, key.size(), value_size, ps.digest(), offset);
    XXH3_64bits_update(state_.get(), h, kRecordHeaderSize);
    append(h, kRecordHeaderSize);
    append(key.data(), key.size());
    for (std::string_view p : pieces) append(p.data(), p.size());
    staged(key, Loc{offset, value_size}, pending);
  }

  // A put whose value arrives in parts (Transaction::begin_put; the transaction checks the
  // sequence and the sizes). The record header goes out as a placeholder; key and parts are hashed
  // and copied into the write buffer as they come, each while it is still in cache from the caller's
  // own pass; end_put fills the header in, in the buffer or, once that went to the writer thread,
  // with a write of its own queued behind it.
  void begin_put(std::string_view key, uint64_t value_size) {
    check_writable(key);
    const uint64_t offset = pos_;
    stream_.emplace(offset, value_size);
    const char placeholder[kRecordHeaderSize] = {};
    append(placeholder, kRecordHeaderSize);
    stream_->hash.update(key.data(), key.size());
    append(key.data(), key.size());
  }
  void put_part(std::string_view part) {
    check_stream();
    stream_->hash.update(part.data(), part.size());
    append(part.data(), part.size());
  }
  void end_put(std::string_view key, std::map<std::string, Loc, std::less<>>& pending) {
    check_stream();
    const OpenPut p = *stream_;
    char h[kRecordHeaderSize];
    fill_record_header(h, key.size(), p.value_size, p.hash.digest(), p.offset);
    patch(p.offset, h, kRecordHeaderSize);
    stream_.reset();
    XXH3_64bits_update(state_.get(), h, kRecordHeaderSize);
    staged(key, Loc{p.offset, p.value_size}, pending);
  }
  // Drops the open streamed put: the tmp file goes back to where its record began.
  void abandon_put() noexcept {
    if (!stream_) return;
    const uint64_t offset = stream_->offset;
    stream_.reset();
    if (!broken_.empty() || !fd_) return;
    const uint64_t buf_start = pos_ - buf_.size();
    if (offset >= buf_start) {
      buf_.resize(offset - buf_start);
    } else {
      buf_.clear();
      try {
        behind_->wait();  // nothing queued may land beyond the new end
      } catch (const std::exception& e) {
        broken_ = e.what();
        return;
      }
      if (::ftruncate(fd_.get(), static_cast<off_t>(offset)) != 0) {
        broken_ = fmt::format("dropping an abandoned put failed: {}", errno_text(errno));
        return;
      }
    }
    pos_ = offset;
  }

  void commit(std::map<std::string, Loc, std::less<>>& pending) {
    check_open();
    abandon_put();
    if (!fd_) {
      if (pending.empty()) return;  // nothing new since the last publish
      reopen_after_publish();
    }
    for (auto& [k, loc] : pending) committed_[k] = loc;
    pending.clear();
    publish();
  }

  // close(): publish an empty/unchanged DB if nothing was ever published, then release.
  void close() {
    if (closed_) return;
    abandon_put();
    if (!published_) publish();
    abandon();
  }

  // Releases everything without publishing; the tmp file is removed.
  void abandon() noexcept {
    if (closed_) return;
    closed_ = true;
    behind_.reset();  // before the descriptor it writes to closes
    if (fd_) {
      fd_.reset();
      ::unlink(tmp_path_.c_str());
    }
    published_fd_.reset();
  }

 private:
  void check_open() const {
    if (closed_) throw RuntimeError(fmt::format("minidb '{}': the DB is closed", path_));
    if (!broken_.empty())
      throw RuntimeError(
          fmt::format("minidb '{}': an earlier write failed ({}); nothing more can be written or "
                      "committed through this DB object",
                      path_, broken_));
  }
  void check_writable(std::string_view key) {
    check_open();
    if (key.size() > UINT32_MAX) throw InvalidInput(fmt::format("minidb '{}': key longer than 4 GiB", path_));
    if (!fd_) reopen_after_publish();
  }
  void check_stream() const {
    check_open();
    if (!stream_)
      throw RuntimeError(fmt::format("minidb '{}': the open put was dropped when the DB was closed", path_));
  }
  void fill_record_header(char* h, size_t key_len, uint64_t value_size, uint64_t payload_hash, uint64_t offset) {
    put_u32(h, kRecordMagic);
    put_u32(h + 4, static_cast<uint32_t>(key_len));
    put_u64(h + 8, value_size);
    put_u64(h + 16, payload_hash);
    put_u64(h + 24, hash_header(h, 24, offset));
  }
  void staged(std::string_view key, Loc loc, std::map<std::string, Loc, std::less<>>& pending) {
    auto [it, fresh] = pending.try_emplace(std::string(key), loc);
    if (!fresh) it->second = loc;
  }
  // Runs a write; if it fails, the tmp file no longer matches pos_ and buf_, so the writer refuses
  // all later writes and commits (the published file, if any, is untouched).
  template <class F>
  void guarded(F&& write) {
    try {
      write();
    } catch (const std::exception& e) {
      broken_ = e.what();
      throw;
    }
  }

  void start_fresh_tmp() {
    open_tmp();
    char h[kHeaderSize] = {};
    std::memcpy(h, kFileMagic, 8);
    put_u32(h + 8, kVersion);
    put_u64(h + 24, hash_header(h, 24, 0));
    XXH3_64bits_reset(state_.get());
    XXH3_64bits_update(state_.get(), h, kHeaderSize);
    pos_ = 0;
    append(h, kHeaderSize);
  }

  void open_tmp() {
    behind_.reset();
    ::unlink(tmp_path_.c_str());  // a leftover of a crashed process that had our pid
    fd_ = Fd(::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_)
      throw RuntimeError(fmt::format("Cannot open file: {} (db_type minidb, {} mode; temporary file {}): {}", path_,
                                     to_string(mode_), tmp_path_, errno_text(errno)));
    buf_.clear();
    buf_.reserve(kWriteBufferSize);
  }

  uint64_t scan_records_into_state(const MiniFile& f) {
    // The scan verifies every record; it recomputes the chain hash into its own state, and we
    // rebuild ours the same way so appending continues the chain.
    std::vector<uint64_t> offsets;
    const uint64_t chain = scan_records(f, &offsets);
    char header[kHeaderSize];
    pread_all(f.fd.get(), header, kHeaderSize, 0, f.path);
    XXH3_64bits_update(state_.get(), header, kHeaderSize);
    for (uint64_t off : offsets) {
      char rh[kRecordHeaderSize];
      pread_all(f.fd.get(), rh, kRecordHeaderSize, off, f.path);
      XXH3_64bits_update(state_.get(), rh, kRecordHeaderSize);
    }
    return chain;
  }

  // A new tmp file holding [0, data_end) of a published file; our hash state already covers it.
  void start_tmp_from(const MiniFile& f) { copy_data_from(f.fd.get(), f.data_end); }

  void copy_data_from(int src, uint64_t data_end) {
    open_tmp();
    loff_t in = 0;
    uint64_t left = data_end;
    while (left > 0) {
      const ssize_t n =
          ::copy_file_range(src, &in, fd_.get(), nullptr, static_cast<size_t>(std::min<uint64_t>(left, 1u << 30)), 0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
        copy_by_hand(src, static_cast<uint64_t>(in), left);
        break;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        throw RuntimeError(fmt::format("minidb '{}': copying committed data failed: {}", path_, errno_text(errno)));
      }
      if (n == 0) corrupt(path_, "the file shrank while being copied");
      left -= static_cast<uint64_t>(n);
    }
    pos_ = data_end;
  }

  void copy_by_hand(int src, uint64_t from, uint64_t left) {
    std::unique_ptr<char[]> b(new char[kCopyChunk]);
    while (left > 0) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, kCopyChunk));
      pread_all(src, b.get(), chunk, from, path_);
      write_all(fd_.get(), b.get(), chunk, tmp_path_);
      from += chunk;
      left -= chunk;
    }
  }

  // After a publish the tmp file became `path`; further puts go to a copy of its data region.
  void reopen_after_publish() {
    copy_data_from(published_fd_.get(), published_data_end_);
    published_fd_.reset();
  }

  // Buffered sequential append: bytes are copied into buf_ (while still in cache from hashing), and
  // each full buffer goes to the writer thread, which writes it while this thread fills the next, so
  // hashing and the kernel's copy run on two cores. Small DBs never fill one: publish() writes them.
  void append(const char* p, size_t n) {
    while (n > 0) {
      if (buf_.size() == kWriteBufferSize) hand_over_buffer();
      const size_t take = std::min(n, kWriteBufferSize - buf_.size());
      buf_.append(p, take);
      p += take;
      n -= take;
      pos_ += take;
    }
  }

  void hand_over_buffer() {
    if (!behind_) behind_ = std::make_unique<WriteBehind>(fd_.get(), what_tmp(), kWritesInFlight * kWriteBufferSize);
    const uint64_t at = pos_ - buf_.size();
    guarded([&] { behind_->write(at, std::move(buf_)); });
    // After write(), which waited for room if the writer was behind: a buffer it finished is spare
    // then, so steady state cycles kWritesInFlight + 1 buffers without allocating (fresh pages cost
    // a fault each).
    buf_ = behind_->spare_buffer();
    buf_.clear();
    buf_.reserve(kWriteBufferSize);
  }

  // Everything appended so far is in the file (at its offsets) when this returns.
  void write_out() {
    if (behind_) guarded([&] { behind_->wait(); });
    if (!buf_.empty())
      guarded([&] { pwrite_all(fd_.get(), buf_.data(), buf_.size(), pos_ - buf_.size(), what_tmp()); });
    buf_.clear();
  }

  // Overwrites [offset, offset + n), appended earlier: the part still in buf_ there, the part handed
  // over with a write queued behind it (a placeholder may straddle the two).
  void patch(uint64_t offset, const char* bytes, size_t n) {
    const uint64_t buf_start = pos_ - buf_.size();
    if (offset + n > buf_start) {
      const uint64_t from = std::max(offset, buf_start);
      std::memcpy(buf_.data() + (from - buf_start), bytes + (from - offset), offset + n - from);
    }
    if (offset < buf_start) {
      const size_t out = static_cast<size_t>(std::min<uint64_t>(offset + n, buf_start) - offset);
      guarded([&] { behind_->write(offset, std::string(bytes, out)); });
    }
  }

  std::string what_tmp() const { return fmt::format("minidb file '{}'", tmp_path_); }

  // Index + trailer, fsync, rename over path, fsync the directory: readers see the old or the new file.
  void publish() {
    const uint64_t index_offset = pos_;
    std::string index;
    for (const auto& [k, loc] : committed_) {
      char e[kIndexEntryFixed];
      put_u64(e, loc.offset);
      put_u64(e + 8, loc.value_len);
      put_u32(e + 16, static_cast<uint32_t>(k.size()));
      index.append(e, kIndexEntryFixed);
      index.append(k);
    }
    char t[kTrailerSize] = {};
    put_u64(t, index_offset);
    put_u64(t + 8, index.size());
    put_u64(t + 16, committed_.size());
    put_u64(t + 24, XXH3_64bits_digest(state_.get()));  // the chain state stays usable for later appends
    put_u64(t + 32, XXH3_64bits(index.data(), index.size()));
    put_u64(t + 40, index_offset + index.size() + kTrailerSize);
    put_u64(t + 48, hash_header(t, 48, 0));
    std::memcpy(t + 56, kTrailerMagic, 8);
    write_out();
    pwrite_all(fd_.get(), index.data(), index.size(), index_offset, what_tmp());
    pwrite_all(fd_.get(), t, kTrailerSize, index_offset + index.size(), what_tmp());
    if (::fsync(fd_.get()) != 0)
      throw RuntimeError(fmt::format("minidb '{}': fsync of {} failed: {}", path_, tmp_path_, errno_text(errno)));
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
      throw RuntimeError(fmt::format("minidb '{}': rename of {} failed: {}", path_, tmp_path_, errno_text(errno)));
    fsync_parent_dir(path_);
    // The tmp descriptor was write-only: keep a read descriptor of the published file, the
    // source of the next tmp copy (it stays valid even if path is replaced later).
    behind_.reset();
    fd_.reset();
    published_fd_ = Fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    published_data_end_ = index_offset;
    pos_ = index_offset;
    published_ = true;
  }

  std::string path_;
  std::string tmp_path_;
  DbMode mode_;
  Fd fd_;            // the tmp file being written; empty right after a publish
  Fd published_fd_;  // the last published file (read-only), source of the next copy
  uint64_t published_data_end_ = 0;
  uint64_t pos_ = 0;                     // logical end of the tmp file (buffer and queued writes included)
  std::string buf_;                      // bytes [pos_ - size, pos_) not yet handed to behind_
  std::unique_ptr<WriteBehind> behind_;  // the writer thread of fd_, started by the first full buffer
  struct FreeState {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, FreeState> state_;  // chain hash: file header + every record header
  std::map<std::string, Loc, std::less<>> committed_;
  bool published_ = false;
  bool closed_ = false;
  std::string broken_;  // why the tmp file can no longer be trusted (a failed write); empty: fine
  // The streamed put in progress (begin_put .. end_put).
  struct OpenPut {
    OpenPut(uint64_t at, uint64_t size) : offset(at), value_size(size), hash(at) {}
    uint64_t offset;
    uint64_t value_size;
    Xxh3Stream hash;  // of key + value, seeded with the record's offset
  };
  std::optional<OpenPut> stream_;
};

class MiniTransaction final : public Transaction {
 public:
  explicit MiniTransaction(std::shared_ptr<MiniWriter> w) : w_(std::move(w)) { w_->txn_live = true; }
  ~MiniTransaction() override {
    w_->abandon_put();
    w_->txn_live = false;
  }

 protected:
  void do_put(std::string_view key, std::string_view value) override {
    w_->put(key, std::span<const std::string_view>(&value, 1), pending_);
  }
  void do_put_pieces(std::string_view key, std::span<const std::string_view> pieces) override {
    w_->put(key, pieces, pending_);
  }
  void do_begin_put(std::string_view key, uint64_t value_size) override { w_->begin_put(key, value_size); }
  void do_put_part(std::string_view part) override { w_->put_part(part); }
  void do_end_put(std::string_view key) override { w_->end_put(key, pending_); }
  void do_abandon_put() noexcept override { w_->abandon_put(); }
  void do_commit() override { w_->commit(pending_); }

 private:
  std::shared_ptr<MiniWriter> w_;
  std::map<std::string, Loc, std::less<>> pending_;
};

class MiniDb final : public DB {
 public:
  MiniDb(const std::string& path, DbMode mode) : DB("minidb", path, mode) {
    if (mode == DbMode::Read) {
      file_ = open_mini_file(path);
    } else {
      writer_ = std::make_shared<MiniWriter>(path, mode);
    }
  }
  ~MiniDb() override {
    // Without close(), whatever was not committed is dropped: no half-written file ever appears at path.
    if (writer_) writer_->abandon();
  }

  std::unique_ptr<Cursor> new_cursor() override {
    if (mode() == DbMode::Read) {
      if (!file_) throw RuntimeError(fmt::format("minidb '{}': the DB is closed", path()));
      return std::make_unique<MiniCursor>(file_);
    }
    // A writer's cursor reads the last published state (the file at path), if any.
    struct stat st {};
    if (::stat(path().c_str(), &st) != 0) return std::make_unique<MiniCursor>(nullptr);
    return std::make_unique<MiniCursor>(open_mini_file(path()));
  }

  bool indexed() const override { return mode() == DbMode::Read && file_ != nullptr; }

  std::unique_ptr<Transaction> new_transaction() override {
    if (!writer_) throw RuntimeError(fmt::format("minidb '{}': cannot write to a DB opened in read mode", path()));
    if (writer_->closed()) throw RuntimeError(fmt::format("minidb '{}': the DB is closed", path()));
    if (writer_->txn_live) throw RuntimeError(fmt::format("minidb '{}': a transaction is already open", path()));
    return std::make_unique<MiniTransaction>(writer_);
  }

  void close() override {
    if (writer_) writer_->close();
    file_.reset();
  }

  void verify() override {
    auto f = open_mini_file(path());
    std::vector<uint64_t> offsets;
    if (scan_records(*f, &offsets) != f->data_hash) corrupt(path(), "whole-file checksum mismatch");
    for (size_t i = 0; i < f->index.size(); ++i) {
      if (!std::binary_search(offsets.begin(), offsets.end(), f->index[i].offset))
        corrupt(path(),
                fmt::format("index entry {} (key '{}') does not point at a record", i, printable_key(f->index[i].key)));
    }
    // Keys: each live record's key must match its index entry.
    MiniCursor c(f);
    for (c.seek_to_first(); c.valid(); c.next()) (void)c.value();
  }

 private:
  std::shared_ptr<const MiniFile> file_;
  std::shared_ptr<MiniWriter> writer_;
};

}  // namespace

std::unique_ptr<DB> open_minidb(const std::string& path, DbMode mode) { return std::make_unique<MiniDb>(path, mode); }

}  // namespace moka::detail
