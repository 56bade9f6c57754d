// Dataset and its readers and writer: cursor reads (ReadNextBatch / ReadRandomBatch) and mutex-guarded appends.
#include "moka/data/dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "moka/builder/name_scope.h"
#include "moka/core/error.h"

namespace moka {

namespace {

std::vector<BlobRef> scoped_outputs(const std::vector<std::string>& names) {
  std::vector<BlobRef> out;
  out.reserve(names.size());
  for (const auto& n : names) out.emplace_back(scoped_name(n));
  return out;
}

// Caffe2's _DatasetReader.
class DatasetReader final : public Reader {
 public:
  DatasetReader(const Dataset& dataset, const DatasetReaderOptions& options)
      : Reader(dataset.content()),
        dataset_(dataset),
        name_(options.cursor_name.empty() ? dataset.name() + "_cursor" : options.cursor_name),
        batch_size_(options.batch_size),
        enforce_batch_size_(options.enforce_batch_size) {}

  void setup_ex(Net init_net, std::optional<Net> /*exit_net*/) override {
    // Idempotent: a reader given an init net has its cursor already; the pipe's task init then
    // adds nothing (so the cursor survives between runs).
    if (cursor_) return;
    cursor_ =
        init_net.op("CreateTreeCursor", {}, {init_net.next_scoped_blob(name_)}, {{"fields", dataset_.field_names()}})
            .single();
  }

  ReadOutput read(Net& read_net) override {
    if (!cursor_) throw InvalidInput(fmt::format("DatasetReader {}: setup not called.", name_));
    const schema::Field content = dataset_.content();
    NameScope scope(read_net.next_name(name_).name());
    std::vector<BlobRef> inputs{*cursor_};
    for (const auto& b : content.field_blobs()) inputs.push_back(b);
    std::vector<Arg> args{{"batch_size", batch_size_}};
    if (enforce_batch_size_) args.emplace_back("enforce_batch_size", true);
    BlobRefs fields = read_net.op("ReadNextBatch", inputs, scoped_outputs(content.field_names()), std::move(args));
    BlobRef should_stop = read_net.op("IsEmpty", {fields.front()}).single();
    return ReadOutput{should_stop, std::vector<BlobRef>(fields.begin(), fields.end())};
  }

  void reset(Net& net) override {
    if (!cursor_) throw InvalidInput(fmt::format("DatasetReader {}: setup not called.", name_));
    net.op("ResetCursor", {*cursor_}, 0);
  }

  std::string type_name() const override { return "DatasetReader"; }

 private:
  Dataset dataset_;
  std::string name_;
  int64_t batch_size_;
  bool enforce_batch_size_;
  std::optional<BlobRef> cursor_;
};

// Caffe2's _DatasetWriter.
class DatasetWriter final : public Writer {
 public:
  explicit DatasetWriter(schema::Field content) : content_(std::move(content)) {}

  void setup_ex(Net init_net, std::optional<Net> /*exit_net*/) override {
    if (!mutex_) mutex_ = init_net.op("CreateMutex", {}).single();
  }

  void write(Net& net, const std::vector<BlobRef>& fields) override {
    if (!mutex_) throw InvalidInput("DatasetWriter: setup not called.");
    const std::vector<BlobRef> blobs = content_.field_blobs();
    if (fields.size() != blobs.size())
      throw InvalidInput(fmt::format("Expected {} fields, got {}. (dataset writer of {})", blobs.size(), fields.size(),
                                     content_.repr()));
    net.op("CheckDatasetConsistency", fields, 0, {{"fields", content_.field_names()}});
    std::vector<BlobRef> inputs{*mutex_};
    inputs.insert(inputs.end(), blobs.begin(), blobs.end());
    inputs.insert(inputs.end(), fields.begin(), fields.end());
    net.op("AtomicAppend", inputs, blobs);
  }

  std::vector<StepOrNet> write_ex(const std::vector<BlobRef>& fields, Net local_init_net, Net local_finish_net,
                                  const BlobRef& stop_blob) override {
    // A record of another shape would be appended column by column into the wrong columns:
    // refuse it now, naming both schemas (Caffe2 only compared the counts).
    if (schema_ && schema_->field_names() != content_.field_names())
      throw InvalidInput(fmt::format("Dataset writer: the record's fields [{}] differ from the dataset's [{}]",
                                     fmt::join(schema_->field_names(), ", "), fmt::join(content_.field_names(), ", ")));
    return Writer::write_ex(fields, std::move(local_init_net), std::move(local_finish_net), stop_blob);
  }

  std::string type_name() const override { return "DatasetWriter"; }

 private:
  schema::Field content_;
  std::optional<BlobRef> mutex_;
};

}  // namespace

Dataset::Dataset(const schema::Field& fields, std::string name) : state_(std::make_shared<State>()) {
  if (!fields.is_struct()) throw InvalidInput(fmt::format("Dataset: fields must be a Struct, got {}", fields.repr()));
  state_->schema = fields;
  state_->name = name.empty() ? std::string("dataset") : std::move(name);
  if (fields.has_blobs()) state_->field_blobs = fields.field_blobs();
}

Dataset::Dataset(const std::vector<std::string>& column_names, std::string name)
    : Dataset(schema::from_column_list(column_names), std::move(name)) {}

schema::Field Dataset::content() const {
  if (!state_->field_blobs) throw InvalidInput(fmt::format("Dataset not initialized. (dataset \"{}\")", name()));
  return schema::from_blob_list(state_->schema, *state_->field_blobs);
}

schema::Field Dataset::init_empty(Net& init_net) {
  schema::Field record = schema::InitEmptyRecord(init_net, state_->schema.clone_schema());
  state_->field_blobs = record.field_blobs();
  return record;
}

std::shared_ptr<Reader> Dataset::reader(const DatasetReaderOptions& options) const {
  if (!initialized()) throw InvalidInput(fmt::format("Dataset not initialized. (dataset \"{}\")", name()));
  if (options.batch_size <= 0)
    throw InvalidInput(fmt::format("Dataset::reader: batch_size must be > 0, got {}", options.batch_size));
  auto r = std::make_shared<DatasetReader>(*this, options);
  if (options.init_net) r->setup_ex(*options.init_net, std::nullopt);
  return r;
}

std::shared_ptr<DatasetRandomReader> Dataset::random_reader(const DatasetRandomReaderOptions& options) const {
  if (!initialized()) throw InvalidInput(fmt::format("Dataset not initialized. (dataset \"{}\")", name()));
  if (options.batch_size <= 0)
    throw InvalidInput(fmt::format("Dataset::random_reader: batch_size must be > 0, got {}", options.batch_size));
  auto r = std::make_shared<DatasetRandomReader>(*this, options);
  if (options.init_net) r->setup_ex(*options.init_net, std::nullopt);
  return r;
}

std::shared_ptr<Writer> Dataset::writer(std::optional<Net> init_net) const {
  if (!initialized()) throw InvalidInput(fmt::format("Dataset not initialized. (dataset \"{}\")", name()));
  auto w = std::make_shared<DatasetWriter>(content());
  if (init_net) w->setup_ex(*init_net, std::nullopt);
  return w;
}

// ---- DatasetRandomReader ----

DatasetRandomReader::DatasetRandomReader(const Dataset& dataset, const DatasetRandomReaderOptions& options)
    : Reader(dataset.content()),
      dataset_(dataset),
      options_(options),
      name_(options.cursor_name.empty() ? dataset.name() + "_cursor" : options.cursor_name) {}

void DatasetRandomReader::setup_ex(Net init_net, std::optional<Net> /*exit_net*/) {
  if (cursor_) return;
  cursor_ =
      init_net.op("CreateTreeCursor", {}, {init_net.next_scoped_blob(name_)}, {{"fields", dataset_.field_names()}})
          .single();
}

void DatasetRandomReader::reset(Net& net) {
  if (!cursor_) throw InvalidInput(fmt::format("DatasetRandomReader {}: setup_ex not called", name_));
  net.op("ResetCursor", {*cursor_}, 0);
}

void DatasetRandomReader::compute_offset(Net& net) {
  reset(net);
  std::vector<BlobRef> inputs{*cursor_};
  for (const auto& b : dataset_.get_blobs()) inputs.push_back(b);
  offsets_ = net.op("ComputeOffset", inputs, {BlobRef(scoped_name("offsets"))}).single();
}

void DatasetRandomReader::sort_and_shuffle(Net& net, const std::string& sort_by_field, int64_t shuffle_size,
                                           int64_t batch_size, std::vector<Arg> extra_args) {
  const auto names = dataset_.field_names();
  int64_t sort_by_field_idx = -1;
  if (!sort_by_field.empty()) {
    auto it = std::find(names.begin(), names.end(), sort_by_field);
    if (it == names.end()) throw InvalidInput(fmt::format("Must be valid field. (\"{}\")", sort_by_field));
    sort_by_field_idx = it - names.begin();
  }
  reset(net);
  std::vector<BlobRef> inputs{*cursor_};
  for (const auto& b : dataset_.get_blobs()) inputs.push_back(b);
  std::vector<Arg> args{
      {"sort_by_field_idx", sort_by_field_idx}, {"shuffle_size", shuffle_size}, {"batch_size", batch_size}};
  for (auto& a : extra_args) args.push_back(std::move(a));
  indices_ = net.op("SortAndShuffle", inputs, {BlobRef(scoped_name("indices"))}, std::move(args)).single();
}

void DatasetRandomReader::shard(Net& net, int64_t shard_id, int64_t num_shards) {
  if (!offsets_) throw InvalidInput(fmt::format("DatasetRandomReader {}: shard() needs compute_offset() first", name_));
  if (num_shards < 1 || shard_id < 0 || shard_id >= num_shards)
    throw InvalidInput(fmt::format("DatasetRandomReader {}: shard {} of {} does not exist (shards are 0..num_shards-1)",
                                   name_, shard_id, num_shards));
  std::vector<BlobRef> inputs{*offsets_};
  if (indices_) inputs.push_back(*indices_);
  indices_ = net.op("ShardIndices", inputs, {BlobRef(scoped_name("shard_indices"))},
                    {{"num_shards", num_shards}, {"shard_id", shard_id}, {"block_size", options_.batch_size}})
                 .single();
}

ReadOutput DatasetRandomReader::read(Net& read_net) {
  if (!cursor_) throw InvalidInput("setup_ex not called");
  if (!indices_) throw InvalidInput("sort_and_shuffle not called");
  if (!offsets_) throw InvalidInput("computeoffset not called");
  const schema::Field content = dataset_.content();
  NameScope scope(read_net.next_name(name_).name());
  std::vector<BlobRef> inputs{*cursor_, *indices_, *offsets_};
  for (const auto& b : content.field_blobs()) inputs.push_back(b);
  std::vector<Arg> args{{"batch_size", options_.batch_size}};
  if (options_.enforce_batch_size) args.emplace_back("enforce_batch_size", true);
  if (options_.loop_over) args.emplace_back("loop_over", true);
  BlobRefs fields = read_net.op("ReadRandomBatch", inputs, scoped_outputs(content.field_names()), std::move(args));
  BlobRef should_stop = read_net.op("IsEmpty", {fields.front()}).single();
  return ReadOutput{should_stop, std::vector<BlobRef>(fields.begin(), fields.end())};
}

}  // namespace moka
