// Readers and writers of data pipelines (Caffe2's dataio.py; docs/pipelines.md §2): Reader, Writer, Pipe,
// ReaderBuilder, PipedReaderBuilder, and ReaderSource / WriterSink (what pipe() reads from and writes to).
#pragma once

#include <any>
#include <concepts>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/data/schema.h"

namespace moka {

class Workspace;
class Dataset;

/// What Reader::read() emits into a net: the stop blob and the field blobs.
struct ReadOutput {
  BlobRef should_stop;
  std::vector<BlobRef> fields;
};

/// @brief What Reader::read_ex() returns (Caffe2's `(nets, should_stop, fields)`).
///
/// `fields` is nullopt when the stream carries no record (a processor that returned none).
struct ReadNets {
  std::vector<StepOrNet> nets;
  BlobRef should_stop;
  std::optional<std::vector<BlobRef>> fields;
};

/// read_ex() with the fields wrapped in the reader's schema (Caffe2's `read_record_ex`).
struct ReadRecordNets {
  std::vector<StepOrNet> nets;
  BlobRef should_stop;
  std::optional<schema::Field> record;  ///< the schema bound to the fields; nullopt: no record
  std::vector<BlobRef> fields;          ///< the field blobs (also when there is no schema)
  bool has_record = false;              ///< false: the stream carries no record (no writer)
};

/// What Reader::execution_step() returns.
struct ReaderStep {
  ExecutionStep step;
  std::vector<BlobRef> fields;
  std::optional<schema::Field> record;
};

/// @brief Reads batches of records in nets (Caffe2's `dataio.Reader`).
///
/// A reader only *emits* operators: setup_ex() adds one-time work (create a cursor, a counter)
/// to a task's init and exit nets; read_ex() returns the nets one read runs and the blob that
/// turns true when there is nothing more to read. Readers are shared (std::shared_ptr): a pipe
/// instantiates the same read nets once per thread or task instance, so the emitted read
/// operators must be atomic (the dataset and queue operators are).
/// @code
///   auto reader = dataset.reader();
///   moka::Net init("init"), exit_net("exit"), read("read");
///   reader->setup_ex(init, exit_net);
///   moka::ReadOutput out = reader->read(read);   // out.should_stop, out.fields
/// @endcode
/// Thread-safety: built by one thread; the emitted nets may run concurrently.
class Reader {
 public:
  explicit Reader(std::optional<schema::Field> schema = std::nullopt);
  virtual ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool has_schema() const { return schema_.has_value(); }
  /// @brief The record schema; InvalidInput "Schema not provided for this reader." when none.
  virtual schema::Field schema() const;

  /// @brief Adds the reader's one-time work to a task's init net (and exit net, when given).
  /// Default: nothing. Thread-safety: build-time only.
  virtual void setup_ex(Net init_net, std::optional<Net> exit_net);
  /// @brief The nets of one read, per thread/instance: default `Net("reader_body")` + read(). Each call returns
  /// nets of its own (a pipe appends its record count to the last one, docs/pipelines.md §5.1).
  virtual ReadNets read_ex(Net local_init_net, Net local_finish_net);
  /// read_ex() with the fields wrapped in schema() when the reader has one.
  ReadRecordNets read_record_ex(Net local_init_net, Net local_finish_net);
  /// @brief Emits one read into read_net. InvalidInput for readers that only support read_ex().
  virtual ReadOutput read(Net& read_net);
  /// read() with the fields wrapped in the schema (nullopt record without one).
  std::pair<BlobRef, std::optional<schema::Field>> read_record(Net& read_net);
  /// @brief Emits operators that rewind the reader; default: InvalidInput "This reader cannot be resetted.".
  virtual void reset(Net& net);
  /// @brief A step that reads until the reader stops (or external_should_stop is true): Caffe2's
  /// `execution_step(reader_net_name, external_should_stop)`.
  ReaderStep execution_step(const std::string& reader_net_name = {},
                            const std::optional<BlobRef>& external_should_stop = std::nullopt);

  /// Name used in task and profiler names (Caffe2's processor_name: the class name).
  virtual std::string type_name() const { return "Reader"; }

 protected:
  void set_schema(std::optional<schema::Field> schema) { schema_ = std::move(schema); }
  std::optional<schema::Field> schema_;
};

/// @brief Writes batches of records in nets (Caffe2's `dataio.Writer`).
/// @code
///   auto writer = dataset.writer();
///   writer->setup_ex(init, exit_net);
///   writer->write_record(net, record);
/// @endcode
/// Thread-safety: built by one thread; the emitted nets may run concurrently.
class Writer {
 public:
  Writer() = default;
  virtual ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// The schema of the last record written, if any.
  const std::optional<schema::Field>& schema() const { return schema_; }
  /// @brief Emits the write of fields into net.
  virtual void write(Net& net, const std::vector<BlobRef>& fields) = 0;
  /// write() of a record (remembers its schema).
  void write_record(Net& net, const schema::Field& record);
  /// @brief One-time work in the task's init/exit nets; default: commit(exit_net).
  virtual void setup_ex(Net init_net, std::optional<Net> exit_net);
  /// @brief The nets of one write, per thread/instance; default `Net("write_net")` + write().
  /// stop_blob is the stream's status blob: a writer may set it to stop the stream.
  virtual std::vector<StepOrNet> write_ex(const std::vector<BlobRef>& fields, Net local_init_net, Net local_finish_net,
                                          const BlobRef& stop_blob);
  /// @brief write_ex() of a record; without stop_blob, `local_init_net.next_name("dequeue_status")`.
  std::pair<std::vector<StepOrNet>, BlobRef> write_record_ex(const schema::Field& record, Net local_init_net,
                                                             Net local_finish_net,
                                                             std::optional<BlobRef> stop_blob = std::nullopt);
  /// write_record_ex() of plain fields.
  std::pair<std::vector<StepOrNet>, BlobRef> write_record_ex(const std::vector<BlobRef>& fields, Net local_init_net,
                                                             Net local_finish_net,
                                                             std::optional<BlobRef> stop_blob = std::nullopt);
  /// @brief Emits the work that finishes writing; default nothing.
  virtual void commit(std::optional<Net> finish_net);

  virtual std::string type_name() const { return "Writer"; }

 protected:
  std::optional<schema::Field> schema_;
};

/// @brief A channel with readers and writers (Caffe2's `dataio.Pipe`); Queue is one.
///
/// When obj_key is set (Queue uses kLocalSetup), every reader or writer made from it attaches the
/// pipe to its init net under that key, so the TaskGroup that runs them calls setup() once per
/// node run (e.g. to create the queue).
/// Thread-safety: build-time object.
class Pipe : public SetupAttribute, public std::enable_shared_from_this<Pipe> {
 public:
  explicit Pipe(std::optional<schema::Field> schema = std::nullopt, std::string obj_key = {});

  const std::optional<schema::Field>& schema() const { return schema_; }
  virtual std::shared_ptr<Reader> reader() = 0;
  virtual std::shared_ptr<Writer> writer() = 0;
  int num_readers() const { return num_readers_; }
  int num_writers() const { return num_writers_; }

  /// SetupAttribute: default nothing.
  std::vector<StepOrNet> setup(Net& init_net) override;
  std::vector<StepOrNet> exit(Net& exit_net) override;

  /// Caffe2's `_new_writer`: adopts writer_schema if the pipe has none, counts the writer, attaches.
  void new_writer(const std::optional<schema::Field>& writer_schema, Net& writer_init_net);
  /// Caffe2's `_new_reader`: counts the reader, attaches.
  void new_reader(Net& reader_init_net);

  virtual std::string type_name() const { return "Pipe"; }

 protected:
  std::optional<schema::Field> schema_;
  std::string obj_key_;
  int num_readers_ = 0;
  int num_writers_ = 0;
};

/// @brief What pipe() and CompositeReaderBuilder read from: a Reader, a Pipe (Queue) or a Dataset
/// (Caffe2 accepted anything with `.reader()`).
/// Thread-safety: a value type.
class ReaderSource {
 public:
  ReaderSource() = default;
  template <class R>
  requires std::derived_from<R, Reader> ReaderSource(std::shared_ptr<R> reader)
      : reader_(std::move(reader)) {  // NOLINT(google-explicit-constructor)
    if (reader_) name_ = reader_->type_name();
  }
  template <class P>
  requires std::derived_from<P, Pipe> ReaderSource(std::shared_ptr<P> pipe)
      : pipe_(std::move(pipe)) {  // NOLINT(google-explicit-constructor)
    if (pipe_) name_ = pipe_->type_name();
  }
  ReaderSource(const Dataset& dataset);  // NOLINT(google-explicit-constructor)

  bool empty() const { return !reader_ && !pipe_ && !make_; }
  explicit operator bool() const { return !empty(); }
  /// @brief The reader: the Reader itself, else a new one from the pipe or dataset.
  /// InvalidInput "in must be a reader, queue or stream." when empty.
  std::shared_ptr<Reader> reader() const;
  /// The Pipe, when this is one.
  const std::shared_ptr<Pipe>& pipe() const { return pipe_; }
  /// Caffe2's processor_name(input): "DatasetReader", "Queue", "Dataset", ...
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<Reader> reader_;
  std::shared_ptr<Pipe> pipe_;
  std::function<std::shared_ptr<Reader>()> make_;
  std::string name_;
};

/// @brief What pipe() writes to: a Writer, a Pipe (Queue), a Dataset, or nothing (pipe() then
/// makes a Queue).
/// Thread-safety: a value type.
class WriterSink {
 public:
  WriterSink() = default;
  template <class W>
  requires std::derived_from<W, Writer> WriterSink(std::shared_ptr<W> writer)
      : writer_(std::move(writer)) {  // NOLINT(google-explicit-constructor)
    if (writer_) name_ = writer_->type_name();
  }
  template <class P>
  requires std::derived_from<P, Pipe> WriterSink(std::shared_ptr<P> pipe)
      : pipe_(std::move(pipe)) {  // NOLINT(google-explicit-constructor)
    if (pipe_) {
      name_ = pipe_->type_name();
      source_ = ReaderSource(pipe_);
    }
  }
  WriterSink(const Dataset& dataset);  // NOLINT(google-explicit-constructor)

  bool empty() const { return !writer_ && !pipe_ && !make_; }
  explicit operator bool() const { return !empty(); }
  /// True for a Writer (a Pipe or Dataset has a writer()).
  bool is_writer() const { return writer_ != nullptr; }
  const std::shared_ptr<Writer>& writer_object() const { return writer_; }
  const std::shared_ptr<Pipe>& pipe() const { return pipe_; }
  /// The Pipe or Dataset as something to read from (empty for a Writer): what pipe() returns.
  const ReaderSource& source() const { return source_; }
  /// The writer: the Writer itself, else a new one from the pipe or dataset.
  std::shared_ptr<Writer> writer() const;
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<Writer> writer_;
  std::shared_ptr<Pipe> pipe_;
  std::function<std::shared_ptr<Writer>()> make_;
  std::string name_;
  ReaderSource source_;
};

/// Keyword arguments of ReaderBuilder::setup / new_reader (Caffe2 passed `**kwargs`).
struct ReaderBuilderArgs {
  Workspace* ws = nullptr;                  ///< e.g. a workspace to prepare data in
  std::any limiter{};                       ///< CompositeReaderBuilder passes it to its last builder only
  std::map<std::string, std::any> extra{};  ///< anything else a builder understands
};

/// data_finished blobs a builder's setup() reports, by name.
using DataFinishedMap = std::map<std::string, BlobRef>;

/// @brief Makes readers of one schema (Caffe2's `dataio.ReaderBuilder`).
/// Thread-safety: build-time object.
class ReaderBuilder {
 public:
  virtual ~ReaderBuilder();
  virtual schema::Field schema() const = 0;
  /// One-time setup before new_reader(); returns data_finished blobs by name (may be empty).
  virtual DataFinishedMap setup(const ReaderBuilderArgs& args) = 0;
  /// A new reader (a Reader, or a Pipe/Dataset with a reader()).
  virtual ReaderSource new_reader(const ReaderBuilderArgs& args) = 0;
};

/// A piper: given the reader a builder made (and the builder's args), the source to read instead.
using Piper = std::function<ReaderSource(const ReaderSource& reader, const ReaderBuilderArgs& args)>;

/// @brief A ReaderBuilder whose readers go through piper first (Caffe2's PipedReaderBuilder):
/// `new_reader(args) = piper(builder.new_reader(args), args)`, turned into a Reader.
class PipedReaderBuilder final : public ReaderBuilder {
 public:
  PipedReaderBuilder(std::shared_ptr<ReaderBuilder> builder, Piper piper);
  schema::Field schema() const override;
  DataFinishedMap setup(const ReaderBuilderArgs& args) override;
  ReaderSource new_reader(const ReaderBuilderArgs& args) override;

 private:
  std::shared_ptr<ReaderBuilder> builder_;
  Piper piper_;
};

}  // namespace moka
