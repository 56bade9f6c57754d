// DBFileReader and CachedReader (Caffe2's db_file_reader.py; docs/pipelines.md §9): a dataset saved column by column
// in a DB file, read through a DatasetRandomReader; CachedReader fills the file from another reader once.
#include "moka/data/cached_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "moka/builder/cluster.h"
#include "moka/builder/name_scope.h"
#include "moka/builder/task.h"
#include "moka/builder/task_group.h"
#include "moka/core/error.h"
#include "moka/data/pipeline.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"

namespace moka {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// os.path.expanduser for the "~" and "~/..." forms.
std::string expand_user(const std::string& path) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  const char* home = std::getenv("HOME");
  return home == nullptr ? path : std::string(home) + path.substr(1);
}

void check_db_type(const std::string& db_type) {
  const auto known = registered_db_types();
  if (std::find(known.begin(), known.end(), lower(db_type)) == known.end())
    throw InvalidInput(
        fmt::format("db_type [{}] is not available. Choose one of these: {}.", db_type, fmt::join(known, ", ")));
}

// os.path.basename(db_path).rsplit('.', 1)[0]
std::string db_name_of(const std::string& path) {
  const auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Caffe2 loads the whole DB into the global workspace (Load load_all=1, add_prefix=<name>/) and
// lists the blob names it got. The key names say the same without reading any value or leaving
// blobs behind.
schema::Field columns_schema(const std::string& db_path, const std::string& db_type,
                             const std::vector<std::string>& field_names) {
  check_db_type(db_type);
  if (!field_names.empty()) return schema::from_column_list(field_names);
  if (!std::filesystem::exists(db_path)) throw InvalidInput(fmt::format("db_path [{}] does not exist", db_path));
  std::set<std::string> names;
  auto db = open_db(db_type, db_path, DbMode::Read);
  for (auto c = db->new_cursor(); c->valid(); c->next()) names.emplace(blob_name_from_key(c->key()));
  db->close();
  return schema::from_column_list(std::vector<std::string>(names.begin(), names.end()));
}

schema::Field schema_of(const std::shared_ptr<Reader>& original_reader) {
  if (!original_reader) throw InvalidInput("CachedReader: original_reader can't be None");
  return original_reader->schema();
}

}  // namespace

DBFileReader::DBFileReader(std::string db_path, std::string db_type, DBFileReaderOptions options)
    : DBFileReader(db_path, db_type, options, columns_schema(expand_user(db_path), db_type, options.field_names)) {}

DBFileReader::DBFileReader(std::string db_path, std::string db_type, DBFileReaderOptions options, schema::Field schema)
    : Reader(schema),
      db_path_(expand_user(db_path)),
      db_type_(std::move(db_type)),
      name_(options.name.empty() ? db_name_of(db_path_) + "_db_file_reader" : std::move(options.name)),
      batch_size_(options.batch_size),
      loop_over_(options.loop_over),
      ds_(schema, name_ + "_dataset") {
  if (db_path_.empty()) throw InvalidInput("DBFileReader: db_path can't be None.");
  check_db_type(db_type_);
  if (batch_size_ <= 0) throw InvalidInput(fmt::format("DBFileReader: batch_size must be > 0, got {}", batch_size_));
}

void DBFileReader::init_field_blobs_as_empty(Net& net) {
  NameScope scope(name_);
  ds_.init_empty(net);
}

void DBFileReader::feed_field_blobs_from_db_file(Net& net) {
  if (!std::filesystem::exists(db_path_)) throw InvalidInput(fmt::format("db_path [{}] does not exist", db_path_));
  net.op("Load", {}, Outputs(ds_.get_blobs()),
         {{"db", db_path_}, {"db_type", db_type_}, {"absolute_path", 1}, {"source_blob_names", ds_.field_names()}});
}

void DBFileReader::save_field_blobs_to_db_file(Net& net) {
  net.op("Save", ds_.get_blobs(), Outputs(0),
         {{"db", db_path_}, {"db_type", db_type_}, {"blob_name_overrides", ds_.field_names()}, {"absolute_path", 1}});
}

void DBFileReader::setup_ex(Net init_net, std::optional<Net> /*exit_net*/) {
  init_field_blobs_as_empty(init_net);
  feed_field_blobs_from_db_file(init_net);
  ds_reader_ = ds_.random_reader({.init_net = init_net, .batch_size = batch_size_, .loop_over = loop_over_});
  ds_reader_->sort_and_shuffle(init_net);
  ds_reader_->compute_offset(init_net);
}

ReadOutput DBFileReader::read(Net& read_net) {
  if (!ds_reader_) throw InvalidInput(fmt::format("{} \"{}\": setup_ex must be called first", type_name(), name_));
  return ds_reader_->read(read_net);
}

CachedReader::CachedReader(std::shared_ptr<Reader> original_reader, std::string db_path, std::string db_type,
                           CachedReaderOptions options)
    : DBFileReader(std::move(db_path), std::move(db_type),
                   DBFileReaderOptions{.name = std::move(options.name),
                                       .batch_size = options.batch_size,
                                       .loop_over = options.loop_over,
                                       .field_names = {}},
                   schema_of(original_reader)),
      original_reader_(std::move(original_reader)) {}

ExecutionStep CachedReader::build_cache_step(bool overwrite) {
  // Checked now, when the step is built (as Caffe2's os.path.exists).
  if (std::filesystem::exists(db_path_) && !overwrite) return moka::execution_step("build_step", {});
  Net init_net("init");
  init_field_blobs_as_empty(init_net);
  std::optional<ExecutionStep> copy_step;
  Cluster([&] {
    NameScope scope(name_);
    TaskGroup copy_tg([&] { pipe(original_reader_, {.output = ds_.writer(), .num_threads = 16}); });
    copy_step = copy_tg.to_task().get_step();
  });
  Net save_net("save");
  save_field_blobs_to_db_file(save_net);
  return moka::execution_step("build_cache", {init_net, *copy_step, save_net});
}

}  // namespace moka
