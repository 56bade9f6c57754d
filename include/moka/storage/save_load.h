// save_blobs / load_blobs: the C++ functions behind the Save, Load and DBExists operators (docs/save-load.md),
// usable directly (checkpoint managers, CachedReader, benchmarks). Format: docs/checkpoint-format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moka {

class Workspace;
class Blob;

/// What save_blobs writes and where (the arguments of Caffe2's Save operator).
struct SaveSpec {
  std::vector<std::string> blob_names;  ///< blobs to save, looked up in the workspace chain
  std::string db;                       ///< path of the DB (relative to root_folder unless absolute_path)
  std::string db_type;                  ///< "minidb", "leveldb", "lmdb" (case-insensitive)
  bool absolute_path = false;           ///< false: path = ws.root_folder() + "/" + db
  /// As Caffe2: a stored name containing it loses everything up to and including its first occurrence.
  std::string strip_prefix;
  std::vector<std::string> blob_name_overrides;  ///< stored names (same size as blob_names)
  int64_t chunk_size = 0;                        ///< tensor elements per chunk (0 default, -1 no chunking)
};

/// What load_blobs reads and into which blobs (the arguments of Caffe2's Load operator).
struct LoadSpec {
  std::vector<std::string> blob_names;  ///< output blobs (created in the workspace when missing)
  std::vector<std::string> dbs;         ///< one or more DB paths (Load's `db` or `dbs`)
  std::string db_type;
  bool absolute_path = false;
  std::string add_prefix;  ///< prepended to each stored name
  /// As Caffe2: a stored name containing it loses everything up to and including its first occurrence
  /// (applied before add_prefix).
  std::string strip_prefix;
  std::vector<std::string> source_blob_names;  ///< stored names to read, one per output blob
  bool load_all = false;                       ///< load every entry into a blob of its (prefixed) name
  bool allow_incomplete = false;               ///< missing blobs are not an error
  bool keep_device = false;                    ///< accepted for compatibility; moka has one device
  /// Threads that read and verify records (moka's own; Caffe2 loads on one). 0: as many as the
  /// caller may run on, at most kAutoLoadThreads, for a minidb of kParallelLoadMinBytes or more;
  /// 1: the calling thread only; at most kMaxLoadThreads. The result and any error are the same
  /// for every value.
  std::size_t load_threads = 0;
};

/// LoadSpec::load_threads = 0 uses at most this many threads...
inline constexpr std::size_t kAutoLoadThreads = 4;
/// ...and only for a DB whose wanted records hold at least this many bytes.
inline constexpr uint64_t kParallelLoadMinBytes = uint64_t{8} << 20;
/// The largest LoadSpec::load_threads accepted (InvalidInput above it).
inline constexpr std::size_t kMaxLoadThreads = 64;

/// Bytes and blobs moved by one save or load, for stats and benchmarks.
struct SaveLoadStats {
  uint64_t blobs = 0;
  uint64_t bytes = 0;       ///< serialized bytes written or read
  uint64_t read_ahead = 0;  ///< load: records that helper threads decoded (LoadSpec::load_threads)
};

/// @brief Saves blobs of `ws` into a new DB (replacing any DB at the path), durably: the DB is
/// committed (fsync'ed; minidb: temporary file + fsync + rename + directory fsync) before return.
/// Errors (InvalidInput/NotFound/RuntimeError) carry Caffe2's messages, e.g. "Duplicated input: X",
/// "Number of blobs and blob_name_overrides mismatch.", and name the DB path.
/// Thread-safety: the blobs must not be written while this runs.
SaveLoadStats save_blobs(Workspace& ws, const SaveSpec& spec);

/// @brief Loads blobs from one or more DBs into `ws` (see LoadSpec); each loaded blob is replaced
/// as a whole. Errors carry Caffe2's messages ("Duplicate Key X is found!", "Expected to load N blobs,
/// got M only.", ...) and name the DB path; on error no requested blob holds partly-loaded data.
/// Thread-safety: the output blobs must not be accessed while this runs.
SaveLoadStats load_blobs(Workspace& ws, const LoadSpec& spec);

/// @brief The path Save/Load use: `db` itself when absolute_path, else ws.root_folder() + "/" + db.
std::string resolve_db_path(const Workspace& ws, const std::string& db, bool absolute_path);

/// @brief Registers the storage layer's operators Save, Load and DBExists in OperatorRegistry::global().
/// Idempotent and thread-safe. exec's register_all_operators() calls it (so every net, plan check and
/// builder can use them); call it yourself before looking them up in the registry directly.
void register_storage_operators();

namespace detail {
/// Checks a SaveSpec's arguments (Caffe2's Save constructor checks) and returns the stored name of
/// each blob (after strip_prefix / blob_name_overrides). InvalidInput with Caffe2's message.
std::vector<std::string> save_stored_names(const SaveSpec& spec);
/// Checks a LoadSpec's arguments (Caffe2's Load constructor checks); InvalidInput with Caffe2's message.
void check_load_spec(const LoadSpec& spec);
/// save_blobs with the blobs already bound (the Save operator's inputs), written to `path`.
SaveLoadStats save_bound_blobs(const SaveSpec& spec, const std::string& path, const std::vector<const Blob*>& blobs);
/// load_blobs with the output blobs already bound (the Load operator's outputs; ignored with load_all,
/// which creates blobs in `ws`); `paths` are the resolved DB paths, one per spec.dbs entry.
SaveLoadStats load_bound_blobs(Workspace& ws, const LoadSpec& spec, const std::vector<std::string>& paths,
                               const std::vector<Blob*>& outputs);
}  // namespace detail

}  // namespace moka
