// Reader, Writer, Pipe, ReaderSource/WriterSink and PipedReaderBuilder: the base protocol of data pipelines.
#include "moka/data/reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moka/core/error.h"
#include "moka/data/dataset.h"

namespace moka {

// ---- Reader ----

Reader::Reader(std::optional<schema::Field> schema) : schema_(std::move(schema)) {}
Reader::~Reader() = default;

schema::Field Reader::schema() const {
  if (!schema_) throw InvalidInput(fmt::format("Schema not provided for this reader. ({})", type_name()));
  return *schema_;
}

void Reader::setup_ex(Net /*init_net*/, std::optional<Net> /*exit_net*/) {}

ReadNets Reader::read_ex(Net /*local_init_net*/, Net /*local_finish_net*/) {
  Net read_net("reader_body");
  ReadOutput out = read(read_net);
  return ReadNets{{read_net}, out.should_stop, out.fields};
}

ReadOutput Reader::read(Net& /*read_net*/) {
  throw InvalidInput(fmt::format("{} does not support read(); use read_ex()", type_name()));
}

ReadRecordNets Reader::read_record_ex(Net local_init_net, Net local_finish_net) {
  ReadNets r = read_ex(std::move(local_init_net), std::move(local_finish_net));
  ReadRecordNets out{std::move(r.nets), r.should_stop, std::nullopt, {}};
  if (r.fields) {
    out.has_record = true;
    out.fields = *r.fields;
    if (has_schema()) out.record = schema::from_blob_list(schema(), *r.fields);
  }
  return out;
}

std::pair<BlobRef, std::optional<schema::Field>> Reader::read_record(Net& read_net) {
  ReadOutput r = read(read_net);
  if (!has_schema()) return {r.should_stop, std::nullopt};
  return {r.should_stop, schema::from_blob_list(schema(), r.fields)};
}

void Reader::reset(Net& /*net*/) {
  throw InvalidInput(fmt::format("This reader cannot be resetted. ({})", type_name()));
}

ReaderStep Reader::execution_step(const std::string& reader_net_name,
                                  const std::optional<BlobRef>& external_should_stop) {
  Net reader_net(reader_net_name.empty() ? std::string("reader") : reader_net_name);
  ReadOutput r = read(reader_net);
  BlobRef should_stop = r.should_stop;
  if (external_should_stop) should_stop = reader_net.op("Or", {*external_should_stop, should_stop}).single();
  ExecutionStep step =
      moka::execution_step(fmt::format("{}_step", reader_net_name.empty() ? "reader" : reader_net_name), reader_net,
                           {.should_stop_blob = should_stop});
  std::optional<schema::Field> record;
  if (has_schema()) record = schema::from_blob_list(schema(), r.fields);
  return ReaderStep{step, r.fields, record};
}

// ---- Writer ----

Writer::~Writer() = default;

void Writer::write_record(Net& net, const schema::Field& record) {
  schema_ = record;
  write(net, record.field_blobs());
}

void Writer::setup_ex(Net /*init_net*/, std::optional<Net> exit_net) { commit(std::move(exit_net)); }

std::vector<StepOrNet> Writer::write_ex(const std::vector<BlobRef>& fields, Net /*local_init_net*/,
                                        Net /*local_finish_net*/, const BlobRef& /*stop_blob*/) {
  Net write_net("write_net");
  write(write_net, fields);
  return {write_net};
}

std::pair<std::vector<StepOrNet>, BlobRef> Writer::write_record_ex(const schema::Field& record, Net local_init_net,
                                                                   Net local_finish_net,
                                                                   std::optional<BlobRef> stop_blob) {
  schema_ = record;
  return write_record_ex(record.field_blobs(), std::move(local_init_net), std::move(local_finish_net),
                         std::move(stop_blob));
}

std::pair<std::vector<StepOrNet>, BlobRef> Writer::write_record_ex(const std::vector<BlobRef>& fields,
                                                                   Net local_init_net, Net local_finish_net,
                                                                   std::optional<BlobRef> stop_blob) {
  BlobRef stop = stop_blob ? *stop_blob : local_init_net.next_name("dequeue_status");
  auto nets = write_ex(fields, local_init_net, std::move(local_finish_net), stop);
  return {std::move(nets), stop};
}

void Writer::commit(std::optional<Net> /*finish_net*/) {}

// ---- Pipe ----

Pipe::Pipe(std::optional<schema::Field> schema, std::string obj_key)
    : schema_(std::move(schema)), obj_key_(std::move(obj_key)) {}

std::vector<StepOrNet> Pipe::setup(Net& /*init_net*/) { return {}; }
std::vector<StepOrNet> Pipe::exit(Net& /*exit_net*/) { return {}; }

void Pipe::new_writer(const std::optional<schema::Field>& writer_schema, Net& writer_init_net) {
  // Caffe2 kept the first schema and ignored later ones; a writer of other fields would then
  // hand its values to readers under the wrong names.
  if (writer_schema && schema_ && writer_schema->field_names() != schema_->field_names())
    throw InvalidInput(fmt::format("{}: a writer's record fields [{}] differ from the pipe's [{}]", type_name(),
                                   fmt::join(writer_schema->field_names(), ", "),
                                   fmt::join(schema_->field_names(), ", ")));
  if (writer_schema && !schema_) schema_ = writer_schema->clone_schema();
  ++num_writers_;
  if (!obj_key_.empty()) writer_init_net.add_attribute(obj_key_, shared_from_this());
}

void Pipe::new_reader(Net& reader_init_net) {
  ++num_readers_;
  if (!obj_key_.empty()) reader_init_net.add_attribute(obj_key_, shared_from_this());
}

// ---- ReaderSource / WriterSink ----

ReaderSource::ReaderSource(const Dataset& dataset)
    : make_([dataset] { return dataset.reader(); }), name_(dataset.type_name()) {}

std::shared_ptr<Reader> ReaderSource::reader() const {
  if (reader_) return reader_;
  if (pipe_) return pipe_->reader();
  if (make_) return make_();
  throw InvalidInput("in must be a reader, queue or stream.");
}

WriterSink::WriterSink(const Dataset& dataset)
    : make_([dataset] { return dataset.writer(); }), name_(dataset.type_name()), source_(dataset) {}

std::shared_ptr<Writer> WriterSink::writer() const {
  if (writer_) return writer_;
  if (pipe_) return pipe_->writer();
  if (make_) return make_();
  throw InvalidInput("output must be a reader, queue or stream.");
}

// ---- ReaderBuilder ----

ReaderBuilder::~ReaderBuilder() = default;

PipedReaderBuilder::PipedReaderBuilder(std::shared_ptr<ReaderBuilder> builder, Piper piper)
    : builder_(std::move(builder)), piper_(std::move(piper)) {
  if (!builder_) throw InvalidInput("PipedReaderBuilder: the builder is null");
  if (!piper_) throw InvalidInput("PipedReaderBuilder: the piper is empty");
}

schema::Field PipedReaderBuilder::schema() const { return builder_->schema(); }
DataFinishedMap PipedReaderBuilder::setup(const ReaderBuilderArgs& args) { return builder_->setup(args); }

ReaderSource PipedReaderBuilder::new_reader(const ReaderBuilderArgs& args) {
  ReaderSource out = piper_(builder_->new_reader(args), args);
  return ReaderSource(out.reader());
}

}  // namespace moka
