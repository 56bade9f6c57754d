// Unit tests of Save / Load / DBExists (docs/save-load.md) and save_blobs / load_blobs: every argument, every
// Caffe2 message, every dtype, counters and cursors, chunking, several dbs, each backend, and bad files.
#include "moka/storage/save_load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/operators/counter.h"
#include "moka/operators/tree_cursor.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "support/temp_dir.h"
#include "unit/operators/ops_test_util.h"

namespace moka {
namespace {

namespace fs = std::filesystem;

// Every temporary directory of this file is named moka-saveload-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-saveload") {}
};
using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;

std::vector<std::string> db_keys(const std::string& type, const std::string& path) {
  std::vector<std::string> keys;
  auto db = open_db(type, path, DbMode::Read);
  for (auto c = db->new_cursor(); c->valid(); c->next()) keys.emplace_back(c->key());
  return keys;
}

// Writes raw key/values (for crafted DBs: missing chunks, garbage values).
void put_raw(const std::string& type, const std::string& path,
             const std::vector<std::pair<std::string, std::string>>& kv) {
  auto db = open_db(type, path, DbMode::New);
  auto txn = db->new_transaction();
  for (const auto& [k, v] : kv) txn->put(k, v);
  txn->commit();
  db->close();
}

// The records serialize_blob makes for a blob, by DB key.
std::vector<std::pair<std::string, std::string>> records_of(const std::string& name, const Blob& blob,
                                                            SerializeOptions o = {}) {
  struct Capture final : ByteSink {
    std::vector<std::pair<std::string, std::string>> out;
    void begin_record(std::string_view key, uint64_t) override { out.emplace_back(std::string(key), ""); }
    void write(std::span<const std::byte> b) override {
      out.back().second.append(reinterpret_cast<const char*>(b.data()), b.size());
    }
  } sink;
  serialize_blob(name, blob, sink, o);
  return sink.out;
}

SaveSpec save_spec(std::vector<std::string> blobs, const std::string& db) {
  SaveSpec s;
  s.blob_names = std::move(blobs);
  s.db = db;
  s.db_type = "minidb";
  s.absolute_path = true;
  return s;
}

LoadSpec load_spec(std::vector<std::string> blobs, const std::string& db) {
  LoadSpec s;
  s.blob_names = std::move(blobs);
  s.dbs = {db};
  s.db_type = "minidb";
  s.absolute_path = true;
  return s;
}

class SaveLoad : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_ / name; }
  void save(std::vector<std::string> in, const std::string& db, std::vector<Argument> extra = {},
            const std::string& type = "minidb") {
    extra.push_back(make_arg("db", db));
    extra.push_back(make_arg("db_type", type));
    extra.push_back(make_arg("absolute_path", 1));
    run_op(ws_, "Save", std::move(in), {}, std::move(extra));
  }
  void load(std::vector<std::string> out, const std::string& db, std::vector<Argument> extra = {},
            const std::string& type = "minidb") {
    extra.push_back(make_arg("db", db));
    extra.push_back(make_arg("db_type", type));
    extra.push_back(make_arg("absolute_path", 1));
    run_op(ws_, "Load", {}, std::move(out), std::move(extra));
  }
  TempDir dir_;
  Workspace ws_;
};

// ------------------------------------------------------------------ round trips

void fill_every_kind(Workspace& ws) {
  feed(ws, "f32", Tensor::from_vector<float>({2, 3}, {1.5f, -2, 3, 4, 5, 6}));
  feed(ws, "f64", Tensor::vector<double>({1e300, -0.0, 3.25}));
  feed(ws, "i8", Tensor::vector<int8_t>({-128, 0, 127}));
  feed(ws, "i16", Tensor::vector<int16_t>({-32768, 7}));
  feed(ws, "i32", Tensor::vector<int32_t>({1, -2, 2147483647}));
  feed(ws, "i64", Tensor::vector<int64_t>({int64_t{1} << 62, -1}));
  feed(ws, "u8", Tensor::vector<uint8_t>({0, 255}));
  feed(ws, "b", Tensor::vector<bool>({true, false, true}));
  feed(ws, "s", Tensor::vector<std::string>({"", "hello", std::string("a\0b", 3), std::string(1000, 'x')}));
  feed(ws, "scalar", Tensor::scalar<int64_t>(42));
  feed(ws, "sscalar", Tensor::scalar<std::string>("one"));
  feed(ws, "empty", Tensor(DType::Float, {0, 3}));
  ws.create_blob("counter")->emplace<Counter>(-7);
  auto& cur = ws.create_blob("cursor")->emplace<TreeCursor>(std::vector<std::string>{"a", "b:lengths", "b:values"});
  cur.set_offsets({2, 5});
}

const std::vector<std::string> kAllBlobs = {"f32", "f64", "i8",     "i16",     "i32",   "i64",     "u8",
                                            "b",   "s",   "scalar", "sscalar", "empty", "counter", "cursor"};

void expect_same_blobs(Workspace& a, Workspace& b) {
  for (const auto& n : kAllBlobs) {
    SCOPED_TRACE(n);
    Blob& x = a.blob(n);
    Blob& y = b.blob(n);
    if (x.is_type<Tensor>()) {
      ASSERT_TRUE(y.is_type<Tensor>());
      EXPECT_EQ(x.get<Tensor>().dtype(), y.get<Tensor>().dtype());
      EXPECT_EQ(x.get<Tensor>().shape(), y.get<Tensor>().shape());
      EXPECT_TRUE(x.get<Tensor>() == y.get<Tensor>());
    } else if (x.is_type<Counter>()) {
      ASSERT_TRUE(y.is_type<Counter>());
      EXPECT_EQ(x.get<Counter>().retrieve(), y.get<Counter>().retrieve());
    } else {
      ASSERT_TRUE(y.is_type<TreeCursor>());
      EXPECT_EQ(x.get<TreeCursor>().field_names(), y.get<TreeCursor>().field_names());
      EXPECT_EQ(x.get<TreeCursor>().offsets(), y.get<TreeCursor>().offsets());
    }
  }
}

class SaveLoadBackend : public SaveLoad, public ::testing::WithParamInterface<std::string> {};

TEST_P(SaveLoadBackend, EveryKindOfBlobRoundTrips) {
  fill_every_kind(ws_);
  const std::string db = path("ckpt." + GetParam());
  save(kAllBlobs, db, {}, GetParam());
  Workspace fresh;
  run_op(fresh, "Load", {}, kAllBlobs,
         {make_arg("db", db), make_arg("db_type", GetParam()), make_arg("absolute_path", 1)});
  expect_same_blobs(ws_, fresh);
  // Loading over existing blobs replaces them as a whole.
  feed(ws_, "f32", Tensor::vector<int64_t>({9, 9, 9, 9, 9, 9, 9}));
  ws_.blob("counter").emplace<Counter>(100);
  Workspace ref;
  fill_every_kind(ref);
  load(kAllBlobs, db, {}, GetParam());
  expect_same_blobs(ref, ws_);
}

TEST_P(SaveLoadBackend, ChunkedTensorsAndKeys) {
  // 2.5M floats: three chunks of the default 1,000,000 elements.
  Tensor big(DType::Float, {2'500'000});
  for (int64_t i = 0; i < big.numel(); ++i) big.mutable_data<float>()[i] = static_cast<float>(i % 9973);
  feed(ws_, "big", big);
  std::vector<std::string> strs;
  for (int i = 0; i < 10'000; ++i) strs.push_back(std::to_string(i * 7));
  feed(ws_, "strs", Tensor::vector<std::string>(strs));
  ws_.create_blob("c")->emplace<Counter>(3);
  const std::string db = path("chunks." + GetParam());
  save({"big", "c"}, db, {}, GetParam());
  EXPECT_EQ(db_keys(GetParam(), db), (std::vector<std::string>{"big#%0", "big#%1", "big#%2", "c"}));
  // chunk_size 900: "strs" becomes 12 chunks, which key order returns as #%0, #%1, #%10, #%11, #%2, ...
  save({"strs"}, db, {make_arg("chunk_size", 900)}, GetParam());
  auto keys = db_keys(GetParam(), db);
  ASSERT_EQ(keys.size(), 12u);
  EXPECT_EQ(keys[1], "strs#%1");
  EXPECT_EQ(keys[2], "strs#%10");
  ws_.blob("strs").reset();
  load({"strs"}, db, {}, GetParam());
  EXPECT_TRUE(fetch(ws_, "strs") == Tensor::vector<std::string>(strs));

  save({"big"}, db, {make_arg("chunk_size", 300'000)}, GetParam());
  EXPECT_EQ(db_keys(GetParam(), db).size(), 9u);
  ws_.blob("big").reset();
  load({"big"}, db, {}, GetParam());
  EXPECT_TRUE(fetch(ws_, "big") == big);

  save({"big"}, db, {make_arg("chunk_size", -1)}, GetParam());
  EXPECT_EQ(db_keys(GetParam(), db), (std::vector<std::string>{"big#%0"}));
  ws_.blob("big").reset();
  load({"big"}, db, {}, GetParam());
  EXPECT_TRUE(fetch(ws_, "big") == big);
}

TEST_P(SaveLoadBackend, MissingDbNamesTheFile) {
  const std::string db = path("missing." + GetParam());
  const std::string msg = [&] {
    try {
      load({"a"}, db, {}, GetParam());
    } catch (const NotFound& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no NotFound";
    return std::string();
  }();
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("Load from"), std::string::npos) << msg;
}

TEST_P(SaveLoadBackend, DirectoryThatCannotBeCreated) {
  std::ofstream(path("plain_file")) << "x";
  const std::string db = path("plain_file/sub/ckpt." + GetParam());
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  expect_error<Error>([&] { save({"a"}, db, {}, GetParam()); }, {db.c_str(), "Save to"});
}

TEST_P(SaveLoadBackend, DbExists) {
  const std::string db = path("exists." + GetParam());
  auto exists = [&](std::vector<Argument> args) {
    run_op(ws_, "DBExists", {}, {"e"}, std::move(args));
    EXPECT_EQ(fetch(ws_, "e").shape(), std::vector<int64_t>{});
    return fetch(ws_, "e").item<bool>();
  };
  std::vector<Argument> args = {make_arg("db_name", db), make_arg("db_type", GetParam()), make_arg("absolute_path", 1)};
  EXPECT_FALSE(exists(args));
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  save({"a"}, db, {}, GetParam());
  EXPECT_TRUE(exists(args));
  // Relative to root_folder.
  ws_.set_root_folder(dir_.path());
  EXPECT_TRUE(exists({make_arg("db_name", "exists." + GetParam()), make_arg("db_type", GetParam())}));
  EXPECT_FALSE(exists({make_arg("db_name", "nope." + GetParam()), make_arg("db_type", GetParam())}));
}

INSTANTIATE_TEST_SUITE_P(Backends, SaveLoadBackend, ::testing::Values("minidb", "leveldb", "lmdb"));

// ------------------------------------------------------------------ Save arguments

TEST_F(SaveLoad, RelativePathUsesRootFolder) {
  feed(ws_, "a", Tensor::scalar<int64_t>(5));
  ws_.set_root_folder(dir_.path());
  run_op(ws_, "Save", {"a"}, {}, {make_arg("db", "rel.minidb"), make_arg("db_type", "MiniDB")});
  EXPECT_TRUE(fs::exists(path("rel.minidb")));
  EXPECT_EQ(resolve_db_path(ws_, "rel.minidb", false), dir_.path() + "/rel.minidb");
  EXPECT_EQ(resolve_db_path(ws_, "/x/y", true), "/x/y");
  ws_.blob("a").reset();
  run_op(ws_, "Load", {}, {"a"}, {make_arg("db", "rel.minidb"), make_arg("db_type", "minidb")});
  EXPECT_EQ(fetch(ws_, "a").item<int64_t>(), 5);
}

TEST_F(SaveLoad, StripPrefixAndOverrides) {
  feed(ws_, "scope/a", Tensor::scalar<int64_t>(1));
  feed(ws_, "x/scope/b", Tensor::scalar<int64_t>(2));
  ws_.create_blob("scope/c")->emplace<Counter>(3);
  const std::string db = path("p.minidb");
  // Caffe2 strips through the first occurrence, wherever it is.
  save({"scope/a", "x/scope/b", "scope/c"}, db, {make_arg("strip_prefix", "scope/")});
  EXPECT_EQ(db_keys("minidb", db), (std::vector<std::string>{"a#%0", "b#%0", "c"}));
  save({"scope/a", "x/scope/b"}, db, {make_arg("blob_name_overrides", std::vector<std::string>{"first", "second"})});
  EXPECT_EQ(db_keys("minidb", db), (std::vector<std::string>{"first#%0", "second#%0"}));
  load({"first", "second"}, db);
  EXPECT_EQ(fetch(ws_, "second").item<int64_t>(), 2);
}

TEST_F(SaveLoad, SaveArgumentErrors) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  feed(ws_, "p/a", Tensor::scalar<int64_t>(1));
  feed(ws_, "q/a", Tensor::scalar<int64_t>(1));
  const std::string db = path("e.minidb");
  expect_error<InvalidInput>([&] { run_op(ws_, "Save", {"a"}, {}, {make_arg("db_type", "minidb")}); },
                             {"Must specify a db name."});
  expect_error<InvalidInput>([&] { run_op(ws_, "Save", {"a"}, {}, {make_arg("db", db)}); },
                             {"Must specify a db type."});
  expect_error<InvalidInput>(
      [&] {
        save({"a", "p/a"}, db, {make_arg("blob_name_overrides", std::vector<std::string>{"x"})});
      },
      {"Number of blobs and blob_name_overrides mismatch."});
  expect_error<InvalidInput>(
      [&] {
        save({"a"}, db,
             {make_arg("blob_name_overrides", std::vector<std::string>{"x"}), make_arg("strip_prefix", "p")});
      },
      {"strip_prefix and blob_name_overrides are mutually exclusive."});
  expect_error<InvalidInput>(
      [&] {
        save({"p/a", "q/a"}, db, {make_arg("strip_prefix", "/")});
      },
      {"Duplicated input: a"});
  expect_error<InvalidInput>([&] { save({"a", "a"}, db); }, {"Duplicated input: a"});
  expect_error<InvalidInput>(
      [&] {
        save({"a", "p/a"}, db, {make_arg("blob_name_overrides", std::vector<std::string>{"x", "x"})});
      },
      {"Duplicated input: x"});
  expect_error<InvalidInput>([&] { save({"a"}, db, {make_arg("chunk_size", -2)}); }, {"chunk_size"});
  expect_error<NotFound>([&] { save({"a"}, db, {}, "nosuchdb"); },
                         {"Cannot find db implementation of type nosuchdb", db.c_str()});
  EXPECT_FALSE(fs::exists(db));
  // The direct API names a missing blob.
  expect_error<NotFound>([&] { save_blobs(ws_, save_spec({"nope"}, db)); },
                         {"Encountered a non-existing input blob: nope", db.c_str()});
}

TEST_F(SaveLoad, UnserializableBlobLeavesExistingDbAlone) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  ws_.create_blob("empty_blob");
  const std::string db = path("keep.minidb");
  save({"a"}, db);
  expect_error<InvalidInput>([&] { save({"a", "empty_blob"}, db); }, {"empty_blob", "uninitialized", db.c_str()});
  ws_.blob("a").reset();
  load({"a"}, db);
  EXPECT_EQ(fetch(ws_, "a").item<int64_t>(), 1);
}

TEST_F(SaveLoad, SaveReplacesTheWholeDb) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  feed(ws_, "b", Tensor::scalar<int64_t>(2));
  const std::string db = path("new.minidb");
  save({"a"}, db);
  save({"b"}, db);
  EXPECT_EQ(db_keys("minidb", db), (std::vector<std::string>{"b#%0"}));
  expect_error<NotFound>([&] { load({"a"}, db); },
                         {"Expected to load 1 blobs, got 0 only.", "Failed to load blob: a", db.c_str()});
}

TEST_F(SaveLoad, StatsCountBlobsAndBytes) {
  fill_every_kind(ws_);
  const std::string db = path("stats.minidb");
  const SaveLoadStats s = save_blobs(ws_, save_spec(kAllBlobs, db));
  EXPECT_EQ(s.blobs, kAllBlobs.size());
  uint64_t expected = 0;
  for (const auto& n : kAllBlobs) expected += serialized_size(n, ws_.blob(n));
  EXPECT_EQ(s.bytes, expected);
  Workspace fresh;
  const SaveLoadStats l = load_blobs(fresh, load_spec(kAllBlobs, db));
  EXPECT_EQ(l.blobs, s.blobs);
  EXPECT_EQ(l.bytes, s.bytes);
  expect_same_blobs(ws_, fresh);
}

// ------------------------------------------------------------------ Load arguments

TEST_F(SaveLoad, LoadPrefixesAndSourceNames) {
  feed(ws_, "scope/a", Tensor::scalar<int64_t>(1));
  feed(ws_, "b", Tensor::scalar<int64_t>(2));
  const std::string db = path("l.minidb");
  save({"scope/a", "b"}, db);
  load({"a"}, db, {make_arg("strip_prefix", "scope/")});
  EXPECT_EQ(fetch(ws_, "a").item<int64_t>(), 1);
  load({"pre/scope/a", "pre/b"}, db, {make_arg("add_prefix", "pre/")});
  EXPECT_EQ(fetch(ws_, "pre/b").item<int64_t>(), 2);
  load({"new/a"}, db, {make_arg("strip_prefix", "scope/"), make_arg("add_prefix", "new/")});
  EXPECT_EQ(fetch(ws_, "new/a").item<int64_t>(), 1);
  load({"x", "y"}, db, {make_arg("source_blob_names", std::vector<std::string>{"b", "scope/a"})});
  EXPECT_EQ(fetch(ws_, "x").item<int64_t>(), 2);
  EXPECT_EQ(fetch(ws_, "y").item<int64_t>(), 1);
  load({}, db, {make_arg("load_all", 1), make_arg("add_prefix", "all/")});
  EXPECT_EQ(fetch(ws_, "all/scope/a").item<int64_t>(), 1);
  EXPECT_EQ(fetch(ws_, "all/b").item<int64_t>(), 2);
  load({}, db, {make_arg("load_all", 1), make_arg("keep_device", 1)});
  EXPECT_EQ(fetch(ws_, "scope/a").item<int64_t>(), 1);
}

TEST_F(SaveLoad, LoadArgumentErrors) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  const std::string db = path("la.minidb");
  save({"a"}, db);
  expect_error<InvalidInput>([&] { run_op(ws_, "Load", {}, {"a"}, {make_arg("db_type", "minidb")}); },
                             {"Must specify a db name."});
  expect_error<InvalidInput>([&] { run_op(ws_, "Load", {}, {"a"}, {make_arg("db", db)}); },
                             {"Must specify a db type."});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws_, "Load", {}, {"a"},
               {make_arg("dbs", std::vector<std::string>{db, db}), make_arg("db_type", "minidb"),
                make_arg("absolute_path", 1)});
      },
      {"Duplicated db name: ", db.c_str()});
  expect_error<InvalidInput>(
      [&] {
        load({"a", "b"}, db, {make_arg("source_blob_names", std::vector<std::string>{"a"})});
      },
      {"Number of output blobs and source_blob_names mismatch."});
  expect_error<InvalidInput>(
      [&] {
        load({"a"}, db, {make_arg("source_blob_names", std::vector<std::string>{"a"}), make_arg("strip_prefix", "x")});
      },
      {"strip_prefix and source_blob_names are mutually exclusive."});
  expect_error<InvalidInput>(
      [&] {
        load({"a"}, db, {make_arg("source_blob_names", std::vector<std::string>{"a"}), make_arg("load_all", 1)});
      },
      {"cannot load_all_ while using source_blob_names."});
  expect_error<InvalidInput>([&] { load({"a", "a"}, db); }, {"Duplicated source blob name: a"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws_, "Load", {"a"}, {"b"}, {make_arg("db", db), make_arg("db_type", "minidb")});
      },
      {"DBReader", "not supported"});
  expect_error<NotFound>([&] { load({"a"}, db, {}, "nosuchdb"); }, {"Cannot find db implementation of type nosuchdb"});
}

TEST_F(SaveLoad, IncompleteLoads) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  const std::string db = path("inc.minidb");
  save({"a"}, db);
  ws_.blob("a").reset();
  expect_error<NotFound>(
      [&] {
        load({"a", "b", "c"}, db);
      },
      {"Expected to load 3 blobs, got 1 only.", "Failed to load blob: b", "Failed to load blob: c", db.c_str()});
  ws_.blob("a").reset();
  load({"a", "b"}, db, {make_arg("allow_incomplete", true)});
  EXPECT_EQ(fetch(ws_, "a").item<int64_t>(), 1);
  EXPECT_FALSE(ws_.blob("b").is_initialized());
}

TEST_F(SaveLoad, SeveralDbs) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  feed(ws_, "b", Tensor::vector<std::string>({"x", "y"}));
  const std::string db1 = path("one.minidb"), db2 = path("two.leveldb");
  save({"a"}, db1);
  save({"b"}, db2, {}, "leveldb");
  Workspace fresh;
  // Different types need two loads; same type from several files in one.
  run_op(fresh, "Load", {}, {"a"},
         {make_arg("dbs", std::vector<std::string>{db1}), make_arg("db_type", "minidb"), make_arg("absolute_path", 1)});
  EXPECT_EQ(fetch(fresh, "a").item<int64_t>(), 1);

  const std::string db3 = path("three.minidb");
  save({"b"}, db3);
  Workspace w2;
  run_op(w2, "Load", {}, {"a", "b"},
         {make_arg("dbs", std::vector<std::string>{db1, db3}), make_arg("db_type", "minidb"),
          make_arg("absolute_path", 1)});
  EXPECT_EQ(fetch(w2, "a").item<int64_t>(), 1);
  EXPECT_EQ(vals<std::string>(fetch(w2, "b")), (std::vector<std::string>{"x", "y"}));
  // With both `db` and `dbs`, dbs wins (as in Caffe2).
  Workspace w3;
  run_op(w3, "Load", {}, {"b"},
         {make_arg("db", db1), make_arg("dbs", std::vector<std::string>{db3}), make_arg("db_type", "minidb"),
          make_arg("absolute_path", 1)});
  EXPECT_EQ(vals<std::string>(fetch(w3, "b")), (std::vector<std::string>{"x", "y"}));

  // The same blob in two dbs.
  save({"a", "b"}, db3);
  Workspace w4;
  expect_error<InvalidInput>(
      [&] {
        run_op(w4, "Load", {}, {"a", "b"},
               {make_arg("dbs", std::vector<std::string>{db1, db3}), make_arg("db_type", "minidb"),
                make_arg("absolute_path", 1)});
      },
      {"Duplicate Key a is found!", db3.c_str()});
  expect_error<InvalidInput>(
      [&] {
        run_op(w4, "Load", {}, {},
               {make_arg("dbs", std::vector<std::string>{db1, db3}), make_arg("db_type", "minidb"),
                make_arg("absolute_path", 1), make_arg("load_all", 1)});
      },
      {"Duplicate Key a is found!"});
}

TEST_F(SaveLoad, OutputsAreCreatedInTheRunningWorkspace) {
  feed(ws_, "a", Tensor::scalar<int64_t>(1));
  feed(ws_, "b", Tensor::scalar<int64_t>(2));
  const std::string db = path("child.minidb");
  save({"a", "b"}, db);
  ws_.remove_blob("b");
  Workspace child(&ws_);
  run_op(child, "Load", {}, {"a", "b"},
         {make_arg("db", db), make_arg("db_type", "minidb"), make_arg("absolute_path", 1)});
  EXPECT_EQ(child.local_blobs(), std::vector<std::string>{"b"});  // "a" exists in the parent: loaded there
  EXPECT_FALSE(ws_.has_blob("b"));
  EXPECT_EQ(fetch(child, "b").item<int64_t>(), 2);
}

// ------------------------------------------------------------------ damaged or crafted DBs

TEST_F(SaveLoad, MissingChunkIsDataSizeMismatch) {
  Blob w;
  w.get_mutable<Tensor>() = Tensor(DType::Int32, {3000});
  auto recs = records_of("w", w, {.chunk_size = 1000});
  ASSERT_EQ(recs.size(), 3u);
  recs.erase(recs.begin() + 1);
  Blob c;
  c.emplace<Counter>(1);
  for (auto& r : records_of("c", c)) recs.push_back(r);
  const std::string db = path("partial.minidb");
  put_raw("minidb", db, recs);
  feed(ws_, "w", Tensor::scalar<int64_t>(99));  // must not survive
  expect_error<CorruptData>(
      [&] {
        load({"c", "w"}, db);
      },
      {"Data size mismatch for blob w. Expected: 3000 Read: 2000", db.c_str()});
  EXPECT_FALSE(ws_.blob("w").is_initialized());
  EXPECT_EQ(ws_.blob("c").get<Counter>().retrieve(), 1);  // complete blobs are kept
}

TEST_F(SaveLoad, DuplicatedBlobsAfterPrefixRules) {
  Blob c;
  c.emplace<Counter>(1);
  Blob t;
  t.get_mutable<Tensor>() = Tensor::scalar<int64_t>(1);
  std::vector<std::pair<std::string, std::string>> recs;
  for (auto& r : records_of("a/c", c)) recs.push_back(r);
  for (auto& r : records_of("b/c", c)) recs.push_back(r);
  for (auto& r : records_of("a/t", t)) recs.push_back(r);
  for (auto& r : records_of("b/t", t)) recs.push_back(r);
  const std::string db = path("dup.minidb");
  put_raw("minidb", db, recs);
  // (Load stops reading a db once every output is in, so ask for one more than the db holds.)
  expect_error<InvalidInput>(
      [&] {
        load({"c", "t", "missing"}, db, {make_arg("strip_prefix", "/")});
      },
      {"Blob duplicated: c"});
  EXPECT_FALSE(ws_.blob("c").is_initialized());
  expect_error<InvalidInput>(
      [&] {
        load({"t", "missing"}, db, {make_arg("strip_prefix", "/")});
      },
      {"Found an extra part for an already filled tensor: t"});
  EXPECT_FALSE(ws_.blob("t").is_initialized());
}

TEST_F(SaveLoad, UnrequestedEntriesAreNotRead) {
  Blob a;
  a.get_mutable<Tensor>() = Tensor::scalar<int64_t>(7);
  auto recs = records_of("a", a);
  recs.emplace_back("0junk", "not a record at all");  // sorts before "a#%0"
  const std::string db = path("junk.minidb");
  put_raw("minidb", db, recs);
  load({"a"}, db);
  EXPECT_EQ(fetch(ws_, "a").item<int64_t>(), 7);
  expect_error<CorruptData>([&] { load({"0junk"}, db); }, {"0junk", db.c_str()});
  // Trailing bytes after a record are corruption too.
  recs[0].second += "x";
  put_raw("minidb", db, recs);
  expect_error<CorruptData>([&] { load({"a"}, db); }, {"unexpected bytes", "a#%0", db.c_str()});
}

TEST_F(SaveLoad, TruncatedOrBitFlippedMinidbNamesTheFile) {
  Tensor big(DType::Int64, {50'000});
  for (int64_t i = 0; i < big.numel(); ++i) big.mutable_data<int64_t>()[i] = i;
  feed(ws_, "w", big);
  const std::string db = path("bad.minidb");
  save({"w"}, db, {make_arg("chunk_size", 10'000)});
  std::string bytes;
  {
    std::ifstream in(db, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [&](const std::string& b) { std::ofstream(db, std::ios::binary | std::ios::trunc) << b; };
  // A failed load leaves "w" either untouched (the file was refused before its first record) or
  // empty, never partly loaded.
  auto untouched_or_empty = [&](const Tensor& before) {
    return !ws_.blob("w").is_initialized() || fetch(ws_, "w") == before;
  };
  rewrite(bytes.substr(0, bytes.size() / 2));
  expect_error<Error>([&] { load({"w"}, db); }, {db.c_str()});
  EXPECT_TRUE(untouched_or_empty(big));
  for (std::size_t pos : {std::size_t{100}, bytes.size() / 3, bytes.size() - 200}) {
    std::string flipped = bytes;
    flipped[pos] = static_cast<char>(flipped[pos] ^ 0x10);
    rewrite(flipped);
    feed(ws_, "w", Tensor::scalar<int64_t>(1));
    expect_error<Error>([&] { load({"w"}, db); }, {db.c_str()});
    EXPECT_TRUE(untouched_or_empty(Tensor::scalar<int64_t>(1))) << "flip at " << pos;
  }
  rewrite(bytes);
  load({"w"}, db);
  EXPECT_TRUE(fetch(ws_, "w") == big);
}

// LMDB keeps no checksums of its own (docs/db-backends.md): a flipped bit in a stored value comes
// back from LMDB as is, and only the blob record's XXH3 catches it. The value's bytes are found by
// their pattern in data.mdb (LMDB stores a large value contiguously in overflow pages).
TEST_F(SaveLoad, BitFlippedLmdbValueIsCaughtByTheRecordChecksum) {
  Tensor w(DType::Int64, {4096});
  for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<int64_t>()[i] = 0x5a5a0000 + i;
  feed(ws_, "w", w);
  const std::string db = path("bad.lmdb");
  save({"w"}, db, {}, "lmdb");
  const std::string data = db + "/data.mdb";
  std::string bytes;
  {
    std::ifstream in(data, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const int64_t probe[2] = {0x5a5a0000 + 2000, 0x5a5a0000 + 2001};
  const std::size_t at = bytes.find(std::string(reinterpret_cast<const char*>(probe), sizeof probe));
  ASSERT_NE(at, std::string::npos) << "the value's bytes are not in " << data;
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at + 1));
    f.put(static_cast<char>(bytes[at + 1] ^ 0x04));
  }
  feed(ws_, "w", Tensor::scalar<int64_t>(1));
  expect_error<CorruptData>([&] { load({"w"}, db, {}, "lmdb"); }, {db.c_str(), "\"w\""});
  // As for minidb: the blob is left untouched or empty, never partly loaded.
  EXPECT_TRUE(!ws_.blob("w").is_initialized() || fetch(ws_, "w") == Tensor::scalar<int64_t>(1));
  {  // the flip undone, the same DB loads again
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at + 1));
    f.put(bytes[at + 1]);
  }
  load({"w"}, db, {}, "lmdb");
  EXPECT_TRUE(fetch(ws_, "w") == w);
}

}  // namespace
}  // namespace moka
