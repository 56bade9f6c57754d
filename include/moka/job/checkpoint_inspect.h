// Looking inside a checkpoint directory without changing it: its epochs (committed or not, and why, sizes, ages,
// what retention keeps), the blobs of one node's DB (dtype, shape, bytes, checksum), and a check of every file and
// record — what `moka checkpoint ls|inspect|verify|blob` print (docs/cli.md, `moka checkpoint`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moka/job/checkpoint_manifest.h"

namespace moka {

/// @brief One epoch found in a checkpoint directory.
struct CheckpointEpochListing {
  int64_t epoch = 0;
  bool committed = false;            ///< it has a manifest
  std::string db_type{};             ///< from the manifest (committed only)
  bool stop = false;                 ///< the manifest's stop flag: resuming here runs no further epoch
  std::vector<std::string> nodes{};  ///< the nodes it has a DB of (the manifest's, else the files found)
  uint64_t bytes = 0;                ///< on disk: its manifest and node DBs
  double age_s = 0;                  ///< seconds since its newest file was written
  /// "ok" for a committed epoch that verifies; otherwise why it cannot be resumed from: the
  /// verification error, or "not committed: no manifest (a save that did not finish)".
  std::string status{};
  bool usable() const { return committed && status == "ok"; }
  bool kept = true;  ///< retention (the policy given) keeps it; uncommitted epochs are never deleted by it
};

/// @brief Every epoch of `dir`, ascending: committed epochs (verified when `verify`) and node DBs
/// without a manifest (`<node>.<epoch>` files that no manifest names). NotFound when dir does not
/// exist, InvalidInput when it is not a directory. Reads only; `policy` only marks what it keeps.
std::vector<CheckpointEpochListing> list_checkpoint_dir(const std::string& dir, const RetentionPolicy& policy = {},
                                                        bool verify = true);

/// @brief One blob stored in a node DB.
struct CheckpointBlobListing {
  std::string name{};
  std::string type{};            ///< "tensor" or the stored type name (moka.Counter, moka.TreeCursor, ...)
  std::string dtype{};           ///< tensors only
  std::vector<int64_t> shape{};  ///< tensors only
  uint64_t records = 0;          ///< DB entries (chunks)
  uint64_t bytes = 0;            ///< stored bytes (keys and values)
  uint64_t xxh3 = 0;             ///< XXH3-64 of its stored values, in key order
  std::string problem{};         ///< empty, or why its records do not decode (CorruptData's message)
};

/// @brief The blobs of the DB at `path`, by name: each decoded in full (every checksum checked),
/// one at a time. A blob whose records do not decode is listed with its problem; a DB that cannot
/// be opened or walked throws (naming the path).
std::vector<CheckpointBlobListing> inspect_checkpoint_db(const std::string& db_type, const std::string& path);

/// @brief One problem `verify_checkpoint_dir` found.
struct CheckpointProblem {
  int64_t epoch = 0;
  std::string file{};    ///< the manifest or DB path
  std::string record{};  ///< the blob whose records are bad; empty for a whole-file problem
  std::string message{};
};

/// @brief Checks every committed epoch of `dir`: its manifest, each node DB against the manifest's
/// digest, and every record of every DB (so a bad file names each bad blob). Uncommitted DBs are
/// not problems (list_checkpoint_dir shows them). Empty: everything verifies.
std::vector<CheckpointProblem> verify_checkpoint_dir(const std::string& dir);

}  // namespace moka
