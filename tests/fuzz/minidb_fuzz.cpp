// libFuzzer target for reading minidb files and loading checkpoints from them: a damaged file either
// reads back exactly what was written or fails with a moka error — never a crash, a hang, or a wrong value.
//
// An input is one of two things:
//  - a recipe (anything not starting with the minidb magic): entries or tensors to write with the real
//    writer (Transaction, or save_blobs in chunks), then one damage — a flipped byte or a truncation.
//    Reading must give back the entries written, or refuse with an error; since every byte of the
//    file is under a checksum, no successful read may return anything else;
//  - raw file bytes (starting with `MOKAMINI`): read as they are, and again with every checksum
//    rewritten to match (docs/db-backends.md), so that mutations get past the checksums to the
//    structure checks behind them (lengths, offsets, index order).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "minidb_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// One scratch file per fuzzing process, on tmpfs when there is one (the writer fsyncs).
const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir =
        access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    return std::string(dir) + "/moka_minidb_fuzz." + std::to_string(getpid()) + ".minidb";
  }();
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) die("cannot write the scratch file", path);
}

// Reads the input front to back; past the end every read gives zeros.
struct Input {
  std::string_view rest;
  uint8_t u8() {
    if (rest.empty()) return 0;
    const auto v = static_cast<uint8_t>(rest.front());
    rest.remove_prefix(1);
    return v;
  }
  uint32_t u16() { return u8() | (uint32_t{u8()} << 8); }
  // Whether damage() will leave the file alone (it reads its kind from the next byte).
  bool next_is_intact() const { return rest.empty() || static_cast<uint8_t>(rest.front()) % 3 == 0; }
  uint32_t u32() { return u16() | (u16() << 16); }
  std::string bytes(std::size_t n) {
    n = std::min(n, rest.size());
    std::string s(rest.substr(0, n));
    rest.remove_prefix(n);
    return s;
  }
};

// ---- raw files: rewrite every checksum so that mutations reach the structure checks ----

uint64_t hash(std::string_view s, std::size_t pos, std::size_t n, uint64_t seed) {
  return moka::xxh3_64({reinterpret_cast<const std::byte*>(s.data() + pos), n}, seed);
}
uint64_t get64(std::string_view s, std::size_t pos) {
  uint64_t v;
  std::memcpy(&v, s.data() + pos, 8);
  return v;
}
uint32_t get32(std::string_view s, std::size_t pos) {
  uint32_t v;
  std::memcpy(&v, s.data() + pos, 4);
  return v;
}
void put64(std::string& s, std::size_t pos, uint64_t v) { std::memcpy(s.data() + pos, &v, 8); }

std::string with_checksums_fixed(std::string s) {
  constexpr std::size_t kHeader = 32, kRecordHeader = 32, kTrailer = 64;
  if (s.size() < kHeader + kTrailer) return s;
  put64(s, 24, hash(s, 0, 24, 0));
  const std::size_t t = s.size() - kTrailer;
  const uint64_t index_offset = get64(s, t);
  const uint64_t index_size = get64(s, t + 8);
  const std::size_t data_end = static_cast<std::size_t>(std::min<uint64_t>(index_offset, t));
  // The chain: the file header, then every record header in file order.
  std::string chain(s, 0, kHeader);
  std::size_t off = kHeader;
  while (off + kRecordHeader <= data_end) {
    const uint64_t key_len = get32(s, off + 4);
    const uint64_t value_len = get64(s, off + 8);
    if (value_len > data_end || key_len + value_len > data_end - off - kRecordHeader) break;
    put64(s, off + 16, hash(s, off + kRecordHeader, key_len + value_len, off));
    put64(s, off + 24, hash(s, off, 24, off));
    chain.append(s, off, kRecordHeader);
    off += kRecordHeader + key_len + value_len;
  }
  put64(s, t + 24, hash(chain, 0, chain.size(), 0));
  if (index_offset <= t && index_size <= t - index_offset) put64(s, t + 32, hash(s, index_offset, index_size, 0));
  put64(s, t + 40, s.size());
  put64(s, t + 48, hash(s, t, 48, 0));
  return s;
}

// Every way a reader touches a file; errors must be moka errors. Returns key -> value of what read.
std::map<std::string, std::string> read_all(const std::string& path, bool expect_ok) {
  std::map<std::string, std::string> got;
  std::unique_ptr<moka::DB> db;
  try {
    db = moka::open_db("minidb", path, moka::DbMode::Read);
  } catch (const moka::Error& e) {
    if (expect_ok) die("an intact file did not open", e.what());
    return got;
  }
  try {
    db->verify();
  } catch (const moka::Error& e) {
    if (expect_ok) die("an intact file did not verify", e.what());
  }
  std::string last;
  for (auto c = db->new_cursor(); c->valid(); c->next()) {
    const std::string key(c->key());
    if (!got.empty() && key <= last) die("keys out of order", key);
    last = key;
    try {
      std::string value(c->value());
      const uint64_t size = c->value_size();
      if (size != value.size()) die("value_size differs from value()", key);
      std::string copy(size, '\0');
      c->read_value(0, {reinterpret_cast<std::byte*>(copy.data()), copy.size()});
      if (copy != value) die("read_value differs from value()", key);
      if (c->value_unhashed() != value) die("value_unhashed differs from value()", key);
      got.emplace(key, std::move(value));
    } catch (const moka::Error& e) {
      if (expect_ok) die("an intact record did not read", e.what());
    }
  }
  // Seeking to every key read finds it again.
  for (const auto& [k, v] : got) {
    auto c = db->new_cursor();
    c->seek(k);
    if (!c->valid() || c->key() != k) die("seek did not find a key", k);
  }
  return got;
}

// ---- recipes: write with the real writer, damage once, read back ----

// The damage: 0 none, 1 a flipped byte, 2 a truncation, at a position given by the input.
void damage(const std::string& path, Input& in) {
  const uint8_t kind = in.u8() % 3;
  const uint32_t where = in.u32();
  const auto flip = static_cast<uint8_t>(in.u8() | 1);
  if (kind == 0) return;
  std::string s = read_file(path);
  if (s.empty()) return;
  const std::size_t pos = where % s.size();
  if (kind == 1)
    s[pos] = static_cast<char>(static_cast<uint8_t>(s[pos]) ^ flip);
  else
    s.resize(pos);
  write_file(path, s);
}

void entries_recipe(Input& in) {
  const std::string& path = scratch_path();
  std::map<std::string, std::string> written;
  {
    auto db = moka::open_db("minidb", path, moka::DbMode::New);
    auto tx = db->new_transaction();
    const int n = in.u8() % 8;
    for (int i = 0; i < n; ++i) {
      std::string key = in.bytes(in.u8() % 16);
      std::string value = in.bytes(in.u16() % 512);
      tx->put(key, value);
      written[key] = value;
    }
    tx->commit();
    db->close();
  }
  const bool intact = in.next_is_intact();
  damage(path, in);
  const auto got = read_all(path, intact);
  if (intact && got != written) die("an intact file read back other entries", std::to_string(got.size()));
  for (const auto& [k, v] : got) {
    auto it = written.find(k);
    if (it == written.end()) die("a damaged file read a key never written", k);
    if (it->second != v) die("a damaged file read a wrong value", k);
  }
}

void tensors_recipe(Input& in) {
  const std::string& path = scratch_path();
  moka::Workspace ws;
  std::vector<std::string> names;
  const int n = 1 + in.u8() % 4;
  for (int i = 0; i < n; ++i) {
    const std::string name = "b" + std::to_string(i);
    const uint32_t count = in.u16() % 300;
    std::vector<int32_t> v(count);
    for (auto& x : v) x = static_cast<int32_t>(in.u32());
    ws.create_blob(name)->get_mutable<moka::Tensor>() =
        moka::Tensor::from_vector<int32_t>({static_cast<int64_t>(count)}, v);
    names.push_back(name);
  }
  moka::SaveSpec save;
  save.blob_names = names;
  save.db = path;
  save.db_type = "minidb";
  save.absolute_path = true;
  save.chunk_size = 1 + in.u8() % 64;
  moka::save_blobs(ws, save);
  const bool intact = in.next_is_intact();
  damage(path, in);
  moka::Workspace back;
  moka::LoadSpec load;
  load.dbs = {path};
  load.db_type = "minidb";
  load.absolute_path = true;
  load.load_all = true;
  try {
    moka::load_blobs(back, load);
  } catch (const moka::Error& e) {
    if (intact) die("an intact checkpoint did not load", e.what());
    return;
  }
  for (const std::string& name : names) {
    const moka::Blob* b = back.get_blob(name);
    if (b == nullptr) die("a loaded checkpoint lacks a blob", name);
    const moka::Tensor& want = ws.blob(name).get<moka::Tensor>();
    const moka::Tensor& got = b->get<moka::Tensor>();
    if (got.shape() != want.shape() ||
        (want.numel() > 0 &&
         std::memcmp(got.raw_data(), want.raw_data(), static_cast<std::size_t>(want.numel()) * 4) != 0))
      die("a loaded checkpoint holds a wrong value", name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string& path = scratch_path();
  try {
    if (bytes.starts_with("MOKAMINI")) {
      write_file(path, bytes);
      (void)read_all(path, false);
      const std::string fixed = with_checksums_fixed(std::string(bytes));
      if (fixed != bytes) {
        write_file(path, fixed);
        (void)read_all(path, false);
      }
    } else {
      Input in{bytes};
      if (in.u8() % 2 == 0)
        entries_recipe(in);
      else
        tensors_recipe(in);
    }
  } catch (const moka::Error& e) {
    die("a write of a recipe failed", e.what());
  }
  unlink(path.c_str());
  return 0;
}
