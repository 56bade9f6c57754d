// Manifests of committed checkpoints: digesting node DBs, atomic manifest writes, verification,
// choosing the resume epoch and retention (include/moka/job/checkpoint_manifest.h).
#include "moka/job/checkpoint_manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/io/db.h"

// Header-only xxHash, as in blob_serializer.cpp: nothing to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace moka {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::string_view kManifestPrefix = "moka-manifest.";
constexpr std::string_view kManifestSuffix = ".json";
constexpr std::string_view kManifestFormat = "moka-checkpoint-manifest";
constexpr int kManifestVersion = 1;

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

// Parses "moka-manifest.<epoch>.json"; nullopt for any other name.
std::optional<int64_t> epoch_of_manifest_name(std::string_view name) {
  if (!name.starts_with(kManifestPrefix) || !name.ends_with(kManifestSuffix)) return std::nullopt;
  name.remove_prefix(kManifestPrefix.size());
  name.remove_suffix(kManifestSuffix.size());
  if (name.empty() || name.front() == '-' || name.front() == '+') return std::nullopt;
  int64_t epoch = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), epoch);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  // Only the canonical spelling: "007" is not epoch 7's manifest.
  if (fmt::format("{}", epoch) != name) return std::nullopt;
  return epoch;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound(fmt::format("cannot open checkpoint manifest '{}': {}", path, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw RuntimeError(fmt::format("cannot read checkpoint manifest '{}'", path));
  return std::move(s).str();
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Deletes a node DB: a file (minidb) or a directory (LevelDB, LMDB).
void remove_db(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw RuntimeError(fmt::format("cannot delete checkpoint DB '{}': {}", path, ec.message()));
}

}  // namespace

std::string manifest_path(const std::string& dir, int64_t epoch) {
  return (fs::path(dir) / fmt::format("{}{}{}", kManifestPrefix, epoch, kManifestSuffix)).string();
}

std::string to_json(const CheckpointManifest& manifest) {
  Json files = Json::array();
  for (const auto& f : manifest.files) {
    files.push_back(Json{{"node", f.node},
                         {"db", f.db},
                         {"records", f.digest.records},
                         {"bytes", f.digest.bytes},
                         {"xxh3", hex64(f.digest.xxh3)}});
  }
  Json j{{"format", kManifestFormat},
         {"version", kManifestVersion},
         {"epoch", manifest.epoch},
         {"db_type", manifest.db_type},
         {"stop", manifest.stop},
         {"files", std::move(files)}};
  return j.dump(2) + "\n";
}

CheckpointManifest manifest_from_json(std::string_view text, std::string_view where) {
  auto bad = [&](std::string_view what) {
    return CorruptData(fmt::format("checkpoint manifest '{}' is invalid: {}", where, what));
  };
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(fmt::format("not JSON ({})", e.what()));
  }
  try {
    if (!j.is_object()) throw bad("not a JSON object");
    if (j.value("format", std::string()) != kManifestFormat) throw bad("\"format\" is not \"moka-checkpoint-manifest\"");
    if (!j.contains("version") || !j["version"].is_number_integer()) throw bad("no integer \"version\"");
    if (j["version"].get<int>() != kManifestVersion) {
      throw bad(fmt::format("version {} is not supported (this moka reads version {})", j["version"].get<int>(),
                            kManifestVersion));
    }
    CheckpointManifest m;
    if (!j.contains("epoch") || !j["epoch"].is_number_integer()) throw bad("no integer \"epoch\"");
    m.epoch = j["epoch"].get<int64_t>();
    if (!j.contains("db_type") || !j["db_type"].is_string()) throw bad("no string \"db_type\"");
    m.db_type = j["db_type"].get<std::string>();
    if (j.contains("stop")) {
      if (!j["stop"].is_boolean()) throw bad("\"stop\" is not a boolean");
      m.stop = j["stop"].get<bool>();
    }
    if (!j.contains("files") || !j["files"].is_array()) throw bad("no array \"files\"");
    for (const auto& f : j["files"]) {
      if (!f.is_object()) throw bad("an entry of \"files\" is not an object");
      CheckpointFile cf;
      if (!f.contains("node") || !f["node"].is_string()) throw bad("a file entry has no string \"node\"");
      cf.node = f["node"].get<std::string>();
      if (!f.contains("db") || !f["db"].is_string()) throw bad(fmt::format("file of node '{}' has no \"db\"", cf.node));
      cf.db = f["db"].get<std::string>();
      for (const char* key : {"records", "bytes"}) {
        if (!f.contains(key) || !f[key].is_number_unsigned()) {
          throw bad(fmt::format("file of node '{}' has no unsigned \"{}\"", cf.node, key));
        }
      }
      cf.digest.records = f["records"].get<uint64_t>();
      cf.digest.bytes = f["bytes"].get<uint64_t>();
      const std::string hex = f.value("xxh3", std::string());
      uint64_t x = 0;
      auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), x, 16);
      if (hex.size() != 16 || ec != std::errc() || end != hex.data() + hex.size()) {
        throw bad(fmt::format("file of node '{}' has no 16-digit hex \"xxh3\"", cf.node));
      }
      cf.digest.xxh3 = x;
      m.files.push_back(std::move(cf));
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
}

DbDigest digest_db(const std::string& db_type, const std::string& path) {
  auto db = open_db(db_type, path, DbMode::Read);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw RuntimeError("out of memory creating an XXH3 state");
  XXH3_64bits_reset(state.get());
  DbDigest d;
  for (auto c = db->new_cursor(); c->valid(); c->next()) {
    const std::string_view key = c->key();
    const std::string_view value = c->value();
    // Lengths first, so ("ab","c") and ("a","bc") digest differently.
    const uint64_t lens[2] = {key.size(), value.size()};
    XXH3_64bits_update(state.get(), lens, sizeof(lens));
    XXH3_64bits_update(state.get(), key.data(), key.size());
    XXH3_64bits_update(state.get(), value.data(), value.size());
    ++d.records;
    d.bytes += key.size() + value.size();
  }
  d.xxh3 = XXH3_64bits_digest(state.get());
  db->close();
  return d;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  std::random_device rd;
  const std::string tmp = fmt::format("{}.tmp-{:08x}", path, rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError(fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
  try {
    write_all(fd, bytes, tmp);
    if (::fsync(fd) != 0) throw RuntimeError(fmt::format("fsync of '{}' failed: {}", tmp, std::strerror(errno)));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw RuntimeError(fmt::format("cannot close '{}': {}", tmp, std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw RuntimeError(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(err)));
  }
  detail::fsync_parent_dir(path);
}

CheckpointManifest commit_checkpoint(const std::string& dir, int64_t epoch, const std::string& db_type,
                                     const std::vector<std::pair<std::string, std::string>>& node_dbs,
                                     bool stop) {
  if (epoch < 0) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: epochs are >= 0", epoch));
  if (node_dbs.empty()) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: no node DBs", epoch));
  CheckpointManifest m{.epoch = epoch, .db_type = db_type, .files = {}, .stop = stop};
  std::set<std::string> nodes;
  for (const auto& [node, db] : node_dbs) {
    if (!nodes.insert(node).second) {
      throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: node '{}' listed twice", epoch, node));
    }
    try {
      m.files.push_back({.node = node, .db = db, .digest = digest_db(db_type, db)});
    } catch (Error& e) {
      e.add_context(fmt::format("committing checkpoint epoch {} (node '{}')", epoch, node));
      throw;
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("cannot create checkpoint directory '{}': {}", dir, ec.message()));
  write_file_atomically(manifest_path(dir, epoch), to_json(m));
  return m;
}

std::vector<int64_t> committed_epochs(const std::string& dir) {
  std::vector<int64_t> epochs;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return epochs;
  for (const auto& entry : it) {
    if (auto e = epoch_of_manifest_name(entry.path().filename().string())) epochs.push_back(*e);
  }
  std::sort(epochs.begin(), epochs.end());
  return epochs;
}

CheckpointManifest verify_checkpoint(const std::string& dir, int64_t epoch) {
  const std::string path = manifest_path(dir, epoch);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw NotFound(fmt::format("checkpoint epoch {} is not committed: no manifest '{}'", epoch, path));
  }
  CheckpointManifest m = manifest_from_json(read_whole_file(path), path);
  if (m.epoch != epoch) {
    throw CorruptData(fmt::format("checkpoint manifest '{}' is invalid: it names epoch {}", path, m.epoch));
  }
  for (const auto& f : m.files) {
    DbDigest actual;
    try {
      actual = digest_db(m.db_type, f.db);
    } catch (Error& e) {
      throw CorruptData(fmt::format("checkpoint epoch {}: {} DB '{}' of node '{}' cannot be read: {}", epoch,
                                    m.db_type, f.db, f.node, e.what()));
    }
    if (actual != f.digest) {
      throw CorruptData(fmt::format(
          "checkpoint epoch {}: {} DB '{}' of node '{}' does not match manifest '{}' "
          "(records {} vs {}, bytes {} vs {}, xxh3 {} vs {})",
          epoch, m.db_type, f.db, f.node, path, actual.records, f.digest.records, actual.bytes, f.digest.bytes,
          hex64(actual.xxh3), hex64(f.digest.xxh3)));
    }
  }
  return m;
}

ResumeChoice find_resume_epoch(const std::string& dir) {
  ResumeChoice choice;
  const auto epochs = committed_epochs(dir);
  for (auto it = epochs.rbegin(); it != epochs.rend(); ++it) {
    try {
      choice.manifest = verify_checkpoint(dir, *it);
      choice.epoch = *it;
      break;
    } catch (const Error& e) {
      choice.skipped.emplace_back(*it, e.what());
    }
  }
  return choice;
}

void uncommit_checkpoint(const std::string& dir, int64_t epoch) {
  const std::string path = manifest_path(dir, epoch);
  if (::unlink(path.c_str()) == 0) {
    detail::fsync_parent_dir(path);
  } else if (errno != ENOENT) {
    throw RuntimeError(fmt::format("cannot uncommit checkpoint epoch {}: removing {} failed: {}", epoch, path,
                                   std::strerror(errno)));
  }
}

std::vector<int64_t> apply_retention(const std::string& dir, const RetentionPolicy& policy) {
  if (policy.keep_last < 0 || policy.keep_every < 0) {
    throw InvalidInput(fmt::format("retention: keep_last ({}) and keep_every ({}) must be >= 0", policy.keep_last,
                                   policy.keep_every));
  }
  std::vector<int64_t> deleted;
  if (policy.keep_last == 0) return deleted;
  const auto epochs = committed_epochs(dir);
  const size_t n = epochs.size();
  const size_t keep_from = n > static_cast<size_t>(policy.keep_last) ? n - static_cast<size_t>(policy.keep_last) : 0;
  for (size_t i = 0; i < keep_from && i + 1 < n; ++i) {  // i + 1 < n: never the newest
    const int64_t epoch = epochs[i];
    if (policy.keep_every > 0 && epoch % policy.keep_every == 0) continue;
    const std::string path = manifest_path(dir, epoch);
    CheckpointManifest m;
    try {
      m = manifest_from_json(read_whole_file(path), path);
    } catch (const Error&) {
      continue;  // unreadable manifest: keep everything of it for inspection
    }
    // Uncommit first: once the manifest is gone the epoch no longer exists for resume, so a crash
    // while its DBs are being deleted cannot leave a committed epoch with missing files.
    if (::unlink(path.c_str()) != 0) {
      throw RuntimeError(fmt::format("cannot delete checkpoint manifest '{}': {}", path, std::strerror(errno)));
    }
    detail::fsync_parent_dir(path);
    for (const auto& f : m.files) remove_db(f.db);
    deleted.push_back(epoch);
  }
  return deleted;
}

}  // namespace moka
