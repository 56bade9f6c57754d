// Unit tests of the blob record format: round trips of every dtype, counters, cursors and user types,
// chunking, determinism, and every corruption path (truncation, bit flips, bad headers, absurd sizes).
#include "moka/storage/blob_serializer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/counter.h"
#include "moka/operators/tree_cursor.h"

namespace moka {
namespace {

std::string ser(const Blob& b, std::string_view name = "w", SerializeOptions o = {}) {
  return serialize_blob_to_string(name, b, o);
}

Blob tensor_blob(Tensor t) {
  Blob b;
  b.get_mutable<Tensor>() = std::move(t);
  return b;
}

// Round trip through bytes; checks the name and the size prediction on the way.
Blob round_trip(const Blob& b, SerializeOptions o = {}) {
  const std::string bytes = ser(b, "w", o);
  EXPECT_EQ(bytes.size(), serialized_size("w", b, o));
  Blob out;
  EXPECT_EQ(deserialize_blob(bytes, out), "w");
  return out;
}

void expect_tensor_round_trip(const Tensor& t, SerializeOptions o = {}) {
  Blob out = round_trip(tensor_blob(t), o);
  ASSERT_TRUE(out.is_type<Tensor>());
  EXPECT_EQ(out.get<Tensor>().dtype(), t.dtype());
  EXPECT_EQ(out.get<Tensor>().shape(), t.shape());
  EXPECT_TRUE(out.get<Tensor>() == t) << out.get<Tensor>().to_string() << " vs " << t.to_string();
}

// Asserts that reading `bytes` fails with CorruptData, leaving the blob empty.
std::string expect_corrupt(std::string_view bytes) {
  Blob out;
  out.get_mutable<Tensor>() = Tensor::scalar<int64_t>(99);  // must not survive a failed load
  try {
    deserialize_blob(bytes, out);
  } catch (const CorruptData& e) {
    EXPECT_FALSE(out.is_initialized()) << "a failed load left data in the blob";
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no CorruptData thrown";
  return {};
}

// ------------------------------------------------------------------ round trips

TEST(BlobSerializer, EveryDtypeRoundTrips) {
  expect_tensor_round_trip(Tensor::from_vector<bool>({2, 2}, {true, false, false, true}));
  expect_tensor_round_trip(Tensor::vector<int8_t>({-128, 0, 127}));
  expect_tensor_round_trip(Tensor::vector<uint8_t>({0, 1, 255}));
  expect_tensor_round_trip(Tensor::vector<int16_t>({-32768, 7, 32767}));
  expect_tensor_round_trip(Tensor::from_vector<int32_t>({3, 1}, {std::numeric_limits<int32_t>::min(), 0, 42}));
  expect_tensor_round_trip(Tensor::vector<int64_t>({std::numeric_limits<int64_t>::min(), -1, 1LL << 40}));
  expect_tensor_round_trip(Tensor::from_vector<float>({1, 2, 2}, {1.5f, -0.0f, 1e30f, -3.25f}));
  expect_tensor_round_trip(Tensor::vector<double>({3.141592653589793, -1e-300, 0.0}));
  expect_tensor_round_trip(Tensor::vector<std::string>({"a", "", "hello world"}));
}

TEST(BlobSerializer, ScalarsEmptyAndUndefinedTensors) {
  expect_tensor_round_trip(Tensor::scalar<int64_t>(5));
  expect_tensor_round_trip(Tensor::scalar<std::string>("x"));
  expect_tensor_round_trip(Tensor::scalar<bool>(true));
  expect_tensor_round_trip(Tensor(DType::Float, {0}));
  expect_tensor_round_trip(Tensor(DType::String, {3, 0, 2}));
  expect_tensor_round_trip(Tensor(DType::Int32, {0, 5}));
  Blob out = round_trip(tensor_blob(Tensor()));
  ASSERT_TRUE(out.is_type<Tensor>());
  EXPECT_FALSE(out.get<Tensor>().defined());
}

TEST(BlobSerializer, NaNBitsArePreserved) {
  Tensor t(DType::Float, {2});
  const uint32_t nan_bits = 0x7fc01234u;
  std::memcpy(t.raw_mutable_data(), &nan_bits, 4);
  Blob out = round_trip(tensor_blob(t));
  EXPECT_EQ(std::memcmp(out.get<Tensor>().raw_data(), t.raw_data(), 8), 0);
}

TEST(BlobSerializer, StringsWithEmbeddedNulsAndBinary) {
  std::string bin;
  for (int i = 0; i < 256; ++i) bin.push_back(static_cast<char>(i));
  expect_tensor_round_trip(Tensor::vector<std::string>({std::string("a\0b", 3), std::string(5, '\0'), bin}));
}

TEST(BlobSerializer, LargeTensorIsChunkedAndReassembled) {
  Tensor t(DType::Int64, {2500, 3});
  auto v = t.values<int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 7919);
  for (int64_t chunk : {int64_t{1000}, int64_t{7}, int64_t{7500}, int64_t{100000}, kNoChunking})
    expect_tensor_round_trip(t, {.chunk_size = chunk});
  // Byte cap: 8-byte elements, 800-byte chunks -> 100 elements per chunk.
  const std::string bytes = ser(tensor_blob(t), "w", {.chunk_size = 0, .max_chunk_bytes = 800});
  MemorySource src(bytes);
  RecordHeader h = read_record_header(src);
  EXPECT_EQ(h.chunk_count, 75u);
  EXPECT_EQ(h.elem_count, 100u);
  EXPECT_EQ(h.key(), "w#%0");
}

TEST(BlobSerializer, DefaultChunkingFollowsCaffe2) {
  Tensor t(DType::Float, {2'500'000});
  const std::string bytes = ser(tensor_blob(t));
  MemorySource src(bytes);
  RecordHeader h = read_record_header(src);
  EXPECT_EQ(h.chunk_count, 3u);  // 1,000,000 elements per chunk
  EXPECT_EQ(h.elem_count, 1'000'000u);
  Blob out;
  deserialize_blob(bytes, out);
  EXPECT_TRUE(out.get<Tensor>() == t);
}

TEST(BlobSerializer, BigChunksStreamInPiecesAndRepeatedLoadsAgree) {
  // 1,200,000 int32 in one 4.8 MB chunk: payloads are copied and hashed in pieces. Loading the same
  // bytes repeatedly (same checksum seed each time) must keep verifying.
  Tensor t(DType::Int32, {1'200'000});
  auto v = t.values<int32_t>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 2654435761u);
  std::string bytes = ser(tensor_blob(t), "w", {.chunk_size = kNoChunking});
  Blob out;
  for (int r = 0; r < 3; ++r) {
    deserialize_blob(bytes, out);
    EXPECT_TRUE(out.get<Tensor>() == t);
  }
  EXPECT_EQ(bytes, ser(tensor_blob(t), "w", {.chunk_size = kNoChunking}));
  bytes[bytes.size() / 2] ^= 0x40;
  EXPECT_NE(expect_corrupt(bytes).find("payload checksum mismatch"), std::string::npos);
}

TEST(BlobSerializer, StringChunksRespectByteCap) {
  std::vector<std::string> vals;
  for (int i = 0; i < 300; ++i)
    vals.push_back(std::string(static_cast<std::size_t>(i % 50), static_cast<char>('a' + i % 26)));
  Tensor t = Tensor::from_vector<std::string>({30, 10}, vals);
  expect_tensor_round_trip(t, {.chunk_size = 0, .max_chunk_bytes = 100});
  expect_tensor_round_trip(t, {.chunk_size = 17});
  expect_tensor_round_trip(t, {.chunk_size = 1});
}

TEST(BlobSerializer, ChunksInAnyOrder) {
  Tensor t(DType::Int32, {100});
  auto v = t.values<int32_t>();
  for (int i = 0; i < 100; ++i) v[static_cast<std::size_t>(i)] = i * i;
  // Split the records with a recording sink, as a DB backend would store them.
  struct Recs : ByteSink {
    std::vector<std::pair<std::string, std::string>> recs;
    void begin_record(std::string_view key, uint64_t size) override {
      recs.emplace_back(std::string(key), std::string());
      recs.back().second.reserve(size);
    }
    void write(std::span<const std::byte> b) override {
      recs.back().second.append(reinterpret_cast<const char*>(b.data()), b.size());
    }
  } sink;
  serialize_blob("w", tensor_blob(t), sink, {.chunk_size = 9});
  ASSERT_EQ(sink.recs.size(), 12u);
  EXPECT_EQ(sink.recs[10].first, "w#%10");
  EXPECT_EQ(blob_name_from_key(sink.recs[10].first), "w");
  std::sort(sink.recs.begin(), sink.recs.end());  // leveldb order: w#%0, w#%1, w#%10, w#%11, w#%2, ...
  Blob out;
  BlobAssembler a(out);
  for (auto& [key, value] : sink.recs) {
    EXPECT_FALSE(a.complete());
    MemorySource s(value);
    a.add(s);
    EXPECT_EQ(s.remaining(), 0u);
  }
  a.finish();
  EXPECT_TRUE(out.get<Tensor>() == t);

  // A missing chunk is named.
  Blob partial;
  BlobAssembler b(partial);
  for (std::size_t i = 0; i < sink.recs.size(); ++i) {
    if (sink.recs[i].first == "w#%3") continue;
    MemorySource s(sink.recs[i].second);
    b.add(s);
  }
  try {
    b.finish();
    ADD_FAILURE() << "no error";
  } catch (const CorruptData& e) {
    EXPECT_NE(std::string(e.what()).find("missing chunk(s) 3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(partial.is_initialized());

  // A duplicated chunk is refused.
  Blob dup;
  BlobAssembler c(dup);
  MemorySource s0(sink.recs[0].second), s1(sink.recs[0].second);
  c.add(s0);
  EXPECT_THROW(c.add(s1), CorruptData);
}

// adopt() takes a blob another assembler built from one whole record, and only as the first record.
TEST(BlobSerializer, AdoptTakesAWholeRecordOnlyIntoAFreshAssembler) {
  const Tensor t = Tensor::vector<float>({1, 2, 3});
  const std::string bytes = ser(tensor_blob(t), "w");
  auto built = [&] {
    MemorySource s(bytes);
    const RecordHeader h = read_record_header(s);
    Blob b;
    BlobAssembler a(b);
    a.add(h, s);
    a.finish();
    return std::pair{h, std::move(b)};
  };

  auto [h, whole] = built();
  Blob dest;
  dest.emplace<Counter>(5);  // an old value is replaced, as add() would
  BlobAssembler fresh(dest);
  fresh.adopt(h, whole);
  EXPECT_TRUE(fresh.complete());
  EXPECT_EQ(fresh.name(), "w");
  fresh.finish();
  EXPECT_TRUE(dest.get<Tensor>() == t);

  // After a record was added (complete or not), adopting is refused and the blob is untouched.
  auto [h2, whole2] = built();
  Blob added;
  BlobAssembler after_add(added);
  MemorySource s(bytes);
  after_add.add(s);
  try {
    after_add.adopt(h2, whole2);
    ADD_FAILURE() << "no error";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("cannot adopt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"w\""), std::string::npos) << e.what();
  }
  EXPECT_TRUE(added.get<Tensor>() == t);
  EXPECT_TRUE(whole2.get<Tensor>() == t);

  // A chunked record (one of several) is never a whole blob.
  Tensor big(DType::Int32, {20});
  std::string chunk;
  struct First : ByteSink {
    std::string* out;
    int records = 0;
    void begin_record(std::string_view, uint64_t) override { ++records; }
    void write(std::span<const std::byte> b) override {
      if (records == 1) out->append(reinterpret_cast<const char*>(b.data()), b.size());
    }
  } sink;
  sink.out = &chunk;
  serialize_blob("c", tensor_blob(big), sink, {.chunk_size = 5});
  ASSERT_EQ(sink.records, 4);
  MemorySource cs(chunk);
  const RecordHeader ch = read_record_header(cs);
  Blob some, target;
  some.emplace<Counter>(1);
  BlobAssembler chunk_assembler(target);
  EXPECT_THROW(chunk_assembler.adopt(ch, some), InvalidInput);
  EXPECT_FALSE(target.is_initialized());
}

TEST(BlobSerializer, LoadReusesTensorStorage) {
  Tensor t = Tensor::vector<float>({1, 2, 3, 4});
  const std::string bytes = ser(tensor_blob(t));
  Blob out;
  out.get_mutable<Tensor>().resize(DType::Float, {4});
  const std::byte* before = out.get<Tensor>().raw_data();
  deserialize_blob(bytes, out);
  EXPECT_EQ(out.get<Tensor>().raw_data(), before);
  EXPECT_TRUE(out.get<Tensor>() == t);
}

TEST(BlobSerializer, CounterRoundTrips) {
  for (int64_t v : {int64_t{0}, int64_t{7}, int64_t{-3}, std::numeric_limits<int64_t>::max()}) {
    Blob b;
    b.emplace<Counter>(v);
    const std::string bytes = ser(b, "c");
    MemorySource src(bytes);
    EXPECT_EQ(read_record_header(src).key(), "c");
    Blob out;
    EXPECT_EQ(deserialize_blob(bytes, out), "c");
    ASSERT_TRUE(out.is_type<Counter>());
    EXPECT_EQ(out.get<Counter>().retrieve(), v);
  }
}

TEST(BlobSerializer, TreeCursorRoundTrips) {
  Blob b;
  auto& c = b.emplace<TreeCursor>(std::vector<std::string>{"a", "b:lengths", "b:values"});
  Blob out;
  deserialize_blob(ser(b, "cur"), out);
  ASSERT_TRUE(out.is_type<TreeCursor>());
  EXPECT_EQ(out.get<TreeCursor>().field_names(), c.field_names());
  EXPECT_TRUE(out.get<TreeCursor>().offsets().empty());
  c.set_offsets({2, 5});
  deserialize_blob(ser(b, "cur"), out);
  EXPECT_EQ(out.get<TreeCursor>().offsets(), (std::vector<int64_t>{2, 5}));
  c.set_offsets({4});  // ReadRandomBatch position
  deserialize_blob(ser(b, "cur"), out);
  EXPECT_EQ(out.get<TreeCursor>().offsets(), (std::vector<int64_t>{4}));
}

struct UserStats {
  int64_t n = 0;
  double sum = 0;
  std::string label;
};

TEST(BlobSerializer, RegisteredUserType) {
  auto& reg = BlobSerializerRegistry::global();
  reg.register_serializer<UserStats>(
      "test.UserStats",
      [](const UserStats& s, std::string& out) {
        PayloadWriter w(out);
        w.i64(s.n);
        w.f64(s.sum);
        w.str(s.label);
      },
      [](std::string_view in) {
        PayloadReader r(in, "test.UserStats");
        auto s = std::make_unique<UserStats>();
        s->n = r.i64();
        s->sum = r.f64();
        s->label = std::string(r.str());
        r.expect_end();
        return s;
      });
  Blob b;
  b.emplace<UserStats>(UserStats{3, 2.5, std::string("x\0y", 3)});
  Blob out;
  EXPECT_EQ(deserialize_blob(ser(b, "stats"), out), "stats");
  ASSERT_TRUE(out.is_type<UserStats>());
  EXPECT_EQ(out.get<UserStats>().n, 3);
  EXPECT_EQ(out.get<UserStats>().sum, 2.5);
  EXPECT_EQ(out.get<UserStats>().label, std::string("x\0y", 3));

  // Registration errors.
  auto noop_ser = [](const UserStats&, std::string&) {};
  auto noop_de = [](std::string_view) { return std::make_unique<UserStats>(); };
  EXPECT_THROW(reg.register_serializer<UserStats>("test.Other", noop_ser, noop_de), InvalidInput);
  EXPECT_THROW(
      reg.register_serializer<int>(
          "test.UserStats", [](const int&, std::string&) {}, [](std::string_view) { return std::make_unique<int>(); }),
      InvalidInput);
  EXPECT_THROW(
      reg.register_serializer<int>(
          "moka.Int", [](const int&, std::string&) {}, [](std::string_view) { return std::make_unique<int>(); }),
      InvalidInput);
  EXPECT_THROW(reg.register_serializer<int>(
                   "", [](const int&, std::string&) {}, [](std::string_view) { return std::make_unique<int>(); }),
               InvalidInput);

  // A payload the type's reader refuses is CorruptData naming the blob.
  const std::string bytes = ser(b, "stats");
  ASSERT_TRUE(reg.unregister("test.UserStats"));
  reg.register_serializer<UserStats>("test.UserStats", noop_ser, [](std::string_view in) {
    PayloadReader r(in, "test.UserStats");
    r.u64();
    r.expect_end();  // too many bytes for this "version" of the reader
    return std::make_unique<UserStats>();
  });
  std::string msg = expect_corrupt(bytes);
  EXPECT_NE(msg.find("\"stats\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected bytes"), std::string::npos) << msg;

  // Unknown type name once unregistered.
  ASSERT_TRUE(reg.unregister("test.UserStats"));
  msg = expect_corrupt(bytes);
  EXPECT_NE(msg.find("unknown type name \"test.UserStats\""), std::string::npos) << msg;
  // And serializing a type with no serializer names the type and the blob.
  try {
    ser(b, "stats");
    ADD_FAILURE();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("No known serializer for"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"stats\""), std::string::npos) << e.what();
  }
}

TEST(BlobSerializer, RefusesQueuesAndEmptyBlobs) {
  Blob q;
  q.emplace<BlobsQueuePtr>(std::make_shared<BlobsQueue>("q", 2, 1));
  try {
    ser(q, "q");
    ADD_FAILURE();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("queues are not serializable"), std::string::npos) << e.what();
  }
  Blob empty;
  EXPECT_THROW(ser(empty, "e"), InvalidInput);
  EXPECT_THROW(ser(tensor_blob(Tensor::scalar<int64_t>(1)), "w", {.chunk_size = -2}), InvalidInput);
}

TEST(BlobSerializer, DeterministicBytes) {
  Tensor t(DType::Double, {300});
  for (int i = 0; i < 300; ++i) t.values<double>()[static_cast<std::size_t>(i)] = i / 3.0;
  const Blob b = tensor_blob(t);
  EXPECT_EQ(ser(b, "w", {.chunk_size = 64}), ser(b, "w", {.chunk_size = 64}));
  Blob copy = round_trip(b, {.chunk_size = 64});
  EXPECT_EQ(ser(b, "w", {.chunk_size = 64}), ser(copy, "w", {.chunk_size = 64}));
  // A StringSink and serialize_blob_to_string agree.
  StringSink sink;
  serialize_blob("w", b, sink, {.chunk_size = 64});
  EXPECT_EQ(sink.str(), ser(b, "w", {.chunk_size = 64}));
}

TEST(BlobSerializer, SeveralBlobsInOneStream) {
  StringSink sink;
  Blob a = tensor_blob(Tensor::vector<int64_t>({1, 2, 3}));
  Blob c;
  c.emplace<Counter>(4);
  serialize_blob("a", a, sink, {.chunk_size = 2});
  serialize_blob("c", c, sink);
  MemorySource src(sink.str());
  Blob a2, c2;
  EXPECT_EQ(deserialize_blob(src, a2), "a");
  EXPECT_EQ(deserialize_blob(src, c2), "c");
  EXPECT_EQ(src.remaining(), 0u);
  EXPECT_TRUE(a2.get<Tensor>() == a.get<Tensor>());
  EXPECT_EQ(c2.get<Counter>().retrieve(), 4);
  // The string form insists on exactly one blob.
  std::string msg = expect_corrupt(sink.str());
  EXPECT_NE(msg.find("unexpected bytes after its last record"), std::string::npos) << msg;
}

TEST(BlobSerializer, ConcurrentUseOfDistinctBlobs) {
  // The registry is shared: serializing and loading different blobs from several threads is safe.
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([k, &ok] {
      Blob c;
      c.emplace<Counter>(k);
      Blob t = tensor_blob(Tensor::vector<int64_t>({k, k + 1}));
      for (int i = 0; i < 200; ++i) {
        Blob c2, t2;
        deserialize_blob(serialize_blob_to_string("c", c), c2);
        deserialize_blob(serialize_blob_to_string("t", t), t2);
        if (c2.get<Counter>().retrieve() != k || !(t2.get<Tensor>() == t.get<Tensor>())) return;
      }
      ok[static_cast<std::size_t>(k)] = 1;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

// ------------------------------------------------------------------ corruption

TEST(BlobSerializer, TruncationAtEveryByteIsDetected) {
  std::vector<std::string> samples = {
      ser(tensor_blob(Tensor::vector<int32_t>({1, 2, 3, 4, 5})), "w", {.chunk_size = 2}),
      ser(tensor_blob(Tensor::vector<std::string>({"ab", std::string("\0", 1), ""}))),
      ser(tensor_blob(Tensor::scalar<bool>(true))),
  };
  Blob counter;
  counter.emplace<Counter>(7);
  samples.push_back(ser(counter, "c"));
  for (const auto& bytes : samples) {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      SCOPED_TRACE(n);
      expect_corrupt(std::string_view(bytes).substr(0, n));
    }
  }
}

TEST(BlobSerializer, EveryBitFlipIsDetected) {
  std::vector<std::string> samples = {
      ser(tensor_blob(Tensor::from_vector<int16_t>({2, 2}, {1, -2, 3, -4})), "w", {.chunk_size = 3}),
      ser(tensor_blob(Tensor::vector<std::string>({"xy", ""}))),
  };
  Blob counter;
  counter.emplace<Counter>(7);
  samples.push_back(ser(counter, "c"));
  Blob cursor;
  cursor.emplace<TreeCursor>(std::vector<std::string>{"a", "b:lengths", "b:values"}).set_offsets({1, 2});
  samples.push_back(ser(cursor, "cur"));
  for (const auto& bytes : samples) {
    for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
      std::string bad = bytes;
      bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
      SCOPED_TRACE(bit);
      expect_corrupt(bad);
    }
  }
}

TEST(BlobSerializer, ChecksumMismatchNamesBlobAndChunk) {
  Tensor t(DType::Int64, {10});
  std::string bytes = ser(tensor_blob(t), "weights", {.chunk_size = 4});
  // Flip a payload byte of the last chunk (its payload ends 8 bytes before the end).
  bytes[bytes.size() - 9] ^= 1;
  const std::string msg = expect_corrupt(bytes);
  EXPECT_NE(msg.find("blob \"weights\" chunk 2 of 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("payload checksum mismatch"), std::string::npos) << msg;
}

// Rewrites a record header field and fixes the header checksum, to reach the checks behind it.
std::string patch_header(std::string bytes, std::size_t offset, const void* value, std::size_t n) {
  std::memcpy(bytes.data() + offset, value, n);
  uint32_t hsize;
  std::memcpy(&hsize, bytes.data() + 8, 4);
  const uint64_t sum = xxh3_64({reinterpret_cast<const std::byte*>(bytes.data()), hsize - 8u});
  std::memcpy(bytes.data() + hsize - 8, &sum, 8);
  return bytes;
}

TEST(BlobSerializer, BadHeadersAreRefusedClearly) {
  const std::string good = ser(tensor_blob(Tensor::vector<int64_t>({1, 2})), "w");
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_NE(expect_corrupt(bad).find("bad magic"), std::string::npos);

  const uint16_t v2 = 2;
  bad = good;
  std::memcpy(bad.data() + 4, &v2, 2);
  EXPECT_NE(expect_corrupt(bad).find("unsupported format version 2"), std::string::npos);

  bad = patch_header(good, 7, "\x01", 1);
  EXPECT_NE(expect_corrupt(bad).find("unsupported flags"), std::string::npos);
  bad = patch_header(good, 6, "\x09", 1);
  EXPECT_NE(expect_corrupt(bad).find("unknown record kind 9"), std::string::npos);

  // Header field offsets for name "w" and type "moka.Tensor" (11 bytes): see docs/checkpoint-format.md.
  const std::size_t dtype_at = 20 + 4 + 1 + 4 + 11, dims_at = dtype_at + 8;
  const int32_t bad_dtype = 3;
  EXPECT_NE(expect_corrupt(patch_header(good, dtype_at, &bad_dtype, 4)).find("unknown dtype code 3"),
            std::string::npos);
  const int64_t negative = -2;
  EXPECT_NE(expect_corrupt(patch_header(good, dims_at, &negative, 8)).find("negative dimension"), std::string::npos);
  // An intact header claiming a huge tensor: refused before allocating.
  const int64_t huge = int64_t{1} << 50;
  std::string msg = expect_corrupt(patch_header(good, dims_at, &huge, 8));
  EXPECT_NE(msg.find("refusing"), std::string::npos) << msg;
  const int64_t big = int64_t{1} << 30;  // 8 GiB: under the default limit, but not in 100 bytes of data
  msg = expect_corrupt(patch_header(good, dims_at, &big, 8));
  EXPECT_NE(msg.find("needs more bytes than"), std::string::npos) << msg;
  // Payload size disagreeing with the element count.
  const uint64_t psize = 24;
  msg = expect_corrupt(patch_header(good, 12, &psize, 8));
  EXPECT_NE(msg.find("payload is 24 bytes"), std::string::npos) << msg;
  // Element range outside the tensor.
  const uint64_t begin = 1;
  msg = expect_corrupt(patch_header(good, dims_at + 8 + 16, &begin, 8));
  EXPECT_NE(msg.find("element range"), std::string::npos) << msg;
  // A header size pointing past the data.
  const uint32_t hsize = 1000;
  bad = good;
  std::memcpy(bad.data() + 8, &hsize, 4);
  EXPECT_NE(expect_corrupt(bad).find("truncated"), std::string::npos);
  // Garbage and empty input.
  EXPECT_NE(expect_corrupt("").find("no record"), std::string::npos);
  expect_corrupt(std::string(100, '\xff'));
}

TEST(BlobSerializer, LimitsAreConfigurable) {
  const std::string bytes = ser(tensor_blob(Tensor(DType::Float, {1000})), "w");
  Blob out;
  EXPECT_THROW(deserialize_blob(bytes, out, {.max_tensor_bytes = 3999}), CorruptData);
  EXPECT_NO_THROW(deserialize_blob(bytes, out, {.max_tensor_bytes = 4000}));
  Blob counter;
  counter.emplace<Counter>(1);
  EXPECT_THROW(deserialize_blob(ser(counter, "c"), out, {.max_object_bytes = 7}), CorruptData);
}

TEST(BlobSerializer, RandomCorruptionNeverYieldsWrongData) {
  // Multi-byte garbling of a chunked record stream: either the exact tensor or CorruptData.
  Tensor t(DType::Int32, {64});
  for (int i = 0; i < 64; ++i) t.values<int32_t>()[static_cast<std::size_t>(i)] = i;
  const std::string good = ser(tensor_blob(t), "w", {.chunk_size = 10});
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = good;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    if (bad == good) continue;
    expect_corrupt(bad);
  }
}

}  // namespace
}  // namespace moka
