// lmdb backend: an LMDB environment directory holding data.mdb and lock.mdb (Caffe2's LMDB db_type),
// mapped with a 1 TiB sparse map; commits are synchronous. LMDB keeps no checksums (docs/db-backends.md).
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "moka/core/error.h"
#include "moka/storage/db.h"

namespace moka::detail {
namespace {

// Address space only: data.mdb grows as pages are written. Where the process cannot reserve that
// much (sanitizers, ulimit -v) the map is halved until it fits, down to kMinMapSize.
constexpr size_t kMapSize = size_t{1} << 40;
constexpr size_t kMinMapSize = size_t{1} << 30;

[[noreturn]] void fail(const std::string& path, const std::string& what, int rc) {
  const std::string message = fmt::format("lmdb db '{}': {}: {}", path, what, mdb_strerror(rc));
  if (rc == MDB_CORRUPTED || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_PAGE_NOTFOUND)
    throw CorruptData(message);
  throw RuntimeError(message);
}

// LMDB maps data.mdb and trusts it: a page past the end of a truncated file is not an error but a
// SIGBUS when touched. So before any page is read, the file must hold every page its meta page
// says is in use (pages 0..last_pgno).
void check_not_truncated(MDB_env* env, const std::string& path, const std::string& data) {
  MDB_envinfo info{};
  MDB_stat stat{};
  int rc = mdb_env_info(env, &info);
  if (rc == 0) rc = mdb_env_stat(env, &stat);
  if (rc != 0) fail(path, "cannot read the environment's meta page", rc);
  struct stat sb {};
  if (::stat(data.c_str(), &sb) != 0)
    throw RuntimeError(fmt::format("lmdb db '{}': cannot stat {}: {}", path, data, std::strerror(errno)));
  const unsigned long long needed =
      (static_cast<unsigned long long>(info.me_last_pgno) + 1) * static_cast<unsigned long long>(stat.ms_psize);
  if (static_cast<unsigned long long>(sb.st_size) < needed)
    throw CorruptData(
        fmt::format("lmdb db '{}': {} is truncated: {} bytes, but its meta page uses {} pages of {} "
                    "bytes ({} bytes)",
                    path, data, sb.st_size, info.me_last_pgno + 1, stat.ms_psize, needed));
}

MDB_val val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// The environment and its one unnamed database; shared by the DB, cursors and transactions.
struct Env {
  std::string path;
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  size_t map_size = 0;
  ~Env() {
    if (env) mdb_env_close(env);
  }
};

class LmdbCursor final : public Cursor {
 public:
  explicit LmdbCursor(std::shared_ptr<Env> env) : env_(std::move(env)) {
    int rc = mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn_);
    if (rc != 0) fail(env_->path, "cannot begin a read transaction", rc);
    rc = mdb_cursor_open(txn_, env_->dbi, &cursor_);
    if (rc != 0) {
      mdb_txn_abort(txn_);
      fail(env_->path, "cannot open a cursor", rc);
    }
    try {
      seek_to_first();
    } catch (...) {
      mdb_cursor_close(cursor_);
      mdb_txn_abort(txn_);
      throw;
    }
  }
  ~LmdbCursor() override {
    mdb_cursor_close(cursor_);
    mdb_txn_abort(txn_);
  }
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;

  void seek(std::string_view key) override {
    if (key.empty()) {  // LMDB rejects empty keys; every key is >= ""
      seek_to_first();
      return;
    }
    key_ = val(key);
    move(MDB_SET_RANGE);
  }
  void seek_to_first() override { move(MDB_FIRST); }
  void next() override {
    if (!valid_) throw RuntimeError("lmdb cursor: next() on an invalid cursor");
    move(MDB_NEXT);
  }
  std::string_view key() override {
    if (!valid_) throw RuntimeError("lmdb cursor: key() on an invalid cursor");
    return view(key_);
  }
  std::string_view value() override {
    if (!valid_) throw RuntimeError("lmdb cursor: value() on an invalid cursor");
    return view(value_);
  }
  bool valid() override { return valid_; }

 private:
  void move(MDB_cursor_op op) {
    const int rc = mdb_cursor_get(cursor_, &key_, &value_, op);
    if (rc == MDB_NOTFOUND) {
      valid_ = false;
      return;
    }
    if (rc != 0) {
      valid_ = false;
      fail(env_->path, "read failed", rc);
    }
    valid_ = true;
  }

  std::shared_ptr<Env> env_;
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  MDB_val key_{};
  MDB_val value_{};
  bool valid_ = false;
};

class LmdbTransaction final : public Transaction {
 public:
  explicit LmdbTransaction(std::shared_ptr<Env> env) : env_(std::move(env)) {}
  ~LmdbTransaction() override {
    if (txn_) mdb_txn_abort(txn_);
  }
  LmdbTransaction(const LmdbTransaction&) = delete;
  LmdbTransaction& operator=(const LmdbTransaction&) = delete;

  void do_put(std::string_view key, std::string_view value) override {
    check_usable();
    // Begun lazily: LMDB allows one write transaction per environment at a time.
    if (!txn_) {
      const int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn_);
      if (rc != 0) fail(env_->path, "cannot begin a write transaction", rc);
    }
    MDB_val k = val(key);
    MDB_val v = val(value);
    const int rc = mdb_put(txn_, env_->dbi, &k, &v, 0);
    if (rc == 0) return;
    mdb_txn_abort(txn_);
    txn_ = nullptr;
    failed_ = true;
    if (rc == MDB_BAD_VALSIZE)
      throw InvalidInput(
          fmt::format("lmdb db '{}': key '{}' of {} bytes is not allowed (LMDB keys are 1 to {} bytes); "
                      "the transaction was aborted",
                      env_->path, printable_key(key), key.size(), mdb_env_get_maxkeysize(env_->env)));
    if (rc == MDB_MAP_FULL)
      throw RuntimeError(fmt::format("lmdb db '{}' is full (map size {} GiB); the transaction was aborted", env_->path,
                                     env_->map_size >> 30));
    fail(env_->path, fmt::format("put of key '{}' failed; the transaction was aborted", printable_key(key)), rc);
  }

  void do_commit() override {
    check_usable();
    if (!txn_) return;
    MDB_txn* t = txn_;
    txn_ = nullptr;
    const int rc = mdb_txn_commit(t);  // frees the transaction whatever the result
    if (rc == 0) return;
    failed_ = true;
    if (rc == MDB_MAP_FULL)
      throw RuntimeError(
          fmt::format("lmdb db '{}' is full (map size {} GiB); the commit failed", env_->path, env_->map_size >> 30));
    fail(env_->path, "commit failed", rc);
  }

 private:
  void check_usable() const {
    if (failed_)
      throw RuntimeError(fmt::format("lmdb db '{}': the transaction failed earlier and was aborted", env_->path));
  }
  std::shared_ptr<Env> env_;
  MDB_txn* txn_ = nullptr;
  bool failed_ = false;
};

class LmdbDb final : public DB {
 public:
  LmdbDb(const std::string& path, DbMode mode) : DB("lmdb", path, mode) {
    const std::string data = path + "/data.mdb";
    const std::string lock = path + "/lock.mdb";
    struct stat sb {};
    const bool exists = ::stat(path.c_str(), &sb) == 0;
    if (exists && !S_ISDIR(sb.st_mode))
      throw RuntimeError(
          fmt::format("lmdb db '{}' ({} mode): the path exists and is not a directory", path, to_string(mode)));
    if (mode == DbMode::Read) {
      if (::stat(data.c_str(), &sb) != 0)
        throw NotFound(fmt::format("Cannot open db: {} (db_type lmdb, read mode): no {}", path, data));
    } else if (!exists) {
      if (::mkdir(path.c_str(), 0755) != 0)
        throw RuntimeError(fmt::format("lmdb db '{}': cannot create the directory: {}", path, std::strerror(errno)));
      fsync_parent_dir(path);
    } else if (mode == DbMode::New) {
      // Remove only LMDB's own files: the directory may hold other things.
      for (const auto& f : {data, lock}) {
        if (::unlink(f.c_str()) != 0 && errno != ENOENT)
          throw RuntimeError(fmt::format("lmdb db '{}': cannot remove {}: {}", path, f, std::strerror(errno)));
      }
    }

    env_ = std::make_shared<Env>();
    env_->path = path;
    // NOTLS: read transactions belong to cursors, which may move between threads.
    const unsigned flags = MDB_NOTLS | (mode == DbMode::Read ? MDB_RDONLY : 0u);
    int rc = 0;
    for (size_t map_size = kMapSize;; map_size /= 2) {
      rc = mdb_env_create(&env_->env);
      if (rc != 0) fail(path, "cannot create the environment", rc);
      rc = mdb_env_set_mapsize(env_->env, map_size);
      if (rc != 0) fail(path, "cannot set the map size", rc);
      rc = mdb_env_open(env_->env, path.c_str(), flags, 0644);
      env_->map_size = map_size;
      if (rc != ENOMEM || map_size <= kMinMapSize) break;
      mdb_env_close(env_->env);  // a failed open leaves a handle that must be discarded
      env_->env = nullptr;
    }
    if (rc != 0) fail(path, fmt::format("cannot open ({} mode)", to_string(mode)), rc);
    check_not_truncated(env_->env, path, data);
    if (mode != DbMode::Read) fsync_parent_dir(data);  // data.mdb's directory entry is durable

    MDB_txn* txn = nullptr;
    rc = mdb_txn_begin(env_->env, nullptr, mode == DbMode::Read ? MDB_RDONLY : 0u, &txn);
    if (rc != 0) fail(path, "cannot begin a transaction", rc);
    rc = mdb_dbi_open(txn, nullptr, 0, &env_->dbi);
    if (rc != 0) {
      mdb_txn_abort(txn);
      fail(path, "cannot open the database", rc);
    }
    rc = mdb_txn_commit(txn);
    if (rc != 0) fail(path, "cannot open the database", rc);
  }

  std::unique_ptr<Cursor> new_cursor() override { return std::make_unique<LmdbCursor>(env()); }

  std::unique_ptr<Transaction> new_transaction() override {
    if (mode() == DbMode::Read)
      throw RuntimeError(fmt::format("lmdb db '{}': cannot write to a DB opened in read mode", path()));
    return std::make_unique<LmdbTransaction>(env());
  }

  // Cursors and transactions share the environment; it closes when the last of them goes.
  void close() override { env_.reset(); }

 private:
  std::shared_ptr<Env> env() const {
    if (!env_) throw RuntimeError(fmt::format("lmdb db '{}': the DB is closed", path()));
    return env_;
  }
  std::shared_ptr<Env> env_;
};

}  // namespace

std::unique_ptr<DB> open_lmdb(const std::string& path, DbMode mode) { return std::make_unique<LmdbDb>(path, mode); }

}  // namespace moka::detail
