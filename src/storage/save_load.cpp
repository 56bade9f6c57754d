// save_blobs / load_blobs: Caffe2's Save and Load (docs/save-load.md) over moka's DB interface and blob records.
// Save streams each record straight into one transaction; Load assembles chunks in any order.
#include "moka/storage/save_load.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/db_streams.h"

#include "core/spin_wait.h"
#include "storage/load_prefetcher.h"

namespace moka {

namespace {

// Caffe2's prefix stripping (load_save_op.h): everything up to and including the first occurrence.
std::string_view strip(std::string_view name, std::string_view prefix) {
  if (prefix.empty()) return name;
  const auto pos = name.find(prefix);
  return pos == std::string_view::npos ? name : name.substr(pos + prefix.size());
}

// Hashes string and string_view alike, so that a blob name taken from a DB key (a view) is looked
// up without building a string for every record.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using NameIndex = std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>>;

std::string where_db(std::string_view verb, const std::string& db_type, const std::string& path) {
  return fmt::format("{} {} db \"{}\"", verb, db_type, path);
}

// Runs f; a moka::Error leaving it gets `where` as context (so every message names the DB).
template <class F>
auto with_context(const std::string& where, F&& f) {
  try {
    return f();
  } catch (Error& e) {
    e.add_context(where);
    throw;
  }
}

// Fails before the DB is opened (which, in New mode, may already replace an existing DB) when a
// blob cannot be serialized.
void check_serializable(const std::string& name, const Blob& blob) {
  if (!blob.is_initialized())
    throw InvalidInput(fmt::format("Cannot serialize blob \"{}\": it is uninitialized (holds nothing)", name));
  if (blob.tensor_or_null() != nullptr) return;
  if (!BlobSerializerRegistry::global().find(blob.type()))
    throw InvalidInput(fmt::format(
        "No known serializer for {} (blob \"{}\"); register one with BlobSerializerRegistry::register_serializer",
        blob.type_name(), name));
}

uint64_t numel_of(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

// What Load knows about one blob being assembled (Caffe2's BlobState, plus the assembler).
// Started once `blob` is set (its first record was seen).
struct Pending {
  const std::string* name = nullptr;  // the blob name after prefix rules (owned by the name index)
  Blob* blob = nullptr;
  std::optional<BlobAssembler> assembler;
  std::size_t db_index = 0;
  bool is_tensor = false;
  uint64_t total = 0;  // elements expected (tensors)
  uint64_t read = 0;   // elements read so far
  uint64_t chunks_total = 0;
  uint64_t chunks_read = 0;
};

}  // namespace

std::string resolve_db_path(const Workspace& ws, const std::string& db, bool absolute_path) {
  return absolute_path ? db : ws.root_folder() + "/" + db;
}

namespace detail {

std::vector<std::string> save_stored_names(const SaveSpec& spec) {
  if (spec.db.empty()) throw InvalidInput("Must specify a db name.");
  if (spec.db_type.empty()) throw InvalidInput("Must specify a db type.");
  if (!spec.blob_name_overrides.empty() && spec.blob_name_overrides.size() != spec.blob_names.size())
    throw InvalidInput(fmt::format("Number of blobs and blob_name_overrides mismatch. ({} blobs, {} overrides)",
                                   spec.blob_names.size(), spec.blob_name_overrides.size()));
  if (!spec.blob_name_overrides.empty() && !spec.strip_prefix.empty())
    throw InvalidInput("strip_prefix and blob_name_overrides are mutually exclusive.");
  if (spec.chunk_size < kNoChunking)
    throw InvalidInput(fmt::format("chunk_size must be >= -1 (-1: no chunking, 0: default), got {}", spec.chunk_size));
  std::vector<std::string> names;
  names.reserve(spec.blob_names.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < spec.blob_names.size(); ++i) {
    std::string name = spec.blob_name_overrides.empty() ? std::string(strip(spec.blob_names[i], spec.strip_prefix))
                                                        : spec.blob_name_overrides[i];
    if (name.empty())
      throw InvalidInput(fmt::format("blob \"{}\" would be stored under an empty name", spec.blob_names[i]));
    // Caffe2 checks this only without overrides; duplicated overrides would silently overwrite a
    // record, so moka checks both.
    if (!seen.insert(name).second) throw InvalidInput(fmt::format("Duplicated input: {}", name));
    names.push_back(std::move(name));
  }
  return names;
}

void check_load_spec(const LoadSpec& spec) {
  if (spec.db_type.empty()) throw InvalidInput("Must specify a db type.");
  if (spec.dbs.empty()) throw InvalidInput("Must specify a db name.");
  if (spec.load_threads > kMaxLoadThreads)
    throw InvalidInput(
        fmt::format("load_threads must be at most {} (0: automatic), got {}", kMaxLoadThreads, spec.load_threads));
  std::set<std::string> dbs;
  for (const auto& db : spec.dbs) {
    if (db.empty()) throw InvalidInput("Db name should not be empty.");
    if (!dbs.insert(db).second) throw InvalidInput(fmt::format("Duplicated db name: {}", db));
  }
  if (!spec.source_blob_names.empty() && spec.source_blob_names.size() != spec.blob_names.size())
    throw InvalidInput(fmt::format("Number of output blobs and source_blob_names mismatch. ({} outputs, {} names)",
                                   spec.blob_names.size(), spec.source_blob_names.size()));
  if (!spec.source_blob_names.empty() && !spec.strip_prefix.empty())
    throw InvalidInput("strip_prefix and source_blob_names are mutually exclusive.");
  if (!spec.source_blob_names.empty() && spec.load_all)
    throw InvalidInput("cannot load_all_ while using source_blob_names.");
  if (!spec.load_all) {
    std::set<std::string> seen;
    for (const auto& n : spec.source_blob_names.empty() ? spec.blob_names : spec.source_blob_names)
      if (!seen.insert(n).second) throw InvalidInput(fmt::format("Duplicated source blob name: {}", n));
    if (!spec.source_blob_names.empty()) {
      // Two stored blobs into one output would leave it holding whichever came last.
      seen.clear();
      for (const auto& n : spec.blob_names)
        if (!seen.insert(n).second) throw InvalidInput(fmt::format("Duplicated output blob name: {}", n));
    }
  }
}

SaveLoadStats save_bound_blobs(const SaveSpec& spec, const std::string& path, const std::vector<const Blob*>& blobs) {
  return with_context(where_db("Save to", spec.db_type, path), [&] {
    const std::vector<std::string> names = save_stored_names(spec);
    if (blobs.size() != names.size())
      throw InvalidInput(fmt::format("save: {} blobs bound for {} names", blobs.size(), names.size()));
    for (std::size_t i = 0; i < blobs.size(); ++i) check_serializable(spec.blob_names[i], *blobs[i]);

    auto db = open_db(spec.db_type, path, DbMode::New);
    auto txn = db->new_transaction();
    TransactionSink sink(*txn);
    SerializeOptions options;
    options.chunk_size = spec.chunk_size;
    for (std::size_t i = 0; i < blobs.size(); ++i) {
      try {
        serialize_blob(names[i], *blobs[i], sink, options);
      } catch (Error& e) {
        e.add_context(fmt::format("blob \"{}\"", spec.blob_names[i]));
        throw;
      }
    }
    // One commit for the whole save: readers see all blobs or (for a new DB) none.
    txn->commit();
    txn.reset();
    db->close();
    return SaveLoadStats{blobs.size(), sink.bytes()};
  });
}

SaveLoadStats load_bound_blobs(Workspace& ws, const LoadSpec& spec, const std::vector<std::string>& paths,
                               const std::vector<Blob*>& outputs) {
  const std::string all_dbs = paths.size() == 1
                                  ? where_db("Load from", spec.db_type, paths.empty() ? "" : paths[0])
                                  : fmt::format("Load from {} dbs \"{}\"", spec.db_type, fmt::join(paths, "\", \""));
  with_context(all_dbs, [&] {
    check_load_spec(spec);
    if (paths.size() != spec.dbs.size())
      throw InvalidInput(fmt::format("load: {} paths for {} dbs", paths.size(), spec.dbs.size()));
    if (!spec.load_all && outputs.size() != spec.blob_names.size())
      throw InvalidInput(
          fmt::format("load: {} output blobs bound for {} names", outputs.size(), spec.blob_names.size()));
  });

  // Requested stored name (after prefix rules) -> output index, which is also the index of its
  // Pending. With load_all, every name met gets the next Pending. A deque never moves its elements.
  NameIndex by_name;
  std::deque<Pending> pending;
  if (!spec.load_all) {
    const auto& names = spec.source_blob_names.empty() ? spec.blob_names : spec.source_blob_names;
    by_name.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) by_name.emplace(names[i], i);
    pending.resize(names.size());
    for (const auto& [name, i] : by_name) pending[i].name = &name;
  }
  SaveLoadStats stats;
  std::size_t loaded = 0;
  // On error, a blob whose chunks did not all arrive is emptied: never partly loaded.
  auto reset_incomplete = [&] {
    for (auto& p : pending)
      if (p.blob != nullptr && (!p.assembler || !p.assembler->complete())) p.blob->reset();
  };
  const bool prefixed = !spec.add_prefix.empty() || !spec.strip_prefix.empty();
  std::string renamed;  // the blob name after prefix rules, when they change it (reused)
  // The blob name of a DB key after prefix rules (a view into `renamed` when they change it).
  auto stored_name = [&](std::string_view db_key) -> std::string_view {
    const std::string_view key = blob_name_from_key(db_key);
    if (!prefixed) return key;
    renamed.assign(spec.add_prefix);
    renamed.append(strip(key, spec.strip_prefix));
    return renamed;
  };
  const std::size_t threads =
      spec.load_threads != 0 ? spec.load_threads : std::min(kAutoLoadThreads, detail::affinity_cpus());

  try {
    for (std::size_t d = 0; d < paths.size(); ++d) {
      const std::string& path = paths[d];
      with_context(where_db("Load from", spec.db_type, path), [&] {
        auto db = open_db(spec.db_type, path, DbMode::Read);
        // Later records decoded on helper threads while this one reads the first ones; adopted
        // below only where this pass would decode the same record into a fresh blob. A blob that
        // holds a value now is left to this pass, which frees the old value before reading the new
        // one: decoding ahead would hold both (a reload of a whole model would need twice its memory).
        std::unique_ptr<detail::LoadPrefetcher> prefetch;
        if (threads > 1 && (spec.load_all || loaded < outputs.size())) {
          const auto wanted = [&](std::string_view db_key) {
            const std::string_view name = stored_name(db_key);
            const Blob* dest = nullptr;
            if (spec.load_all) {
              dest = ws.get_blob(name);
            } else if (auto w = by_name.find(name); w != by_name.end()) {
              dest = outputs[w->second];
            } else {
              return false;
            }
            return dest == nullptr || !dest->is_initialized();
          };
          prefetch = detail::LoadPrefetcher::start(*db, wanted, threads, kParallelLoadMinBytes);
        }
        std::size_t ordinal = 0;
        for (auto cursor = db->new_cursor(); cursor->valid(); cursor->next(), ++ordinal) {
          const std::string_view db_key = cursor->key();
          const std::string_view key = stored_name(db_key);
          auto w = by_name.find(key);
          if (w == by_name.end()) {
            if (!spec.load_all) continue;  // not requested: its value is never read
            w = by_name.emplace(std::string(key), pending.size()).first;
            pending.emplace_back().name = &w->first;
          }
          Pending& p = pending[w->second];
          const bool fresh = p.blob == nullptr;
          if (!fresh && p.db_index != d) throw InvalidInput(fmt::format("Duplicate Key {} is found!", key));
          if (fresh) {
            p.db_index = d;
            p.blob = spec.load_all ? ws.create_blob(w->first) : outputs[w->second];
            // Caffe2 resets the blob before the first record (the assembler reuses a tensor's
            // storage otherwise, which is only safe while nothing else can see it).
            p.blob->reset();
            p.assembler.emplace(*p.blob);
          }
          try {
            // Every byte of a blob record is under its own checksums (header checksum, payload
            // checksum seeded by it; bytes after the record are refused below), all verified
            // before the blob counts as loaded: the DB's hash over the same bytes would be a
            // second pass over the data for no extra detection. So the value is read with
            // read_value (checked like value_unhashed), straight into the tensor.
            if (detail::PrefetchedRecord* got = fresh && prefetch ? prefetch->take(ordinal, db_key) : nullptr) {
              // What the read below does for this record, already done (into a fresh blob too).
              const RecordHeader& h = got->header;
              stats.bytes += got->value_size;
              ++stats.read_ahead;
              p.is_tensor = true;
              p.total = numel_of(h.shape);
              p.read += h.elem_count;
              p.chunks_total = h.chunk_count;
              ++p.chunks_read;
              p.assembler->adopt(h, got->blob);
            } else {
              CursorValueSource src(*cursor);
              stats.bytes += src.size();
              const RecordHeader h = read_record_header(src, "record header");
              const bool tensor = h.kind == RecordKind::TensorChunk;
              if (p.assembler->complete())
                throw InvalidInput(tensor ? fmt::format("Found an extra part for an already filled tensor: {}", key)
                                          : fmt::format("Blob duplicated: {}", key));
              if (!fresh && tensor != p.is_tensor)
                throw InvalidInput(
                    fmt::format("Must be tensor {} (a tensor chunk and a non-tensor record share the "
                                "name)",
                                key));
              p.is_tensor = tensor;
              if (tensor) {
                p.total = numel_of(h.shape);
                p.read += h.elem_count;
                p.chunks_total = h.chunk_count;
              }
              ++p.chunks_read;
              p.assembler->add(h, src);
              if (src.position() != src.size())
                throw CorruptData(fmt::format("{} unexpected bytes after the record", src.size() - src.position()));
            }
          } catch (Error& e) {
            p.blob->reset();
            e.add_context(fmt::format("key \"{}\"", detail::printable_key(db_key)));
            throw;
          }
          if (p.assembler->complete()) {
            ++loaded;
            ++stats.blobs;
            // Caffe2 stops reading this db once every requested blob is in (later dbs are still
            // opened, and still checked for duplicate keys).
            if (!spec.load_all && loaded == outputs.size()) break;
          }
        }
        db->close();
      });
    }
    // Caffe2's validateBlobStates; the first incomplete blob in name order is reported.
    const Pending* bad = nullptr;
    for (const auto& p : pending)
      if (p.blob != nullptr && !p.assembler->complete() && (bad == nullptr || *p.name < *bad->name)) bad = &p;
    if (bad != nullptr) {
      CorruptData e(fmt::format("Data size mismatch for blob {}. Expected: {} Read: {} ({} of {} chunks present)",
                                *bad->name, bad->total, bad->read, bad->chunks_read, bad->chunks_total));
      e.add_context(where_db("Load from", spec.db_type, paths[bad->db_index]));
      throw e;
    }
  } catch (...) {
    reset_incomplete();
    throw;
  }

  if (spec.load_all || loaded == outputs.size() || spec.allow_incomplete) return stats;
  // Caffe2 logs "Failed to load blob: X" for each missing blob, then throws; moka puts both in the message.
  std::string missing;
  for (std::size_t i = 0; i < spec.blob_names.size(); ++i) {
    if (pending[i].blob == nullptr || !pending[i].assembler->complete())
      missing += fmt::format(" Failed to load blob: {}", spec.blob_names[i]);
  }
  NotFound e(fmt::format("Expected to load {} blobs, got {} only.{}", outputs.size(), loaded, missing));
  e.add_context(all_dbs);
  throw e;
}

}  // namespace detail

SaveLoadStats save_blobs(Workspace& ws, const SaveSpec& spec) {
  const std::string path = resolve_db_path(ws, spec.db, spec.absolute_path);
  std::vector<const Blob*> blobs;
  blobs.reserve(spec.blob_names.size());
  for (const auto& name : spec.blob_names) {
    const Blob* b = ws.get_blob(name);
    if (b == nullptr)
      throw NotFound(
          fmt::format("{}: Encountered a non-existing input blob: {}", where_db("Save to", spec.db_type, path), name));
    blobs.push_back(b);
  }
  return detail::save_bound_blobs(spec, path, blobs);
}

SaveLoadStats load_blobs(Workspace& ws, const LoadSpec& spec) {
  detail::check_load_spec(spec);
  std::vector<std::string> paths;
  for (const auto& db : spec.dbs) paths.push_back(resolve_db_path(ws, db, spec.absolute_path));
  std::vector<Blob*> outputs;
  if (!spec.load_all)
    for (const auto& name : spec.blob_names) outputs.push_back(ws.create_blob(name));
  return detail::load_bound_blobs(ws, spec, paths, outputs);
}

}  // namespace moka
