// list_checkpoint_dir, inspect_checkpoint_db and verify_checkpoint_dir: a checkpoint directory read, never changed
// (moka/job/checkpoint_inspect.h).
#include "moka/job/checkpoint_inspect.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string_view>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"

// Header-only xxHash, as in checkpoint_manifest.cpp: nothing to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace moka {

namespace {

namespace fs = std::filesystem;

void check_dir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) throw NotFound(fmt::format("checkpoint directory '{}' does not exist", dir));
  if (!fs::is_directory(st)) throw InvalidInput(fmt::format("'{}' is not a directory", dir));
}

// Bytes on disk and the newest write time of a file or a DB directory.
struct DiskUse {
  uint64_t bytes = 0;
  std::optional<fs::file_time_type> newest;
  void add(const fs::path& p) {
    std::error_code ec;
    auto note = [&](const fs::path& f) {
      const auto size = fs::file_size(f, ec);
      if (!ec) bytes += size;
      const auto t = fs::last_write_time(f, ec);
      if (!ec && (!newest || t > *newest)) newest = t;
    };
    if (fs::is_directory(p, ec)) {
      for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec)) note(it->path());
    } else {
      note(p);
    }
  }
  double age_s() const {
    if (!newest) return 0;
    return std::chrono::duration<double>(fs::file_time_type::clock::now() - *newest).count();
  }
};

// "<node>.<epoch>": the node and epoch of a node DB's name; nullopt for any other name (manifests, the lock,
// temporary files, snapshots).
std::optional<std::pair<std::string, int64_t>> node_db_name(const std::string& name) {
  if (name.starts_with("moka-manifest.") || name == "moka.lock" || name.find(".tmp-") != std::string::npos ||
      name.find(".snapshot.") != std::string::npos)
    return std::nullopt;
  const std::size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size() || name[dot + 1] == '-') return std::nullopt;
  const std::string_view digits = std::string_view(name).substr(dot + 1);
  int64_t epoch = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), epoch);
  if (ec != std::errc() || end != digits.data() + digits.size() || fmt::format("{}", epoch) != digits)
    return std::nullopt;
  return std::make_pair(name.substr(0, dot), epoch);
}

}  // namespace

std::vector<CheckpointEpochListing> list_checkpoint_dir(const std::string& dir, const RetentionPolicy& policy,
                                                        bool verify) {
  check_dir(dir);
  const std::vector<int64_t> committed = committed_epochs(dir);
  const std::vector<int64_t> drops = retention_drops(committed, policy);
  std::map<int64_t, CheckpointEpochListing> out;
  for (const int64_t epoch : committed) {
    CheckpointEpochListing e{.epoch = epoch, .committed = true};
    DiskUse use;
    use.add(manifest_path(dir, epoch));
    try {
      const CheckpointManifest m = read_checkpoint_manifest(dir, epoch);
      e.db_type = m.db_type;
      e.stop = m.stop;
      for (const CheckpointFile& f : m.files) {
        e.nodes.push_back(f.node);
        use.add(checkpoint_db_path(dir, f));
      }
      // Whether it verifies or not: apply_retention deletes what retention_drops names once its manifest reads
      // (one whose manifest does not read it keeps, for a person to look at).
      e.kept = std::find(drops.begin(), drops.end(), epoch) == drops.end();
      e.status = "ok";
      if (verify) verify_checkpoint(dir, epoch);
    } catch (const Error& err) {
      e.status = err.what();
    }
    e.bytes = use.bytes;
    e.age_s = use.age_s();
    out.emplace(epoch, std::move(e));
  }
  std::map<int64_t, DiskUse> loose;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto node_epoch = node_db_name(name);
    if (!node_epoch) continue;
    const auto [node, epoch] = *node_epoch;
    // A committed epoch: its manifest says which files are its.
    if (std::binary_search(committed.begin(), committed.end(), epoch)) continue;
    auto [it, fresh] = out.try_emplace(epoch);
    if (fresh) {
      it->second.epoch = epoch;
      it->second.status = "not committed: no manifest (a save that did not finish, or one still running)";
    }
    it->second.nodes.push_back(node);
    loose[epoch].add(entry.path());
  }
  for (auto& [epoch, use] : loose) {
    CheckpointEpochListing& e = out.at(epoch);
    std::sort(e.nodes.begin(), e.nodes.end());
    e.bytes = use.bytes;
    e.age_s = use.age_s();
  }
  std::vector<CheckpointEpochListing> list;
  for (auto& [epoch, e] : out) list.push_back(std::move(e));
  return list;
}

std::vector<CheckpointBlobListing> inspect_checkpoint_db(const std::string& db_type, const std::string& path) {
  std::unique_ptr<DB> db = open_db(db_type, path, DbMode::Read);
  std::vector<CheckpointBlobListing> out;
  // A blob's records are consecutive in key order ("w", or "w#%0", "w#%1", ...: no other key sorts between them).
  std::optional<CheckpointBlobListing> current;
  Blob blob;
  std::unique_ptr<BlobAssembler> assembler;
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw RuntimeError("out of memory creating an XXH3 state");
  auto finish = [&] {
    if (!current) return;
    if (current->problem.empty()) {
      try {
        assembler->finish();
        if (const Tensor* t = blob.tensor_or_null()) {
          current->type = "tensor";
          current->dtype = std::string(dtype_name(t->dtype()));
          current->shape = t->shape();
        } else {
          current->type = std::string(blob.type_name());
        }
      } catch (const Error& e) {
        current->problem = e.what();
      }
    }
    current->xxh3 = XXH3_64bits_digest(state.get());
    out.push_back(std::move(*current));
    current.reset();
    blob.reset();
  };
  try {
    for (auto c = db->new_cursor(); c->valid(); c->next()) {
      const std::string_view key = c->key();
      const std::string name(blob_name_from_key(key));
      if (!current || current->name != name) {
        finish();
        current = CheckpointBlobListing{.name = name};
        assembler = std::make_unique<BlobAssembler>(blob);
        XXH3_64bits_reset(state.get());
      }
      const std::string_view value = c->value();
      ++current->records;
      current->bytes += key.size() + value.size();
      XXH3_64bits_update(state.get(), value.data(), value.size());
      if (!current->problem.empty()) continue;
      try {
        MemorySource source(value);
        assembler->add(source);
      } catch (const Error& e) {
        current->problem = fmt::format("record \"{}\": {}", key, e.what());
      }
    }
    finish();
  } catch (Error& e) {
    e.add_context(fmt::format("{} DB '{}'", db_type, path));
    throw;
  }
  db->close();
  return out;
}

std::vector<CheckpointProblem> verify_checkpoint_dir(const std::string& dir) {
  check_dir(dir);
  std::vector<CheckpointProblem> problems;
  for (const int64_t epoch : committed_epochs(dir)) {
    CheckpointManifest m;
    try {
      m = read_checkpoint_manifest(dir, epoch);
    } catch (const Error& e) {
      problems.push_back({epoch, manifest_path(dir, epoch), "", e.what()});
      continue;
    }
    for (const CheckpointFile& f : m.files) {
      const std::string path = checkpoint_db_path(dir, f);
      try {
        verify_checkpoint(dir, epoch, {}, std::vector<std::string>{f.node});
      } catch (const Error& e) {
        problems.push_back({epoch, path, "", e.what()});
      }
      try {
        for (const CheckpointBlobListing& b : inspect_checkpoint_db(m.db_type, path))
          if (!b.problem.empty()) problems.push_back({epoch, path, b.name, b.problem});
      } catch (const Error&) {
        // The DB cannot be opened or walked: verify_checkpoint above already named the file.
      }
    }
  }
  return problems;
}

}  // namespace moka
