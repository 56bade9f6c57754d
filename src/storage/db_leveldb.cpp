// leveldb backend: a LevelDB directory (Caffe2's LevelDB db_type) with paranoid checks, checksum-verified
// reads and synchronous (fsync'ed) commits.
#include <fmt/format.h>
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#include <sys/stat.h>

#include <memory>
#include <string>

#include "moka/core/error.h"
#include "moka/storage/db.h"

namespace moka::detail {
namespace {

leveldb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }
std::string_view view(const leveldb::Slice& s) { return {s.data(), s.size()}; }

[[noreturn]] void fail(const std::string& path, const std::string& what, const leveldb::Status& st) {
  const std::string text = fmt::format("leveldb db '{}': {}: {}", path, what, st.ToString());
  if (st.IsCorruption()) throw CorruptData(text + " (the database is corrupt)");
  throw RuntimeError(text);
}

class LevelCursor final : public Cursor {
 public:
  LevelCursor(std::shared_ptr<leveldb::DB> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;  // values are read once (Load); caching them would only evict other blocks
    it_.reset(db_->NewIterator(ro));
    seek_to_first();
  }
  void seek(std::string_view key) override {
    it_->Seek(slice(key));
    check();
  }
  void seek_to_first() override {
    it_->SeekToFirst();
    check();
  }
  void next() override {
    if (!it_->Valid()) throw RuntimeError("leveldb cursor: next() on an invalid cursor");
    it_->Next();
    check();
  }
  std::string_view key() override {
    if (!it_->Valid()) throw RuntimeError("leveldb cursor: key() on an invalid cursor");
    return view(it_->key());
  }
  std::string_view value() override {
    if (!it_->Valid()) throw RuntimeError("leveldb cursor: value() on an invalid cursor");
    return view(it_->value());
  }
  bool valid() override { return it_->Valid(); }

 private:
  // An iterator that stops early because of a bad block reports it only through status().
  void check() {
    if (!it_->status().ok()) fail(path_, "read failed", it_->status());
  }
  std::shared_ptr<leveldb::DB> db_;  // declared first: the iterator must go before the DB
  std::string path_;
  std::unique_ptr<leveldb::Iterator> it_;
};

class LevelTransaction final : public Transaction {
 public:
  LevelTransaction(std::shared_ptr<leveldb::DB> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  void do_put(std::string_view key, std::string_view value) override { batch_.Put(slice(key), slice(value)); }
  void do_commit() override {
    leveldb::WriteOptions wo;
    wo.sync = true;  // durable on return, like the other backends
    const leveldb::Status st = db_->Write(wo, &batch_);
    batch_.Clear();
    if (!st.ok()) fail(path_, "commit failed", st);
  }

 private:
  std::shared_ptr<leveldb::DB> db_;
  std::string path_;
  leveldb::WriteBatch batch_;
};

class LevelDb final : public DB {
 public:
  LevelDb(const std::string& path, DbMode mode) : DB("leveldb", path, mode) {
    leveldb::Options options;
    // Caffe2's settings, plus paranoid checks so corruption found at open is an error.
    options.block_size = 65536;
    options.write_buffer_size = 64 << 20;
    options.max_open_files = 100;
    options.paranoid_checks = true;
    options.create_if_missing = mode != DbMode::Read;
    struct stat sb {};
    const bool exists = ::stat(path.c_str(), &sb) == 0;
    if (exists && !S_ISDIR(sb.st_mode))
      throw RuntimeError(
          fmt::format("leveldb db '{}' ({} mode): the path exists and is not a directory", path, to_string(mode)));
    if (mode == DbMode::Read && !exists)
      throw NotFound(fmt::format("Cannot open db: {} (db_type leveldb, read mode): no such directory", path));
    if (mode == DbMode::New && exists) {
      // DestroyDB removes only LevelDB's own files (and the directory if that empties it).
      const leveldb::Status st = leveldb::DestroyDB(path, options);
      if (!st.ok()) fail(path, "cannot remove the existing database", st);
    }
    leveldb::DB* raw = nullptr;
    const leveldb::Status st = leveldb::DB::Open(options, path, &raw);
    if (!st.ok()) {
      if (mode == DbMode::Read && st.IsInvalidArgument())
        throw NotFound(fmt::format("Cannot open db: {} (db_type leveldb, read mode): {}", path, st.ToString()));
      fail(path, fmt::format("cannot open ({} mode)", to_string(mode)), st);
    }
    db_.reset(raw);
    if (mode != DbMode::Read) fsync_parent_dir(path);  // a directory LevelDB just created is durable
  }

  std::unique_ptr<Cursor> new_cursor() override { return std::make_unique<LevelCursor>(open_db(), path()); }

  std::unique_ptr<Transaction> new_transaction() override {
    if (mode() == DbMode::Read)
      throw RuntimeError(fmt::format("leveldb db '{}': cannot write to a DB opened in read mode", path()));
    return std::make_unique<LevelTransaction>(open_db(), path());
  }

  // Cursors and transactions share the handle, so the DB stays open until the last of them goes.
  // A writer first moves what its commits left in the memtable (and only in the log) into a table:
  // otherwise every later open, a reader's included, replays the whole log and writes that table
  // itself (for a 256 MiB save, nine tenths of the load's time). The range ["", ""] overlaps no
  // table (keys are non-empty blob names), so this flushes the memtable and compacts nothing.
  // Committed data is already durable in the synced log, so a failed flush loses nothing.
  void close() override {
    if (db_ && mode() != DbMode::Read) {
      const leveldb::Slice none;
      db_->CompactRange(&none, &none);
    }
    db_.reset();
  }

 private:
  std::shared_ptr<leveldb::DB> open_db() const {
    if (!db_) throw RuntimeError(fmt::format("leveldb db '{}': the DB is closed", path()));
    return db_;
  }
  std::shared_ptr<leveldb::DB> db_;
};

}  // namespace

std::unique_ptr<DB> open_leveldb(const std::string& path, DbMode mode) { return std::make_unique<LevelDb>(path, mode); }

}  // namespace moka::detail
