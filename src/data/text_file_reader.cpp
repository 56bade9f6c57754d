// TextFileReader: emits CreateTextFileReader into the init net and TextFileReaderRead + IsEmpty into read nets.
#include "moka/data/text_file_reader.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "moka/core/error.h"

namespace moka {

TextFileReader::TextFileReader(Net& init_net, std::string filename, const schema::Field& schema,
                               TextFileReaderOptions options)
    : Reader(schema), filename_(std::move(filename)), options_(options) {
  if (schema.kind() != schema::FieldKind::Struct)
    throw InvalidInput(fmt::format("TextFileReader: Schema must be a schema.Struct, not {}", schema.repr()));
  if (schema.field_names().empty()) throw InvalidInput("TextFileReader: the schema has no fields");
  for (const auto& [name, child] : schema.children())
    if (!child.is_scalar())
      throw InvalidInput(
          fmt::format("TextFileReader: Only scalar fields are supported in TextFileReader (field \"{}\" is {})", name,
                      child.repr()));
  const std::vector<std::optional<DType>> types = schema.field_types();
  const std::vector<std::string> names = schema.field_names();
  for (std::size_t i = 0; i < types.size(); ++i)
    if (!types[i])
      throw InvalidInput(fmt::format("TextFileReader: field \"{}\" has no dtype; give each Scalar one", names[i]));
  if (options_.num_passes < 1)
    throw InvalidInput(fmt::format("TextFileReader: num_passes = {} must be positive", options_.num_passes));
  if (options_.batch_size < 1)
    throw InvalidInput(fmt::format("TextFileReader: batch_size = {} must be positive", options_.batch_size));
  reader_ = init_net.op("CreateTextFileReader", {}, 1, create_args()).single();
}

std::vector<Arg> TextFileReader::create_args() const {
  std::vector<int64_t> codes;
  for (const auto& t : schema_->field_types()) codes.push_back(static_cast<int64_t>(*t));
  std::vector<Arg> args{{"filename", filename_},
                        {"num_passes", options_.num_passes},
                        {"field_types", codes},
                        {"field_names", schema_->field_names()}};
  if (options_.delimiter != '\t') args.emplace_back("delimiter", std::string(1, options_.delimiter));
  return args;
}

ReadOutput TextFileReader::read(Net& read_net) {
  BlobRefs fields = read_net.op("TextFileReaderRead", {reader_}, static_cast<int>(schema_->field_names().size()),
                                {{"batch_size", options_.batch_size}});
  BlobRef should_stop = read_net.op("IsEmpty", {fields.front()}, {read_net.next_scoped_blob("should_stop")}).single();
  return ReadOutput{should_stop, std::vector<BlobRef>(fields.begin(), fields.end())};
}

void TextFileReader::reset(Net& net) { net.op("CreateTextFileReader", {}, {reader_}, create_args()); }

}  // namespace moka
