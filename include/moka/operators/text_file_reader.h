// TextFileReaderInstance: rows of a delimited text file (TSV by default) read into one tensor per field, the object
// CreateTextFileReader puts in a blob and TextFileReaderRead reads from (Caffe2's text_file_reader;
// docs/pipelines.md §10). Its position is part of the object, so a checkpoint of the blob resumes the file there.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "moka/core/dtype.h"
#include "moka/core/tensor.h"

namespace moka {

/// What a text file reader reads: the file, its fields and how many times it is read.
struct TextFileReaderSpec {
  std::string filename{};
  std::vector<DType> field_types{};        ///< one per column; numeric, bool or string
  std::vector<std::string> field_names{};  ///< for error messages; empty: "field 0", "field 1", ...
  int64_t num_passes = 1;                  ///< times the file is read before the reader stops (> 0)
  char delimiter = '\t';                   ///< between columns; '\n' ends a row

  bool operator==(const TextFileReaderSpec&) const = default;
};

/// Where a text file reader stands: the pass (0-based), the byte offset of the next row, and the
/// number of lines of the file before that offset (so an error can name its line).
struct TextFileReaderPosition {
  int64_t pass = 0;
  int64_t offset = 0;
  int64_t line = 0;

  bool operator==(const TextFileReaderPosition&) const = default;
};

/// @brief Reads rows of a delimited text file into tensors (Caffe2's `TextFileReaderInstance`).
///
/// A row is one line ('\n', a trailing '\r' is dropped) of exactly one column per field, separated
/// by the delimiter; blank lines are skipped. Numbers are parsed in full (`1.5x` is an error), bool
/// accepts 0/1/true/false, a string field takes its column unchanged. After the last row of a pass the
/// next pass starts at the beginning of the file, within the same batch; after num_passes the reader
/// returns no more rows. Errors are InvalidInput naming file, line, field and text
/// (`data.tsv:17: expected 3 columns (x0, x1, y), found 2`); the position stays at the start of the
/// batch, so the same read fails the same way again. NotFound when the file does not exist, RuntimeError
/// when it cannot be opened or read.
/// @code
///   TextFileReaderInstance r({.filename = "data.tsv", .field_types = {DType::Float, DType::Int64}});
///   Tensor x, y;
///   std::vector<Tensor*> out{&x, &y};
///   int64_t rows = r.read(128, out);   // x, y now hold `rows` values each
/// @endcode
/// Thread-safety: every method may be called concurrently (one mutex); concurrent reads take whole
/// batches in turn, each row exactly once.
class TextFileReaderInstance {
 public:
  /// Opens the file (NotFound or RuntimeError naming it when it cannot be); InvalidInput for an empty field list, a
  /// dtype that has no text form, names that do not match the types in number, or num_passes < 1.
  explicit TextFileReaderInstance(TextFileReaderSpec spec, TextFileReaderPosition position = {});
  ~TextFileReaderInstance();
  TextFileReaderInstance(const TextFileReaderInstance&) = delete;
  TextFileReaderInstance& operator=(const TextFileReaderInstance&) = delete;

  /// @brief Reads up to max_rows rows; out[i] becomes a 1-d tensor of field i with one value per row.
  /// Returns the number of rows (0 once every pass is done).
  int64_t read(int64_t max_rows, std::span<Tensor* const> out);

  const TextFileReaderSpec& spec() const noexcept { return spec_; }
  TextFileReaderPosition position() const;
  /// @brief Moves to a position taken by position() (from a checkpoint). InvalidInput when it does
  /// not lie at the start of a line of the file as it is now (the file changed), naming the file.
  void seek(TextFileReaderPosition position);
  /// Back to the first row of the first pass.
  void reset();
  /// The file's size in bytes when it was opened.
  int64_t file_size() const noexcept { return file_size_; }

 private:
  bool next_line(std::string_view& line);  // under mu_; false at the end of the file
  void fill_buffer();
  void rewind_to(int64_t offset);
  std::string field_label(std::size_t i) const;

  const TextFileReaderSpec spec_;
  int fd_ = -1;
  int64_t file_size_ = 0;
  mutable std::mutex mu_;
  TextFileReaderPosition pos_{};
  std::string buf_;          // bytes of the file from buf_offset_ on
  int64_t buf_offset_ = 0;   // file offset of buf_[0]
  std::size_t buf_pos_ = 0;  // next unread byte in buf_ (file offset buf_offset_ + buf_pos_ = pos_.offset)
};

}  // namespace moka
