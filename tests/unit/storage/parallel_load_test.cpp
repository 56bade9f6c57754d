// Unit tests of parallel load (LoadSpec::load_threads, src/storage/load_prefetcher.cpp): for every thread
// count a load ends with the same blobs, the same stats and the same error as a load on one thread,
// including corrupt records in a helper's share, requested subsets, prefixes and several DBs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "../../../src/storage/load_prefetcher.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"
#include "support/temp_dir.h"

namespace moka {
namespace {

struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-parload") {}
};

constexpr int64_t kKiB = 1024;

// A float tensor of n elements whose bytes are unique to `seed` (so a payload can be found in a file).
Tensor floats(int64_t n, int seed) {
  Tensor t(DType::Float, {n});
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(seed) * 1e6f + static_cast<float>(i);
  return t;
}

// The blobs of a job's checkpoint, more than kParallelLoadMinBytes together: large and small float
// tensors, other dtypes, 0-d and empty tensors, strings.
std::vector<std::string> fill(Workspace& ws, int count = 24) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const std::string name = fmt::format("w{:02}", i);
    const int64_t n = i % 5 == 0 ? 3 * 256 * kKiB : (i % 3 == 0 ? 7 : 100 * kKiB + i);  // 3 MiB or ~400 KiB
    ws.create_blob(name)->get_mutable<Tensor>() = floats(n, i);
    names.push_back(name);
  }
  Tensor ints(DType::Int64, {3, 4});
  for (int64_t i = 0; i < 12; ++i) ints.mutable_data<int64_t>()[i] = i * i - 5;
  ws.create_blob("ints")->get_mutable<Tensor>() = std::move(ints);
  Tensor flags(DType::Bool, {5});
  flags.mutable_data<bool>()[2] = true;
  ws.create_blob("flags")->get_mutable<Tensor>() = std::move(flags);
  ws.create_blob("scalar")->get_mutable<Tensor>() = Tensor::scalar<double>(2.5);
  ws.create_blob("empty")->get_mutable<Tensor>() = Tensor(DType::Float, {0, 3});
  Tensor words(DType::String, {3});
  words.values<std::string>()[0] = "alpha";
  words.values<std::string>()[2] = std::string(5000, 'z');
  ws.create_blob("words")->get_mutable<Tensor>() = std::move(words);
  for (const char* n : {"ints", "flags", "scalar", "empty", "words"}) names.emplace_back(n);
  return names;
}

void save(Workspace& ws, const std::vector<std::string>& names, const std::string& path, int64_t chunk_size = 0) {
  SaveSpec s;
  s.blob_names = names;
  s.db = path;
  s.db_type = "minidb";
  s.absolute_path = true;
  s.chunk_size = chunk_size;
  save_blobs(ws, s);
}

// What a workspace holds, blob by blob: "name: dtype shape bytes" or "name: empty" (comparable).
std::vector<std::string> contents(const Workspace& ws) {
  std::vector<std::string> names = ws.blobs();
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const auto& n : names) {
    const Blob* b = ws.get_blob(n);
    if (!b->is_initialized()) {
      out.push_back(n + ": empty");
      continue;
    }
    const Tensor* t = b->tensor_or_null();
    if (t == nullptr) {
      out.push_back(n + ": " + std::string(b->type_name()));
      continue;
    }
    std::string s = fmt::format("{}: {} {}", n, t->describe(), t->numel());
    if (t->dtype() == DType::String) {
      for (const auto& v : t->values<std::string>()) s += "|" + v;
    } else {
      s.append(reinterpret_cast<const char*>(t->raw_data()), t->nbytes());
    }
    out.push_back(std::move(s));
  }
  return out;
}

struct Outcome {
  std::vector<std::string> blobs;
  std::optional<SaveLoadStats> stats;
  std::string error;
};

// Loads into a workspace that already holds `before` (so that untouched blobs keep their value).
Outcome load(LoadSpec spec, std::size_t threads, const std::vector<std::string>& before = {}) {
  Workspace ws;
  for (const auto& n : before) ws.create_blob(n)->get_mutable<Tensor>() = Tensor::scalar<int32_t>(-1);
  spec.load_threads = threads;
  spec.absolute_path = true;
  spec.db_type = "minidb";
  Outcome o;
  try {
    o.stats = load_blobs(ws, spec);
  } catch (const Error& e) {
    o.error = e.what();
  }
  o.blobs = contents(ws);
  return o;
}

// Every thread count gives what one thread gives.
void expect_same_for_every_thread_count(const LoadSpec& spec, const std::vector<std::string>& before = {}) {
  const Outcome one = load(spec, 1, before);
  for (std::size_t threads : {2, 3, 4, 0}) {
    SCOPED_TRACE(fmt::format("load_threads = {}", threads));
    const Outcome many = load(spec, threads, before);
    EXPECT_EQ(many.error, one.error);
    ASSERT_EQ(many.blobs.size(), one.blobs.size());
    for (std::size_t i = 0; i < one.blobs.size(); ++i)
      EXPECT_TRUE(many.blobs[i] == one.blobs[i]) << one.blobs[i].substr(0, 40) << " vs " << many.blobs[i].substr(0, 40);
    ASSERT_EQ(many.stats.has_value(), one.stats.has_value());
    if (one.stats) {
      EXPECT_EQ(many.stats->blobs, one.stats->blobs);
      EXPECT_EQ(many.stats->bytes, one.stats->bytes);
    }
  }
}

// Flips one byte inside the payload of tensor `seed` (found by its unique bytes) in a minidb file.
void corrupt_payload_of(const std::string& path, int seed) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  const Tensor t = floats(64, seed);
  const std::string needle(reinterpret_cast<const char*>(t.raw_data()) + 16, 128);
  const auto at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos);
  bytes[at + 40] = static_cast<char>(bytes[at + 40] ^ 0x10);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A checkpoint of fill()'s blobs, saved to one minidb file: the setup of most tests here.
class ParallelLoad : public ::testing::Test {
 protected:
  ParallelLoad() { save(src, names, path); }
  TempDir dir;
  Workspace src;
  const std::vector<std::string> names = fill(src);
  const std::string path = dir / "ckpt.minidb";
};

TEST_F(ParallelLoad, EveryThreadCountLoadsTheSameBlobs) {
  LoadSpec all;
  all.dbs = {path};
  all.load_all = true;
  expect_same_for_every_thread_count(all);
  LoadSpec named;
  named.dbs = all.dbs;
  named.blob_names = names;
  expect_same_for_every_thread_count(named);
  const Outcome two = load(all, 2);
  EXPECT_EQ(two.error, "");
  Workspace expected;
  fill(expected);
  EXPECT_EQ(two.blobs, contents(expected));
}

TEST_F(ParallelLoad, SubsetsPrefixesAndEarlyStopsAreTheSame) {
  // A few names from both ends: the load stops reading once they are in.
  LoadSpec some;
  some.dbs = {path};
  some.blob_names = {"w01", "w02", "w20", "w23"};
  expect_same_for_every_thread_count(some, {"w03", "w21"});
  LoadSpec renamed = some;
  renamed.blob_names = {"a", "b", "c"};
  renamed.source_blob_names = {"w22", "w00", "w15"};
  expect_same_for_every_thread_count(renamed);
  LoadSpec prefixed;
  prefixed.dbs = some.dbs;
  prefixed.load_all = true;
  prefixed.add_prefix = "restored/";
  expect_same_for_every_thread_count(prefixed);
  LoadSpec missing = some;
  missing.blob_names = {"w01", "nope", "w22"};
  expect_same_for_every_thread_count(missing);
  missing.allow_incomplete = true;
  expect_same_for_every_thread_count(missing);
}

TEST_F(ParallelLoad, ChunkedTensorsAndSeveralDbsAreTheSame) {
  const std::vector<std::string> first(names.begin(), names.begin() + 12), second(names.begin() + 12, names.end());
  save(src, first, dir / "a.minidb");
  save(src, second, dir / "b.minidb", 50'000);  // the larger tensors in several chunks
  LoadSpec spec;
  spec.dbs = {dir / "a.minidb", dir / "b.minidb"};
  spec.load_all = true;
  expect_same_for_every_thread_count(spec);
  spec.load_all = false;
  spec.blob_names = names;
  expect_same_for_every_thread_count(spec);
  // The same blobs in both DBs: "Duplicate Key", whoever read them.
  save(src, first, dir / "c.minidb");
  spec.dbs = {dir / "a.minidb", dir / "c.minidb"};
  spec.blob_names = first;
  spec.load_all = true;
  const Outcome one = load(spec, 1);
  EXPECT_NE(one.error.find("Duplicate Key"), std::string::npos) << one.error;
  expect_same_for_every_thread_count(spec);
}

TEST_F(ParallelLoad, ACorruptRecordGivesTheSameErrorAndBlobsWhereverItIs) {
  for (int victim : {1, 11, 20, 22}) {  // in the caller's share and in the helpers'
    SCOPED_TRACE(fmt::format("corrupt tensor w{:02}", victim));
    save(src, names, path);  // each round corrupts a fresh copy
    corrupt_payload_of(path, victim);
    LoadSpec all;
    all.dbs = {path};
    all.load_all = true;
    const Outcome one = load(all, 1);
    EXPECT_NE(one.error.find("checksum"), std::string::npos) << one.error;
    EXPECT_NE(one.error.find(fmt::format("w{:02}", victim)), std::string::npos) << one.error;
    expect_same_for_every_thread_count(all);
    LoadSpec named;
    named.dbs = all.dbs;
    named.blob_names = names;
    // Two blobs hold values before the load (so the caller reads those itself): whatever the
    // load did not reach keeps its old value, whoever decoded the rest.
    expect_same_for_every_thread_count(named, {"w21", "w23"});
  }
}

TEST_F(ParallelLoad, PrefetcherHandsOutHelperRecordsInOrder) {
  auto db = open_db("minidb", path, DbMode::Read);
  ASSERT_TRUE(db->indexed());
  const auto all = [](std::string_view) { return true; };
  EXPECT_EQ(detail::LoadPrefetcher::start(*db, all, 1, 0), nullptr);                  // one thread: none
  EXPECT_EQ(detail::LoadPrefetcher::start(*db, all, 2, uint64_t{1} << 40), nullptr);  // too small
  auto prefetch = detail::LoadPrefetcher::start(*db, all, 2, 0);
  ASSERT_NE(prefetch, nullptr);
  EXPECT_GT(prefetch->prefetched(), 3u);
  std::size_t taken = 0, ordinal = 0;
  std::string last_key;
  for (auto c = db->new_cursor(); c->valid(); c->next(), ++ordinal) {
    const std::string key(c->key());
    if (detail::PrefetchedRecord* r = prefetch->take(ordinal, key)) {
      ++taken;
      last_key = key;
      EXPECT_EQ(r->header.key(), key);
      EXPECT_EQ(r->value_size, c->value_size());
      ASSERT_TRUE(r->blob.is_type<Tensor>());
      const Tensor& want = src.get_blob(r->header.name)->get<Tensor>();
      const Tensor& got = r->blob.get<Tensor>();
      ASSERT_EQ(got.nbytes(), want.nbytes());
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << key;
    }
  }
  // Every record handed to the helper came back decoded (nothing here is corrupt), and the last
  // one is the DB's last tensor of a fixed-size dtype.
  EXPECT_EQ(taken, prefetch->prefetched());
  EXPECT_EQ(last_key, "w23#%0");
  // A key that is not the record's gets nothing.
  auto again = detail::LoadPrefetcher::start(*db, all, 2, 0);
  ASSERT_NE(again, nullptr);
  ordinal = 0;
  for (auto c = db->new_cursor(); c->valid(); c->next(), ++ordinal)
    EXPECT_EQ(again->take(ordinal, std::string(c->key()) + "x"), nullptr);
}

TEST_F(ParallelLoad, HelpersDecodeOnlyIntoBlobsWithoutAValue) {
  LoadSpec spec;
  spec.dbs = {path};
  spec.blob_names = names;
  EXPECT_EQ(load(spec, 1).stats->read_ahead, 0u);
  const Outcome fresh = load(spec, 2);
  EXPECT_GT(fresh.stats->read_ahead, 3u);
  // Blobs that hold values: the caller frees each old value before reading its new one, so no
  // record is decoded ahead (old and new values are never both held)...
  const Outcome full = load(spec, 2, names);
  EXPECT_EQ(full.stats->read_ahead, 0u);
  EXPECT_EQ(full.blobs, fresh.blobs);
  // ...while the empty ones still are.
  const std::vector<std::string> first_half(names.begin(), names.begin() + 12);
  const Outcome half = load(spec, 2, first_half);
  EXPECT_GT(half.stats->read_ahead, 3u);
  EXPECT_EQ(half.blobs, fresh.blobs);
  spec.blob_names.clear();
  spec.load_all = true;
  EXPECT_GT(load(spec, 2).stats->read_ahead, 3u);
  EXPECT_EQ(load(spec, 2, names).stats->read_ahead, 0u);
}

TEST_F(ParallelLoad, TooManyThreadsIsRefusedClearly) {
  LoadSpec spec;
  spec.dbs = {path};
  spec.load_all = true;
  const Outcome most = load(spec, kMaxLoadThreads);
  EXPECT_EQ(most.error, "");
  EXPECT_EQ(most.blobs, load(spec, 1).blobs);
  const Outcome over = load(spec, kMaxLoadThreads + 1);
  EXPECT_NE(over.error.find("load_threads must be at most 64 (0: automatic), got 65"), std::string::npos) << over.error;
  EXPECT_TRUE(over.blobs.empty());  // refused before any blob was created
}

TEST(LoadPrefetcher, OtherBackendsAreNotIndexed) {
  TempDir dir;
  Workspace src;
  src.create_blob("x")->get_mutable<Tensor>() = floats(10, 1);
  for (const char* type : {"leveldb", "lmdb"}) {
    SaveSpec s;
    s.blob_names = {"x"};
    s.db = dir / type;
    s.db_type = type;
    s.absolute_path = true;
    save_blobs(src, s);
    auto db = open_db(type, dir / type, DbMode::Read);
    EXPECT_FALSE(db->indexed()) << type;
  }
}

}  // namespace
}  // namespace moka
