// TextFileReaderInstance: buffered reading of a delimited text file and parsing of its columns into tensors.
#include "moka/operators/text_file_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

#include "moka/core/error.h"

namespace moka {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;  // bytes read from the file at a time
constexpr int64_t kFirstRows = 4096;                  // rows allocated before a batch grows

bool has_text_form(DType t) { return t != DType::Undefined; }

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

template <class T>
bool parse_number(std::string_view s, T& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_bool(std::string_view s, bool& v) {
  if (s == "1" || s == "true" || s == "True" || s == "TRUE") return v = true, true;
  if (s == "0" || s == "false" || s == "False" || s == "FALSE") return v = false, true;
  return false;
}

// Writes column text into element `row` of out; false when the text is not a value of its dtype.
bool parse_into(std::string_view text, Tensor& out, int64_t row) {
  switch (out.dtype()) {
    case DType::String:
      out.mutable_data<std::string>()[row].assign(text.data(), text.size());
      return true;
    case DType::Float:
      return parse_number(trim_spaces(text), out.mutable_data<float>()[row]);
    case DType::Double:
      return parse_number(trim_spaces(text), out.mutable_data<double>()[row]);
    case DType::Int64:
      return parse_number(trim_spaces(text), out.mutable_data<int64_t>()[row]);
    case DType::Int32:
      return parse_number(trim_spaces(text), out.mutable_data<int32_t>()[row]);
    case DType::Int16:
      return parse_number(trim_spaces(text), out.mutable_data<int16_t>()[row]);
    case DType::Int8:
      return parse_number(trim_spaces(text), out.mutable_data<int8_t>()[row]);
    case DType::UInt8:
      return parse_number(trim_spaces(text), out.mutable_data<uint8_t>()[row]);
    case DType::Bool:
      return parse_bool(trim_spaces(text), out.mutable_data<bool>()[row]);
    case DType::Undefined:
      return false;
  }
  return false;
}

std::string shown(std::string_view text) {
  constexpr std::size_t kMax = 40;
  if (text.size() <= kMax) return fmt::format("\"{}\"", text);
  return fmt::format("\"{}...\" ({} bytes)", text.substr(0, kMax), text.size());
}

}  // namespace

TextFileReaderInstance::TextFileReaderInstance(TextFileReaderSpec spec, TextFileReaderPosition position)
    : spec_(std::move(spec)) {
  if (spec_.field_types.empty()) throw InvalidInput("TextFileReader: field_types must not be empty");
  for (std::size_t i = 0; i < spec_.field_types.size(); ++i)
    if (!has_text_form(spec_.field_types[i]))
      throw InvalidInput(fmt::format("TextFileReader: field {} has no dtype that text can be read into", i));
  if (!spec_.field_names.empty() && spec_.field_names.size() != spec_.field_types.size())
    throw InvalidInput(fmt::format("TextFileReader: {} field names for {} field types", spec_.field_names.size(),
                                   spec_.field_types.size()));
  if (spec_.num_passes < 1)
    throw InvalidInput(fmt::format("TextFileReader: num_passes = {} must be positive", spec_.num_passes));
  if (spec_.delimiter == '\n' || spec_.delimiter == '\r' || spec_.delimiter == '\0')
    throw InvalidInput("TextFileReader: the delimiter must not be a line end or NUL");
  if (spec_.filename.empty()) throw InvalidInput("TextFileReader: filename must not be empty");
  fd_ = ::open(spec_.filename.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENOENT) throw NotFound(fmt::format("TextFileReader: file '{}' does not exist", spec_.filename));
    throw RuntimeError(fmt::format("TextFileReader: cannot open '{}': {}", spec_.filename, std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InvalidInput(fmt::format("TextFileReader: '{}' is not a regular file", spec_.filename));
  }
  file_size_ = static_cast<int64_t>(st.st_size);
  if (position != TextFileReaderPosition{}) {
    try {
      seek(position);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
}

TextFileReaderInstance::~TextFileReaderInstance() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TextFileReaderInstance::field_label(std::size_t i) const {
  if (spec_.field_names.empty()) return fmt::format("field {}", i);
  return fmt::format("field {} (\"{}\")", i, spec_.field_names[i]);
}

void TextFileReaderInstance::fill_buffer() {
  if (buf_pos_ > 0) {
    buf_.erase(0, buf_pos_);
    buf_offset_ += static_cast<int64_t>(buf_pos_);
    buf_pos_ = 0;
  }
  const std::size_t old = buf_.size();
  buf_.resize(old + kChunk);
  for (;;) {
    const ssize_t n = ::pread(fd_, buf_.data() + old, kChunk, buf_offset_ + static_cast<int64_t>(old));
    if (n >= 0) {
      buf_.resize(old + static_cast<std::size_t>(n));
      return;
    }
    if (errno == EINTR) continue;
    const int err = errno;
    buf_.resize(old);
    throw RuntimeError(fmt::format("TextFileReader: reading '{}' at offset {} failed: {}", spec_.filename,
                                   buf_offset_ + static_cast<int64_t>(old), std::strerror(err)));
  }
}

bool TextFileReaderInstance::next_line(std::string_view& line) {
  std::size_t searched = buf_pos_;
  for (;;) {
    const void* nl = std::memchr(buf_.data() + searched, '\n', buf_.size() - searched);
    if (nl != nullptr) {
      const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
      line = std::string_view(buf_.data() + buf_pos_, end - buf_pos_);
      buf_pos_ = end + 1;
      return true;
    }
    const std::size_t before = buf_.size() - buf_pos_;
    fill_buffer();  // moves the unread bytes to the front
    searched = before;
    if (buf_.size() == before) {  // end of file
      if (before == 0) return false;
      line = std::string_view(buf_.data(), before);  // a last line without '\n'
      buf_pos_ = buf_.size();
      return true;
    }
  }
}

void TextFileReaderInstance::rewind_to(int64_t offset) {
  buf_.clear();
  buf_offset_ = offset;
  buf_pos_ = 0;
}

int64_t TextFileReaderInstance::read(int64_t max_rows, std::span<Tensor* const> out) {
  if (out.size() != spec_.field_types.size())
    throw InvalidInput(fmt::format("TextFileReader '{}': {} outputs for {} fields", spec_.filename, out.size(),
                                   spec_.field_types.size()));
  if (max_rows < 1) throw InvalidInput(fmt::format("TextFileReader: batch size {} must be positive", max_rows));
  std::lock_guard lk(mu_);
  const std::size_t nfields = out.size();
  int64_t capacity = std::min(max_rows, kFirstRows);
  for (std::size_t f = 0; f < nfields; ++f) {
    const int64_t shape[] = {capacity};
    out[f]->resize_for_overwrite(spec_.field_types[f], shape);
  }
  const TextFileReaderPosition start = pos_;
  int64_t rows = 0;
  try {
    std::string_view line;
    while (rows < max_rows && pos_.pass < spec_.num_passes) {
      if (!next_line(line)) {  // this pass is done
        if (++pos_.pass < spec_.num_passes) {
          rewind_to(0);
          pos_.line = 0;
        }
        continue;
      }
      ++pos_.line;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      if (rows == capacity) {
        capacity = std::min(max_rows, capacity * 2);
        for (std::size_t f = 0; f < nfields; ++f) out[f]->resize_dim0(capacity, /*zero_new=*/false);
      }
      std::size_t f = 0;
      std::size_t begin = 0;
      for (;;) {
        const std::size_t end = line.find(spec_.delimiter, begin);
        const std::string_view text = line.substr(begin, end == std::string_view::npos ? end : end - begin);
        if (f < nfields && !parse_into(text, *out[f], rows))
          throw InvalidInput(fmt::format("{}:{}: {}: {} is not a {} value", spec_.filename, pos_.line, field_label(f),
                                         shown(text), dtype_name(spec_.field_types[f])));
        ++f;
        if (end == std::string_view::npos) break;
        begin = end + 1;
      }
      if (f != nfields) {
        const auto& names = spec_.field_names;
        throw InvalidInput(fmt::format("{}:{}: expected {} columns{}, found {}", spec_.filename, pos_.line, nfields,
                                       names.empty() ? std::string() : fmt::format(" ({})", fmt::join(names, ", ")),
                                       f));
      }
      ++rows;
    }
  } catch (...) {
    pos_ = start;
    rewind_to(start.offset);
    throw;
  }
  pos_.offset = buf_offset_ + static_cast<int64_t>(buf_pos_);
  for (std::size_t f = 0; f < nfields; ++f) out[f]->resize_dim0(rows);
  return rows;
}

TextFileReaderPosition TextFileReaderInstance::position() const {
  std::lock_guard lk(mu_);
  return pos_;
}

void TextFileReaderInstance::seek(TextFileReaderPosition position) {
  std::lock_guard lk(mu_);
  const auto bad = [&](std::string_view why) {
    return InvalidInput(fmt::format("TextFileReader: cannot resume '{}' at pass {}, offset {}, line {}: {}",
                                    spec_.filename, position.pass, position.offset, position.line, why));
  };
  if (position.pass < 0 || position.pass > spec_.num_passes || position.offset < 0 || position.line < 0)
    throw bad("the position is out of range");
  if (position.offset > file_size_) throw bad(fmt::format("the file has only {} bytes now", file_size_));
  if (position.offset > 0 && position.offset < file_size_) {
    char before = 0;
    if (::pread(fd_, &before, 1, position.offset - 1) != 1 || before != '\n')
      throw bad("that offset is not the start of a line (the file changed)");
  }
  pos_ = position;
  rewind_to(position.offset);
}

void TextFileReaderInstance::reset() {
  std::lock_guard lk(mu_);
  pos_ = {};
  rewind_to(0);
}

}  // namespace moka
