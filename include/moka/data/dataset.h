// Dataset: an in-memory table held in blobs, with cursor-based readers and an appending writer
// (Caffe2's dataset.py; docs/pipelines.md §3).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/data/reader.h"
#include "moka/data/schema.h"

namespace moka {

/// Optional arguments of Dataset::reader().
struct DatasetReaderOptions {
  /// Given: the cursor is created in this net now; otherwise in the init net of the task that
  /// reads (fresh every run).
  std::optional<Net> init_net{};
  std::string cursor_name{};  ///< default `<dataset name>_cursor`
  int64_t batch_size = 1;     ///< rows per read (> 0)
  bool enforce_batch_size = false;
};

/// Optional arguments of Dataset::random_reader().
struct DatasetRandomReaderOptions {
  std::optional<Net> init_net{};  ///< as DatasetReaderOptions::init_net
  std::string cursor_name{};      ///< default `<dataset name>_cursor`
  int64_t batch_size = 1;
  bool loop_over = false;  ///< start over at the end instead of stopping
  bool enforce_batch_size = false;
};

class DatasetRandomReader;

/// @brief A table of named columns stored in blobs (Caffe2's `dataset.Dataset`).
///
/// The columns are the scalars of a record; each blob's first dimension is the row. Readers share
/// one cursor blob (so several threads split the rows between them); the writer appends under a
/// mutex. Cursors are blobs, so a reader's position is part of the workspace.
/// @code
///   moka::Net init("init");
///   moka::schema::Field data = moka::schema::ConstRecord(init, moka::schema::Struct(
///       {{"val", moka::schema::Scalar(moka::Tensor::vector<int64_t>({1, 2, 3}))}}));
///   moka::Dataset ds(data);
///   auto reader = ds.reader();                 // batch_size 1
///   auto writer = dst.writer();
/// @endcode
/// Thread-safety: a handle (copies share one dataset); build-time object.
class Dataset {
 public:
  /// fields: a record (bound to blobs) or a schema (init_empty() binds it).
  explicit Dataset(const schema::Field& fields, std::string name = "dataset");
  /// A Struct of scalars with these column names (Caffe2's list-of-names form).
  explicit Dataset(const std::vector<std::string>& column_names, std::string name = "dataset");

  /// @brief A reader over the rows; InvalidInput "Dataset not initialized." when the dataset has
  /// no blobs, or batch_size <= 0.
  std::shared_ptr<Reader> reader(const DatasetReaderOptions& options = {}) const;
  /// @brief A reader in the order of an index blob (ReadRandomBatch); see DatasetRandomReader.
  std::shared_ptr<DatasetRandomReader> random_reader(const DatasetRandomReaderOptions& options = {}) const;
  /// @brief A writer that appends (CheckDatasetConsistency + AtomicAppend under a mutex created
  /// by setup; given init_net, right there). InvalidInput "Dataset not initialized.".
  std::shared_ptr<Writer> writer(std::optional<Net> init_net = std::nullopt) const;

  /// Binds the schema to new blobs holding no rows (InitEmptyRecord) in init_net; returns the record.
  schema::Field init_empty(Net& init_net);
  /// The record of blobs ("Dataset not initialized." when unbound).
  schema::Field content() const;
  std::vector<BlobRef> get_blobs() const { return content().field_blobs(); }
  std::vector<std::string> field_names() const { return state_->schema.field_names(); }
  std::vector<std::optional<DType>> field_types() const { return state_->schema.field_types(); }
  const std::string& name() const { return state_->name; }
  bool initialized() const { return state_->field_blobs.has_value(); }
  std::string type_name() const { return "Dataset"; }

 private:
  struct State {
    schema::Field schema;
    std::string name;
    std::optional<std::vector<BlobRef>> field_blobs;
  };
  std::shared_ptr<State> state_;
};

/// @brief Reads a Dataset in the order of an index blob with `ReadRandomBatch` (Caffe2's
/// `_DatasetRandomReader`). Before reading, emit sort_and_shuffle() (or set_indices()) and
/// compute_offset() into an init net.
/// Thread-safety: build-time object.
class DatasetRandomReader final : public Reader {
 public:
  DatasetRandomReader(const Dataset& dataset, const DatasetRandomReaderOptions& options);
  /// Creates the cursor (once).
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  /// `ResetCursor` + `ComputeOffset` into net (output blob "offsets", scoped).
  void compute_offset(Net& net);
  /// @brief `ResetCursor` + `SortAndShuffle` into net (output blob "indices", scoped); extra
  /// arguments (e.g. a seed) are passed to the operator.
  void sort_and_shuffle(Net& net, const std::string& sort_by_field = {}, int64_t shuffle_size = 1,
                        int64_t batch_size = 1, std::vector<Arg> extra_args = {});
  /// Uses a blob of int64 row indices instead of sort_and_shuffle().
  void set_indices(const BlobRef& indices) { indices_ = indices; }
  /// @brief Reads only shard `shard_id` of `num_shards` (moka addition, docs/pipelines.md §3.2):
  /// `ShardIndices` into net, after compute_offset() (and sort_and_shuffle(), whose order it then
  /// splits). Shards are whole batches of this reader's batch_size; the readers of shards
  /// 0..num_shards-1 of one dataset read every record exactly once between them. InvalidInput
  /// before compute_offset(), or for a shard_id outside [0, num_shards).
  void shard(Net& net, int64_t shard_id, int64_t num_shards);
  ReadOutput read(Net& read_net) override;
  void reset(Net& net) override;
  std::string type_name() const override { return "DatasetRandomReader"; }

 private:
  Dataset dataset_;  // a handle: shares the dataset
  DatasetRandomReaderOptions options_;
  std::string name_;
  std::optional<BlobRef> cursor_, indices_, offsets_;
};

}  // namespace moka
