// Text file operators (Caffe2's text_file_reader.cc; docs/pipelines.md §10): CreateTextFileReader, TextFileReaderRead.
#include <fmt/format.h>

#include <vector>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "moka/operators/text_file_reader.h"
#include "operators/builtin.h"

namespace moka {

namespace {

TextFileReaderSpec spec_of(const OperatorBase& op) {
  TextFileReaderSpec spec;
  spec.filename = op.args().get_string("filename", "");
  if (spec.filename.empty()) throw InvalidInput(fmt::format("{}: argument \"filename\" is required", op.type()));
  spec.num_passes = op.args().get_int("num_passes", 1);
  if (spec.num_passes < 1)
    throw InvalidInput(fmt::format("{}: argument \"num_passes\" = {} must be positive", op.type(), spec.num_passes));
  const std::vector<int64_t> codes = op.args().get_ints("field_types");
  if (codes.empty()) throw InvalidInput(fmt::format("{}: field_types arg must be non-empty", op.type()));
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const std::optional<DType> t = dtype_from_code(codes[i]);
    if (!t) throw InvalidInput(fmt::format("{}: field_types[{}] = {}", op.type(), i, describe_dtype_code(codes[i])));
    spec.field_types.push_back(*t);
  }
  spec.field_names = op.args().get_strings("field_names");
  if (!spec.field_names.empty() && spec.field_names.size() != codes.size())
    throw InvalidInput(
        fmt::format("{}: {} field_names for {} field_types", op.type(), spec.field_names.size(), codes.size()));
  const std::string delimiter = op.args().get_string("delimiter", "\t");
  if (delimiter.size() != 1 || delimiter == "\n" || delimiter == "\r")
    throw InvalidInput(fmt::format("{}: argument \"delimiter\" must be one character other than a line end, not \"{}\"",
                                   op.type(), delimiter));
  spec.delimiter = delimiter[0];
  return spec;
}

class CreateTextFileReaderOp final : public OperatorBase {
 public:
  CreateTextFileReaderOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws), spec_(spec_of(*this)) {}
  bool run() override {
    // Running it again over the same file rewinds that reader in place: readers on other threads may hold it.
    Blob& b = output_blob(0);
    if (b.is_type<TextFileReaderInstance>() && b.get<TextFileReaderInstance>().spec() == spec_)
      b.get_checked_mutable<TextFileReaderInstance>().reset();
    else
      b.emplace<TextFileReaderInstance>(spec_);
    return true;
  }

 private:
  TextFileReaderSpec spec_;
};

class TextFileReaderReadOp final : public OperatorBase {
 public:
  TextFileReaderReadOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), batch_size_(args().get_int("batch_size", 1)) {
    if (batch_size_ < 1)
      throw InvalidInput(fmt::format("{}: argument \"batch_size\" = {} must be positive", type(), batch_size_));
  }
  bool run() override {
    Blob& b = input_blob(0);
    if (!b.is_type<TextFileReaderInstance>())
      throw TypeError(
          fmt::format("{}: input 0 (\"{}\") holds {}, expected a TextFileReaderInstance (made by "
                      "CreateTextFileReader)",
                      type(), input_name(0), b.type_name()));
    auto& reader = b.get_checked_mutable<TextFileReaderInstance>();
    if (output_size() != reader.spec().field_types.size())
      throw InvalidInput(fmt::format("{}: {} outputs, but the reader of '{}' has {} fields", type(), output_size(),
                                     reader.spec().filename, reader.spec().field_types.size()));
    outputs_.clear();
    for (std::size_t i = 0; i < output_size(); ++i) outputs_.push_back(&output(i));
    reader.read(batch_size_, outputs_);
    return true;
  }

 private:
  int64_t batch_size_;
  std::vector<Tensor*> outputs_;
};

}  // namespace

namespace detail {

void register_text_file_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("CreateTextFileReader")
              .inputs(0)
              .outputs(1)
              .arg("filename", ArgType::String, "path of the text file", "", /*required=*/true)
              .arg("num_passes", ArgType::Int, "times the file is read before the reader stops", "1")
              .arg("field_types", ArgType::Ints, "TensorProto dtype code of each column", "[]")
              .arg("field_names", ArgType::Strings, "moka: column names, used in error messages", "[]")
              .arg("delimiter", ArgType::String, "moka: the column separator, one character", "\"\\t\"")
              .doc("Creates a reader of a delimited text file (TSV by default): one row per line, one column per "
                   "entry of field_types, parsed as that dtype. Its blob holds the read position, which a checkpoint "
                   "saves and restores. Running it again over the same file and fields rewinds that reader."),
          factory_of<CreateTextFileReaderOp>());
  reg.add(OpSchema("TextFileReaderRead")
              .inputs(1)
              .outputs(1, OpSchema::kUnbounded)
              .arg("batch_size", ArgType::Int, "rows per read", "1")
              .doc("Reads up to batch_size rows from the reader of input 0 into one 1-d tensor per field (as many "
                   "outputs as the reader has fields). Outputs are empty once every pass is done. A line with the "
                   "wrong number of columns or a value that does not parse is an InvalidInput naming file, line, "
                   "field and text; the reader then stays where the read started."),
          factory_of<TextFileReaderReadOp>());
}

}  // namespace detail
}  // namespace moka
