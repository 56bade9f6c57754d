// DBFileReader (reads a dataset saved in a DB file) and CachedReader (builds that file once from another
// reader, then serves from it): Caffe2's db_file_reader.py (docs/pipelines.md §9).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/builder/execution_step.h"
#include "moka/data/dataset.h"
#include "moka/data/reader.h"

namespace moka {

/// Optional arguments of DBFileReader (Caffe2's keyword arguments).
struct DBFileReaderOptions {
  /// Default `<file name without its last extension>_db_file_reader` (e.g. "/tmp/cache.db" -> "cache_db_file_reader").
  std::string name{};
  int64_t batch_size = 100;  ///< rows per read (> 0)
  bool loop_over = false;    ///< start over at the end instead of stopping
  /// Column names of the DB's blobs; empty: taken from the DB's keys (sorted), which must then exist.
  std::vector<std::string> field_names{};
};

/// @brief Reads the rows of a dataset that was saved as one blob per column into a DB file
/// (Caffe2's `DBFileReader`).
///
/// setup_ex (in the reading task's init net) creates empty dataset blobs under NameScope(name()),
/// fills them with `Load(source_blob_names = columns, absolute_path = 1)` and sets up a
/// DatasetRandomReader over them (sort_and_shuffle + compute_offset); read() reads from it.
/// The file is read at build time only for the column names, when field_names is empty.
/// @code
///   auto reader = std::make_shared<moka::DBFileReader>("/data/cache.ldb", "LevelDB");
///   moka::TaskGroup tg([&] { moka::pipe(reader, {.output = dst.writer(), .num_runtime_threads = 8}); });
///   session.run(tg);
/// @endcode
/// Errors (InvalidInput): an unregistered db_type ("db_type [X] is not available. ..."), a missing
/// file when the columns must be read from it ("db_path [P] does not exist"), batch_size <= 0,
/// read() before setup_ex ("setup_ex must be called first").
/// Thread-safety: build-time object (one thread); the nets it builds run on any number of threads.
class DBFileReader : public Reader {
 public:
  DBFileReader(std::string db_path, std::string db_type, DBFileReaderOptions options = {});

  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadOutput read(Net& read_net) override;
  std::string type_name() const override { return "DBFileReader"; }

  const std::string& db_path() const noexcept { return db_path_; }
  const std::string& db_type() const noexcept { return db_type_; }
  const std::string& name() const noexcept { return name_; }
  int64_t batch_size() const noexcept { return batch_size_; }
  bool loop_over() const noexcept { return loop_over_; }
  /// The dataset whose blobs hold the rows (`<name>_dataset`; bound by setup_ex/build steps).
  const Dataset& dataset() const noexcept { return ds_; }

 protected:
  /// For CachedReader: the schema is given (the original reader's), so the file is not read.
  DBFileReader(std::string db_path, std::string db_type, DBFileReaderOptions options, schema::Field schema);
  /// `InitEmptyRecord` of the dataset under NameScope(name()) into net.
  void init_field_blobs_as_empty(Net& net);
  /// `Load` of the dataset blobs from the file into net.
  void feed_field_blobs_from_db_file(Net& net);
  /// `Save` of the dataset blobs under their column names into net.
  void save_field_blobs_to_db_file(Net& net);

  std::string db_path_;
  std::string db_type_;
  std::string name_;
  int64_t batch_size_;
  bool loop_over_;
  Dataset ds_;
  std::shared_ptr<DatasetRandomReader> ds_reader_;
};

/// Optional arguments of CachedReader.
struct CachedReaderOptions {
  std::string name{};        ///< as DBFileReaderOptions::name
  int64_t batch_size = 100;  ///< rows per read from the cache
  bool loop_over = false;
};

/// @brief A DBFileReader whose file is a cache of another reader (Caffe2's `CachedReader`).
///
/// build_cache_step() returns the step that fills the cache: empty dataset blobs, a pipe of the
/// original reader into the dataset (16 static threads), and a Save of the columns to db_path.
/// When db_path exists already (checked when the step is built) the step is empty and the
/// original reader is never read — delete the file, or pass overwrite, to rebuild it.
/// @code
///   auto cached = std::make_shared<moka::CachedReader>(src.reader(), "/tmp/cache.ldb");
///   session.run(cached->build_cache_step());
///   moka::TaskGroup tg([&] { moka::pipe(cached, {.output = dst.writer(), .num_runtime_threads = 8}); });
///   session.run(tg);
/// @endcode
/// Errors: as DBFileReader; InvalidInput when original_reader is null ("original_reader can't be None").
/// Thread-safety: build-time object.
class CachedReader final : public DBFileReader {
 public:
  CachedReader(std::shared_ptr<Reader> original_reader, std::string db_path, std::string db_type = "LevelDB",
               CachedReaderOptions options = {});

  /// @brief The step that builds the cache; an empty step named "build_step" when db_path exists
  /// and not overwrite, else "build_cache" = [init net, copy step, save net].
  ExecutionStep build_cache_step(bool overwrite = false);
  std::string type_name() const override { return "CachedReader"; }
  const std::shared_ptr<Reader>& original_reader() const noexcept { return original_reader_; }

 private:
  std::shared_ptr<Reader> original_reader_;
};

}  // namespace moka
