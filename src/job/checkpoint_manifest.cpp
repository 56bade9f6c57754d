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
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moka/core/error.h"
#include "moka/defs/definition_file.h"
#include "moka/storage/db.h"

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
// Version 2: files named relative to the directory, the job digest, the manifest's own checksum.
constexpr int kManifestVersion = 2;

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

// The manifest's own checksum: XXH3-64 of the compact JSON of every field but "checksum", in the
// order written (ordered_json keeps the order it parsed). The same values give the same text on
// both sides, whatever whitespace or escapes a person's editor wrote.
std::string manifest_checksum(const Json& without_checksum) {
  const std::string body = without_checksum.dump(-1, ' ', false, Json::error_handler_t::replace);
  return hex64(XXH3_64bits(body.data(), body.size()));
}

// Parses a 16-digit lower- or upper-case hex number.
std::optional<uint64_t> parse_hex64(const std::string& hex) {
  uint64_t x = 0;
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), x, 16);
  if (hex.size() != 16 || ec != std::errc() || end != hex.data() + hex.size()) return std::nullopt;
  return x;
}

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

// A manifest lists a few hundred bytes per node: 64 MiB is a million nodes. A bigger file (or a
// FIFO, /dev/zero planted in its place) is damage, refused before it is read into memory.
constexpr std::size_t kMaxManifestBytes = kMaxDefinitionFileBytes;

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) throw NotFound(fmt::format("cannot open checkpoint manifest '{}': {}", path, ec.message()));
  // Opening a FIFO would wait for a writer for ever.
  if (!fs::is_regular_file(st)) throw CorruptData(fmt::format("checkpoint manifest '{}' is not a regular file", path));
  try {
    return read_definition_file(path, "checkpoint manifest", kMaxManifestBytes);
  } catch (const InvalidInput& e) {
    throw CorruptData(e.what());
  }
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

std::string checkpoint_db_path(const std::string& dir, const CheckpointFile& file) {
  return (fs::path(dir) / file.db).string();
}

namespace {
// Why `name` cannot be one path component inside a checkpoint directory; empty when it can.
std::string bad_component(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name == "." || name == "..") return fmt::format("\"{}\" names a directory", name);
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '/' || ch == '\\') return fmt::format("it contains '{}'", ch);
    if (c < 0x20 || c == 0x7f) return fmt::format("it contains the control character 0x{:02x}", c);
  }
  return {};
}
}  // namespace

void check_checkpoint_node_name(std::string_view node) {
  const std::string why = bad_component(node);
  if (!why.empty())
    throw InvalidInput(
        fmt::format("node name \"{}\" cannot name a checkpoint file: {} (a checkpoint directory "
                    "holds `<node>.<epoch>` files and nothing outside it)",
                    node, why));
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
  Json j{{"format", kManifestFormat},   {"version", kManifestVersion}, {"epoch", manifest.epoch},
         {"db_type", manifest.db_type}, {"stop", manifest.stop},       {"job", manifest.job},
         {"files", std::move(files)}};
  j["checksum"] = manifest_checksum(j);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
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
    if (j.value("format", std::string()) != kManifestFormat)
      throw bad("\"format\" is not \"moka-checkpoint-manifest\"");
    if (!j.contains("version") || !j["version"].is_number_integer()) throw bad("no integer \"version\"");
    if (j["version"].get<int64_t>() != kManifestVersion) {
      throw bad(fmt::format("version {} is not supported (this moka reads version {})", j["version"].get<int64_t>(),
                            kManifestVersion));
    }
    // The checksum first: a manifest edited by hand (say "stop" turned false) is not trusted at all.
    if (!j.contains("checksum") || !j["checksum"].is_string()) throw bad("no string \"checksum\"");
    const std::string recorded = j["checksum"].get<std::string>();
    Json rest = j;
    rest.erase("checksum");
    const std::string actual = manifest_checksum(rest);
    const auto recorded_value = parse_hex64(recorded);
    if (!recorded_value || *recorded_value != *parse_hex64(actual))
      throw bad(fmt::format("its checksum {} does not match its content ({}): the manifest was damaged or edited",
                            recorded, actual));
    CheckpointManifest m;
    if (!j.contains("epoch") || !j["epoch"].is_number_integer()) throw bad("no integer \"epoch\"");
    m.epoch = j["epoch"].get<int64_t>();
    if (!j.contains("db_type") || !j["db_type"].is_string()) throw bad("no string \"db_type\"");
    m.db_type = j["db_type"].get<std::string>();
    if (m.db_type.empty()) throw bad("\"db_type\" is empty");
    if (!j.contains("stop") || !j["stop"].is_boolean()) throw bad("no boolean \"stop\"");
    m.stop = j["stop"].get<bool>();
    if (!j.contains("job") || !j["job"].is_string()) throw bad("no string \"job\"");
    m.job = j["job"].get<std::string>();
    if (!j.contains("files") || !j["files"].is_array()) throw bad("no array \"files\"");
    if (j["files"].empty()) throw bad("\"files\" is empty (a committed epoch has one file per checkpointed node)");
    std::set<std::string> nodes;
    for (const auto& f : j["files"]) {
      if (!f.is_object()) throw bad("an entry of \"files\" is not an object");
      CheckpointFile cf;
      if (!f.contains("node") || !f["node"].is_string()) throw bad("a file entry has no string \"node\"");
      cf.node = f["node"].get<std::string>();
      if (!nodes.insert(cf.node).second) throw bad(fmt::format("node '{}' has two files", cf.node));
      if (!f.contains("db") || !f["db"].is_string()) throw bad(fmt::format("file of node '{}' has no \"db\"", cf.node));
      cf.db = f["db"].get<std::string>();
      // One name inside the directory: an absolute or "../" path would read (and retention delete)
      // files of some other directory.
      if (const std::string why = bad_component(cf.db); !why.empty())
        throw bad(fmt::format("file of node '{}' is \"{}\", not a file name inside the checkpoint directory ({})",
                              cf.node, cf.db, why));
      for (const char* key : {"records", "bytes"}) {
        if (!f.contains(key) || !f[key].is_number_unsigned()) {
          throw bad(fmt::format("file of node '{}' has no unsigned \"{}\"", cf.node, key));
        }
      }
      cf.digest.records = f["records"].get<uint64_t>();
      cf.digest.bytes = f["bytes"].get<uint64_t>();
      const auto x = parse_hex64(f.value("xxh3", std::string()));
      if (!x) throw bad(fmt::format("file of node '{}' has no 16-digit hex \"xxh3\"", cf.node));
      cf.digest.xxh3 = *x;
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

namespace {
// The name of `db` inside `dir`; InvalidInput when it does not lie directly there.
std::string name_in_dir(const std::string& dir, const std::string& db, int64_t epoch, const std::string& node) {
  const fs::path base = fs::absolute(fs::path(dir)).lexically_normal();
  const fs::path file = fs::absolute(fs::path(db)).lexically_normal();
  auto strip = [](fs::path p) { return p.has_filename() ? p : p.parent_path(); };
  if (strip(file.parent_path()) != strip(base) || !bad_component(file.filename().string()).empty())
    throw InvalidInput(
        fmt::format("cannot commit checkpoint epoch {}: the DB '{}' of node '{}' does not lie in the "
                    "checkpoint directory '{}' (a checkpoint directory must be self-contained)",
                    epoch, db, node, dir));
  return file.filename().string();
}
}  // namespace

std::vector<CheckpointFile> digest_checkpoint_files(const std::string& dir, int64_t epoch, const std::string& db_type,
                                                    const std::vector<std::pair<std::string, std::string>>& node_dbs) {
  if (epoch < 0) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: epochs are >= 0", epoch));
  if (db_type.empty()) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: no db_type", epoch));
  std::vector<CheckpointFile> files;
  std::set<std::string> nodes;
  for (const auto& [node, db] : node_dbs) {
    if (!nodes.insert(node).second) {
      throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: node '{}' listed twice", epoch, node));
    }
    const std::string name = name_in_dir(dir, db, epoch, node);
    try {
      files.push_back({.node = node, .db = name, .digest = digest_db(db_type, db)});
    } catch (Error& e) {
      e.add_context(fmt::format("committing checkpoint epoch {} (node '{}')", epoch, node));
      throw;
    }
  }
  return files;
}

void write_manifest(const std::string& dir, const CheckpointManifest& m) {
  if (m.files.empty()) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: no node DBs", m.epoch));
  if (m.db_type.empty()) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: no db_type", m.epoch));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError(fmt::format("cannot create checkpoint directory '{}': {}", dir, ec.message()));
  write_file_atomically(manifest_path(dir, m.epoch), to_json(m));
}

CheckpointManifest commit_checkpoint(const std::string& dir, int64_t epoch, const std::string& db_type,
                                     const std::vector<std::pair<std::string, std::string>>& node_dbs, bool stop,
                                     const std::string& job) {
  if (epoch < 0) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: epochs are >= 0", epoch));
  if (node_dbs.empty()) throw InvalidInput(fmt::format("cannot commit checkpoint epoch {}: no node DBs", epoch));
  CheckpointManifest m{.epoch = epoch,
                       .db_type = db_type,
                       .files = digest_checkpoint_files(dir, epoch, db_type, node_dbs),
                       .stop = stop,
                       .job = job};
  write_manifest(dir, m);
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

CheckpointManifest read_checkpoint_manifest(const std::string& dir, std::optional<int64_t> epoch) {
  if (!epoch) {
    const auto epochs = committed_epochs(dir);
    if (epochs.empty()) throw NotFound(fmt::format("no committed checkpoint in '{}' (no moka-manifest.*.json)", dir));
    epoch = epochs.back();
  }
  const std::string path = manifest_path(dir, *epoch);
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw NotFound(fmt::format("checkpoint epoch {} is not committed: no manifest '{}'", *epoch, path));
  CheckpointManifest m = manifest_from_json(read_whole_file(path), path);
  if (m.epoch != *epoch)
    throw CorruptData(fmt::format("checkpoint manifest '{}' is invalid: it names epoch {}", path, m.epoch));
  return m;
}

CheckpointManifest verify_checkpoint(const std::string& dir, int64_t epoch, const std::vector<std::string>& nodes,
                                     const std::optional<std::vector<std::string>>& digested) {
  const std::string path = manifest_path(dir, epoch);
  CheckpointManifest m = read_checkpoint_manifest(dir, epoch);
  for (const auto& node : nodes) {
    if (std::none_of(m.files.begin(), m.files.end(), [&](const CheckpointFile& f) { return f.node == node; })) {
      std::vector<std::string> has;
      for (const auto& f : m.files) has.push_back(f.node);
      throw CorruptData(fmt::format("checkpoint epoch {} has no file for node '{}' (manifest '{}' has {})", epoch, node,
                                    path, fmt::join(has, ", ")));
    }
  }
  for (const auto& f : m.files) {
    if (digested && std::find(digested->begin(), digested->end(), f.node) == digested->end()) continue;
    const std::string db = checkpoint_db_path(dir, f);
    DbDigest actual;
    try {
      actual = digest_db(m.db_type, db);
    } catch (Error& e) {
      throw CorruptData(fmt::format("checkpoint epoch {}: {} DB '{}' of node '{}' cannot be read: {}", epoch, m.db_type,
                                    db, f.node, e.what()));
    }
    if (actual != f.digest) {
      throw CorruptData(
          fmt::format("checkpoint epoch {}: {} DB '{}' of node '{}' does not match manifest '{}' "
                      "(records {} vs {}, bytes {} vs {}, xxh3 {} vs {})",
                      epoch, m.db_type, db, f.node, path, actual.records, f.digest.records, actual.bytes,
                      f.digest.bytes, hex64(actual.xxh3), hex64(f.digest.xxh3)));
    }
  }
  return m;
}

namespace {
// The newest of `epochs` (ascending) that `verify` accepts; the newer ones it refused, with why.
ResumeChoice newest_that_verifies(const std::vector<int64_t>& epochs,
                                  const std::function<CheckpointManifest(int64_t)>& verify) {
  ResumeChoice choice;
  for (auto it = epochs.rbegin(); it != epochs.rend(); ++it) {
    try {
      choice.manifest = verify(*it);
      choice.epoch = *it;
      break;
    } catch (const Error& e) {
      choice.skipped.emplace_back(*it, e.what());
    }
  }
  return choice;
}
}  // namespace

ResumeChoice find_resume_epoch(const std::string& dir, const std::vector<std::string>& nodes) {
  return newest_that_verifies(committed_epochs(dir), [&](int64_t e) { return verify_checkpoint(dir, e, nodes); });
}

void uncommit_checkpoint(const std::string& dir, int64_t epoch) {
  const std::string path = manifest_path(dir, epoch);
  if (::unlink(path.c_str()) == 0) {
    detail::fsync_parent_dir(path);
  } else if (errno != ENOENT) {
    throw RuntimeError(
        fmt::format("cannot uncommit checkpoint epoch {}: removing {} failed: {}", epoch, path, std::strerror(errno)));
  }
}

std::vector<int64_t> retention_drops(const std::vector<int64_t>& epochs, const RetentionPolicy& policy) {
  if (policy.keep_last < 0 || policy.keep_every < 0) {
    throw InvalidInput(
        fmt::format("retention: keep_last ({}) and keep_every ({}) must be >= 0", policy.keep_last, policy.keep_every));
  }
  std::vector<int64_t> drops;
  if (policy.keep_last == 0) return drops;
  const size_t n = epochs.size();
  const size_t keep_from = n > static_cast<size_t>(policy.keep_last) ? n - static_cast<size_t>(policy.keep_last) : 0;
  for (size_t i = 0; i < keep_from && i + 1 < n; ++i) {  // i + 1 < n: never the newest
    if (policy.keep_every > 0 && epochs[i] % policy.keep_every == 0) continue;
    drops.push_back(epochs[i]);
  }
  return drops;
}

std::vector<int64_t> apply_retention(const std::string& dir, const RetentionPolicy& policy) {
  std::vector<int64_t> deleted;
  for (const int64_t epoch : retention_drops(committed_epochs(dir), policy)) {
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
    for (const auto& f : m.files) remove_db(checkpoint_db_path(dir, f));
    deleted.push_back(epoch);
  }
  return deleted;
}

std::vector<int64_t> discard_checkpoints(const std::string& dir) {
  std::vector<int64_t> deleted;
  for (const int64_t epoch : committed_epochs(dir)) {
    const std::string path = manifest_path(dir, epoch);
    std::optional<CheckpointManifest> m;
    try {
      m = manifest_from_json(read_whole_file(path), path);
    } catch (const Error&) {
      // Unreadable: its files cannot be known; the manifest alone goes (its epoch stops existing).
    }
    uncommit_checkpoint(dir, epoch);
    if (m) {
      for (const auto& f : m->files) remove_db(checkpoint_db_path(dir, f));
    }
    deleted.push_back(epoch);
  }
  return deleted;
}

namespace {
bool db_types_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string reasons(const std::vector<std::pair<int64_t, std::string>>& skipped) {
  std::string out;
  for (const auto& [epoch, why] : skipped) out += fmt::format("{}epoch {}: {}", out.empty() ? "" : "; ", epoch, why);
  return out;
}

// A resume from `m` must read it with its own backend and, when both are recorded, the same job.
void check_resumable(const std::string& dir, const CheckpointManifest& m, const ResumeRequest& request) {
  if (!request.db_type.empty() && !db_types_equal(request.db_type, m.db_type))
    throw InvalidInput(
        fmt::format("checkpoint epoch {} in '{}' was written with db_type '{}', not '{}': the "
                    "backend of a checkpoint is fixed when it is written (leave the db type out to "
                    "use the checkpoint's)",
                    m.epoch, dir, m.db_type, request.db_type));
  if (!request.accept_changed_job && !request.job.empty() && !m.job.empty() && request.job != m.job)
    throw InvalidInput(
        fmt::format("checkpoint epoch {} in '{}' was written by another job (job digest {}, this job's "
                    "is {}); resuming it with this job needs an explicit override "
                    "(--accept-changed-job, ResumeRequest::accept_changed_job)",
                    m.epoch, dir, m.job, request.job));
}
}  // namespace

ResumeChoice prepare_checkpoint_start(const std::string& dir, const ResumeRequest& request,
                                      const CheckpointStartHooks& hooks) {
  for (const auto& node : request.nodes) check_checkpoint_node_name(node);
  const std::function<CheckpointManifest(int64_t)> verify = [&](int64_t epoch) {
    return hooks.verify ? hooks.verify(epoch) : verify_checkpoint(dir, epoch, request.nodes);
  };
  ResumeChoice choice;
  if (request.epoch) {
    choice.manifest = verify(*request.epoch);
    choice.epoch = request.epoch;
    check_resumable(dir, *choice.manifest, request);
    return choice;
  }
  const std::vector<int64_t> committed = hooks.committed ? hooks.committed() : committed_epochs(dir);
  if (request.latest) {
    choice = newest_that_verifies(committed, verify);
    if (choice.epoch) {
      check_resumable(dir, *choice.manifest, request);
      return choice;
    }
    if (!committed.empty() && request.existing != ExistingCheckpoints::discard)
      throw InvalidInput(
          fmt::format("checkpoint directory '{}' holds {} committed epoch(s) and none of them "
                      "verifies, so there is nothing to resume from ({}); starting over would "
                      "overwrite them: pass --start-over (ExistingCheckpoints::discard) to discard them",
                      dir, committed.size(), reasons(choice.skipped)));
  } else if (!committed.empty() && request.existing == ExistingCheckpoints::refuse) {
    throw InvalidInput(
        fmt::format("checkpoint directory '{}' already holds committed checkpoints (newest: epoch "
                    "{}); a run from scratch would overwrite them: resume with --resume latest, or "
                    "pass --start-over (ExistingCheckpoints::discard) to discard them",
                    dir, committed.back()));
  }
  if (request.existing == ExistingCheckpoints::discard && hooks.deletes) (void)discard_checkpoints(dir);
  return choice;
}

}  // namespace moka
