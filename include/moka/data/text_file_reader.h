// TextFileReader: a Reader of the rows of a delimited text file (Caffe2's text_file_reader.py; docs/pipelines.md §10).
#pragma once

#include <cstdint>
#include <string>

#include "moka/builder/blob_ref.h"
#include "moka/builder/net.h"
#include "moka/data/reader.h"
#include "moka/data/schema.h"

namespace moka {

/// Optional arguments of TextFileReader beyond Caffe2's.
struct TextFileReaderOptions {
  int64_t num_passes = 1;  ///< times the file is read (> 0)
  int64_t batch_size = 1;  ///< rows per read (> 0)
  char delimiter = '\t';   ///< column separator ('\t': TSV, ',': CSV without quoting)
};

/// @brief Reads the rows of a text file with one column per field of a Struct of Scalars
/// (Caffe2's `TextFileReader(init_net, filename, schema, num_passes, batch_size)`).
///
/// The constructor emits `CreateTextFileReader` into init_net (the blob that holds the file and the read
/// position; a checkpoint of it resumes the file where it stopped); read() emits `TextFileReaderRead`
/// and `IsEmpty` of its first field. reset() emits the CreateTextFileReader again, which rewinds.
/// @code
///   moka::schema::Struct rec{{"x", moka::schema::Scalar(moka::DType::Float)},
///                            {"y", moka::schema::Scalar(moka::DType::Float)}};
///   auto reader = std::make_shared<moka::TextFileReader>(init, "data.tsv", rec, moka::TextFileReaderOptions{
///       .batch_size = 256});
///   moka::pipe(reader, {.output = queue_writer, .num_runtime_threads = 2});
/// @endcode
/// Errors (InvalidInput): a schema that is not a Struct of Scalars with known dtypes, num_passes or
/// batch_size < 1. Thread-safety: build-time object; the nets it builds run on any number of threads.
class TextFileReader : public Reader {
 public:
  TextFileReader(Net& init_net, std::string filename, const schema::Field& schema, TextFileReaderOptions options = {});

  ReadOutput read(Net& read_net) override;
  void reset(Net& net) override;
  std::string type_name() const override { return "TextFileReader"; }

  const std::string& filename() const noexcept { return filename_; }
  int64_t batch_size() const noexcept { return options_.batch_size; }
  /// The blob CreateTextFileReader writes.
  const BlobRef& reader_blob() const noexcept { return reader_; }

 private:
  std::vector<Arg> create_args() const;

  std::string filename_;
  TextFileReaderOptions options_;
  BlobRef reader_;
};

}  // namespace moka
