// libFuzzer target for the blob record reader: any bytes either load or fail with CorruptData (never a
// crash, UB or huge allocation), and whatever loads re-serializes to the very same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/storage/blob_serializer.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "blob_reader_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Small limits keep the fuzzer's memory bounded even for intact headers with large shapes.
constexpr moka::DeserializeOptions kOptions{.max_tensor_bytes = uint64_t{64} << 20, .max_object_bytes = 1 << 20};

// Random mutations almost never keep an XXH3 checksum valid, so most inputs would stop at the first
// header check. A second pass rewrites every record's checksums to match (where the sizes allow),
// which lets the fuzzer reach the field validation and reassembly logic behind them.
std::string with_checksums_fixed(std::string_view in) {
  std::string s(in);
  std::size_t pos = 0;
  while (s.size() - pos >= 20) {
    uint32_t hsize;
    uint64_t psize;
    std::memcpy(&hsize, s.data() + pos + 8, 4);
    std::memcpy(&psize, s.data() + pos + 12, 8);
    if (hsize < 28 || hsize > s.size() - pos) break;
    const uint64_t hsum = moka::xxh3_64({reinterpret_cast<const std::byte*>(s.data() + pos), hsize - 8u});
    std::memcpy(s.data() + pos + hsize - 8, &hsum, 8);
    if (psize > s.size() - pos - hsize || s.size() - pos - hsize - psize < 8) break;
    const uint64_t psum = moka::xxh3_64({reinterpret_cast<const std::byte*>(s.data() + pos + hsize), psize}, hsum);
    std::memcpy(s.data() + pos + hsize + psize, &psum, 8);
    pos += hsize + psize + 8;
  }
  return s;
}

void check_bytes(std::string_view bytes);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_bytes(bytes);
  const std::string fixed = with_checksums_fixed(bytes);
  if (fixed != bytes) check_bytes(fixed);
  return 0;
}

namespace {

void check_bytes(std::string_view bytes) {
  // 1. The stream reader, blob after blob, as a file of records is read.
  moka::MemorySource src(bytes);
  std::string first_name;
  moka::Blob first;
  for (int i = 0; src.remaining().value_or(0) > 0 && i < 64; ++i) {
    moka::Blob blob;
    try {
      std::string name = moka::deserialize_blob(src, blob, kOptions);
      if (i == 0) {
        first_name = std::move(name);
        first.swap(blob);
      }
    } catch (const moka::CorruptData&) {
      if (blob.is_initialized()) die("a failed load left the blob initialized", "");
      break;
    }
  }
  // 2. Exactly one blob: a successful load must re-serialize to the identical bytes, since a writer
  // produces one encoding per blob (chunk boundaries are recovered from the header fields).
  moka::Blob blob;
  std::string name;
  try {
    name = moka::deserialize_blob(bytes, blob, kOptions);
  } catch (const moka::CorruptData&) {
    if (blob.is_initialized()) die("a failed load left the blob initialized", "");
    return;
  }
  moka::MemorySource hdr_src(bytes);
  const moka::RecordHeader h = moka::read_record_header(hdr_src);
  moka::SerializeOptions opts;
  if (h.kind == moka::RecordKind::TensorChunk) {
    // Rebuild the writer's options from the first chunk: its element count is the chunk size unless
    // the tensor fits in one chunk.
    opts.chunk_size = h.chunk_count == 1 ? moka::kNoChunking : static_cast<int64_t>(h.elem_count);
    opts.max_chunk_bytes = UINT64_MAX;
  }
  std::string again;
  try {
    again = moka::serialize_blob_to_string(name, blob, opts);
  } catch (const moka::Error& e) {
    die("a loaded blob could not be serialized", e.what());
  }
  if (again != bytes) {
    // Chunkings the writer would not produce (uneven string chunks) load fine but re-encode
    // differently; the loaded value must still round-trip exactly.
    moka::Blob back;
    try {
      moka::deserialize_blob(again, back, kOptions);
    } catch (const moka::Error& e) {
      die("re-serialized bytes did not load", e.what());
    }
    if (moka::serialize_blob_to_string(name, back, opts) != again) die("round trip changed the blob", name);
  }
}

}  // namespace
