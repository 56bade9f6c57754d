// The key/value database interface behind Save and Load (Caffe2's caffe2/core/db.h): DB, Cursor,
// Transaction, the db_type registry (minidb, leveldb, lmdb) and db_exists. Formats: docs/db-backends.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moka {

/// How a DB is opened (Caffe2's db::Mode).
enum class DbMode {
  New,    ///< create a fresh, empty DB; an existing one at the path is replaced
  Write,  ///< open an existing DB to add to it, creating it when missing
  Read,   ///< open an existing DB read-only; NotFound when there is none
};

/// "new", "write" or "read".
std::string_view to_string(DbMode mode);

/// @brief A position in a DB's key order (Caffe2's db::Cursor).
///
/// Every backend iterates keys in bytewise lexicographic order (memcmp, a shorter key before any
/// longer key it prefixes). key() and value() return views that stay valid until the next
/// seek/seek_to_first/next call or the cursor's destruction. Corruption found while reading
/// throws moka::RuntimeError naming the file (and, for minidb, the record).
/// @code
///   auto db = moka::open_db("minidb", "/tmp/x.minidb", moka::DbMode::Read);
///   for (auto c = db->new_cursor(); c->valid(); c->next()) use(c->key(), c->value());
/// @endcode
/// Thread-safety: one thread at a time per cursor; different cursors of a DB opened in Read mode
/// may be used from different threads.
class Cursor {
 public:
  virtual ~Cursor() = default;
  /// @brief Positions at the first key >= key (invalid when there is none).
  virtual void seek(std::string_view key) = 0;
  /// @brief Positions at the first key (invalid when the DB is empty).
  virtual void seek_to_first() = 0;
  /// @brief Moves to the next key; requires valid().
  virtual void next() = 0;
  /// @brief The current key; requires valid().
  virtual std::string_view key() = 0;
  /// @brief The current value (read and verified on first access for minidb); requires valid().
  virtual std::string_view value() = 0;
  /// @brief The current value, checked like value() except that the backend may leave out the
  /// checksum over the value bytes themselves; requires valid().
  ///
  /// Only for callers whose values carry their own checksum over every byte and who verify it
  /// before the data is used (load_blobs: a blob record's header and payload checksums cover all
  /// of it, and bytes after the record are rejected). It saves a pass over the data. minidb still
  /// checks the record header, the lengths and the key; other backends return value().
  virtual std::string_view value_unhashed() { return value(); }
  /// @brief Size of the current value; requires valid().
  virtual uint64_t value_size() { return value_unhashed().size(); }
  /// @brief Copies value bytes [offset, offset + dst.size()) into dst, checked like
  /// value_unhashed() (the caller verifies the value bytes); requires valid() and a range inside
  /// the value (RuntimeError otherwise).
  ///
  /// Lets a caller read a large value straight into its destination: minidb reads the file into
  /// dst (pread, as a plain read() would) instead of handing out a view that must then be copied.
  virtual void read_value(uint64_t offset, std::span<std::byte> dst) {
    const std::string_view v = value_unhashed();
    if (offset > v.size() || dst.size() > v.size() - offset) throw_bad_value_range(offset, dst.size(), v.size());
    if (!dst.empty()) std::memcpy(dst.data(), v.data() + offset, dst.size());
  }
  /// @brief Whether the cursor is positioned at an entry.
  virtual bool valid() = 0;

 protected:
  /// RuntimeError for a read_value range outside the value.
  [[noreturn]] static void throw_bad_value_range(uint64_t offset, uint64_t n, uint64_t size);
};

/// @brief A batch of writes that becomes durable and visible atomically on commit()
/// (Caffe2's db::Transaction).
///
/// After commit() returns, every put() since the previous commit is on stable storage and a DB
/// opened afterwards sees it. Destroying a transaction without commit() discards its puts. A
/// put() of an existing key replaces its value. The transaction can be reused after commit().
/// Thread-safety: one thread at a time; at most one live transaction per DB.
class Transaction {
 public:
  virtual ~Transaction() = default;
  /// @brief Stages key -> value (both arbitrary bytes; see docs/db-backends.md for key limits).
  void put(std::string_view key, std::string_view value) {
    if (open_) throw_put_open("put");
    do_put(key, value);
  }
  /// @brief put(key, the concatenation of `pieces`), without the caller joining the pieces first.
  /// The pieces are read during the call only. minidb writes them without an intermediate copy;
  /// the default joins them and calls put().
  void put_pieces(std::string_view key, std::span<const std::string_view> pieces) {
    if (open_) throw_put_open("put_pieces");
    do_put_pieces(key, pieces);
  }
  /// @brief A put whose value arrives in parts: begin_put(key, value_size), then put_part() until
  /// exactly value_size bytes have arrived, then end_put(). Each part is read during the call only,
  /// so a caller can hand over a large value piece by piece while each piece is still in cache.
  /// minidb hashes each part and copies it into its write buffer as it comes (save_blobs' path: the
  /// bytes cross memory once, and a writer thread of the DB writes full buffers meanwhile); the
  /// default collects the parts and puts the whole value at end_put().
  ///
  /// Errors (RuntimeError naming the key): begin_put, put, put_pieces or commit while a put is open;
  /// put_part or end_put with none open; a part beyond value_size, or end_put before value_size
  /// bytes arrived — these two abandon the put (nothing of it stays staged). A put left open (an
  /// exception between the calls) is dropped with its transaction, or by the end_put() that
  /// reports it short.
  void begin_put(std::string_view key, uint64_t value_size);
  /// @brief The next part of the value begun by begin_put().
  void put_part(std::string_view part);
  /// @brief Stages the value begun by begin_put(); see begin_put().
  void end_put();
  /// @brief Makes the staged puts durable and visible (fsync'ed; minidb: atomic rename).
  void commit() {
    if (open_) throw_put_open("commit");
    do_commit();
  }

 protected:
  // What a backend implements. The public calls above check the rules first, so these see only
  // well-formed sequences: do_begin_put, do_put_part... (exactly the declared bytes), then
  // do_end_put or do_abandon_put.
  virtual void do_put(std::string_view key, std::string_view value) = 0;
  virtual void do_commit() = 0;
  /// Default: joins the pieces and calls do_put().
  virtual void do_put_pieces(std::string_view key, std::span<const std::string_view> pieces);
  /// Default for the streamed put: collect the parts, do_put() at the end.
  virtual void do_begin_put(std::string_view key, uint64_t value_size);
  virtual void do_put_part(std::string_view part);
  virtual void do_end_put(std::string_view key);
  virtual void do_abandon_put() noexcept;

 private:
  [[noreturn]] void throw_put_open(std::string_view call) const;
  // The open streamed put.
  bool open_ = false;
  std::string open_key_;
  uint64_t declared_ = 0;
  uint64_t got_ = 0;
  std::string staged_;  // the default's collected value
};

/// @brief An open key/value database (Caffe2's db::DB).
///
/// Thread-safety: not thread-safe; use one DB object from one thread at a time (cursors of a
/// Read-mode DB excepted, see Cursor). Do not open the same LevelDB or LMDB path twice at once in
/// one process (the libraries forbid it).
class DB {
 public:
  virtual ~DB() = default;
  /// @brief A cursor positioned at the first key.
  virtual std::unique_ptr<Cursor> new_cursor() = 0;
  /// @brief A transaction; RuntimeError when the DB was opened in Read mode.
  virtual std::unique_ptr<Transaction> new_transaction() = 0;
  /// @brief Releases the DB. minidb in New/Write mode publishes an empty DB when nothing was
  /// committed, so that New + close() always leaves a DB at the path. Idempotent.
  virtual void close() = 0;
  /// @brief Reads everything back and checks every checksum the backend has; RuntimeError naming
  /// the file on corruption. minidb also checks its whole-file checksum; LMDB has no checksums.
  virtual void verify();
  /// @brief Whether keys and value sizes come from an in-memory index, so that walking a cursor
  /// with key() and value_size() reads no values (minidb in Read mode). Parallel load uses it.
  virtual bool indexed() const { return false; }

  const std::string& db_type() const { return db_type_; }
  const std::string& path() const { return path_; }
  DbMode mode() const { return mode_; }

 protected:
  DB(std::string db_type, std::string path, DbMode mode)
      : db_type_(std::move(db_type)), path_(std::move(path)), mode_(mode) {}

 private:
  std::string db_type_;
  std::string path_;
  DbMode mode_;
};

/// Opens a DB of a registered type: (path, mode) -> DB; throws moka::Error subclasses.
using DbFactory = std::function<std::unique_ptr<DB>(const std::string& path, DbMode mode)>;

/// @brief Opens the DB at path with the backend registered as db_type (case-insensitive:
/// "minidb"/"MiniDB", "leveldb"/"LevelDB", "lmdb"/"LMDB").
///
/// Errors, each naming the db_type and path: NotFound for an unknown db_type (listing the known
/// ones) and for a missing DB in Read mode; RuntimeError when the file or directory cannot be
/// created, or is truncated or corrupt.
/// @code
///   auto db = moka::open_db("leveldb", "/data/ckpt.leveldb", moka::DbMode::New);
///   auto txn = db->new_transaction();
///   txn->put("w", bytes);
///   txn->commit();
///   db->close();
/// @endcode
/// Thread-safety: thread-safe.
std::unique_ptr<DB> open_db(const std::string& db_type, const std::string& path, DbMode mode);

/// @brief Whether a readable DB of db_type exists at path (tries to open it in Read mode, like
/// Caffe2's db::DBExists). NotFound for an unknown db_type (Caffe2 would return false).
/// Thread-safety: thread-safe.
bool db_exists(const std::string& db_type, const std::string& path);

/// @brief Registers (or replaces) a backend under name (stored lower-case).
/// Thread-safety: thread-safe.
void register_db_type(const std::string& name, DbFactory factory);

/// @brief The registered db_type names, lower-case and sorted.
/// Thread-safety: thread-safe.
std::vector<std::string> registered_db_types();

namespace detail {
std::unique_ptr<DB> open_minidb(const std::string& path, DbMode mode);
std::unique_ptr<DB> open_leveldb(const std::string& path, DbMode mode);
std::unique_ptr<DB> open_lmdb(const std::string& path, DbMode mode);
/// Key bytes for messages: printable ASCII as is, others as \xNN, at most 64 bytes then "...".
std::string printable_key(std::string_view key);
/// fsyncs the directory that holds path ("." when it has no slash); RuntimeError naming it.
void fsync_parent_dir(const std::string& path);
}  // namespace detail

}  // namespace moka
