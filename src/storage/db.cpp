// The db_type registry (minidb, leveldb, lmdb built in), db_exists, and helpers shared by the backends.
#include "moka/storage/db.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "moka/core/error.h"

namespace moka {

std::string_view to_string(DbMode mode) {
  switch (mode) {
    case DbMode::New:
      return "new";
    case DbMode::Write:
      return "write";
    case DbMode::Read:
      return "read";
  }
  return "?";
}

void Cursor::throw_bad_value_range(uint64_t offset, uint64_t n, uint64_t size) {
  throw RuntimeError(fmt::format("cursor read_value: bytes [{}, +{}) are outside the {}-byte value", offset, n, size));
}

void Transaction::throw_put_open(std::string_view call) const {
  throw RuntimeError(
      fmt::format("transaction {}: the put of key '{}' is still open ({} of {} bytes; begin_put without end_put)", call,
                  open_key_, got_, declared_));
}

void Transaction::begin_put(std::string_view key, uint64_t value_size) {
  if (open_) throw_put_open("begin_put");
  do_begin_put(key, value_size);
  open_key_.assign(key);
  declared_ = value_size;
  got_ = 0;
  open_ = true;
}

void Transaction::put_part(std::string_view part) {
  if (!open_) throw RuntimeError("transaction put_part: no put is open (call begin_put first)");
  if (part.size() > declared_ - got_) {
    open_ = false;
    do_abandon_put();
    throw RuntimeError(fmt::format(
        "transaction put of key '{}': a {}-byte part after {} bytes exceeds the declared value size {}; the put is "
        "abandoned",
        open_key_, part.size(), got_, declared_));
  }
  do_put_part(part);
  got_ += part.size();
}

void Transaction::end_put() {
  if (!open_) throw RuntimeError("transaction end_put: no put is open (call begin_put first)");
  open_ = false;
  if (got_ != declared_) {
    do_abandon_put();
    throw RuntimeError(fmt::format(
        "transaction put of key '{}': end_put after {} of the declared {} value bytes; the put is abandoned", open_key_,
        got_, declared_));
  }
  do_end_put(open_key_);
}

void Transaction::do_put_pieces(std::string_view key, std::span<const std::string_view> pieces) {
  std::size_t n = 0;
  for (std::string_view p : pieces) n += p.size();
  std::string value;
  value.reserve(n);
  for (std::string_view p : pieces) value.append(p);
  do_put(key, value);
}

void Transaction::do_begin_put(std::string_view, uint64_t value_size) {
  staged_.clear();
  // Capped: an absurd declared size fails at put_part/end_put with the size named, not here.
  staged_.reserve(static_cast<std::size_t>(std::min<uint64_t>(value_size, uint64_t{1} << 30)));
}

void Transaction::do_put_part(std::string_view part) { staged_.append(part); }

void Transaction::do_end_put(std::string_view key) {
  do_put(key, staged_);
  staged_ = {};
}

void Transaction::do_abandon_put() noexcept { staged_ = {}; }

void DB::verify() {
  // Reading every value makes the backend check whatever checksums it keeps.
  for (auto c = new_cursor(); c->valid(); c->next()) (void)c->value();
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, DbFactory> factories;
  Registry() {
    factories["minidb"] = detail::open_minidb;
    factories["leveldb"] = detail::open_leveldb;
    factories["lmdb"] = detail::open_lmdb;
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

DbFactory find_factory(const std::string& db_type, const std::string& path) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.factories.find(lower(db_type));
  if (it != r.factories.end()) return it->second;
  std::vector<std::string> known;
  for (const auto& [name, f] : r.factories) known.push_back(name);
  // Caffe2's text, plus the known types.
  throw NotFound(fmt::format("Cannot find db implementation of type {} (while trying to open {}); known db types: {}",
                             db_type, path, fmt::join(known, ", ")));
}

}  // namespace

std::unique_ptr<DB> open_db(const std::string& db_type, const std::string& path, DbMode mode) {
  DbFactory factory = find_factory(db_type, path);
  if (path.empty()) throw InvalidInput(fmt::format("{} db: the path is empty", db_type));
  return factory(path, mode);
}

bool db_exists(const std::string& db_type, const std::string& path) {
  DbFactory factory = find_factory(db_type, path);
  try {
    return factory(path, DbMode::Read) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

void register_db_type(const std::string& name, DbFactory factory) {
  if (name.empty() || !factory) throw InvalidInput("register_db_type: empty name or factory");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[lower(name)] = std::move(factory);
}

std::vector<std::string> registered_db_types() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

namespace detail {

std::string printable_key(std::string_view key) {
  std::string out;
  const size_t n = std::min<size_t>(key.size(), 64);
  for (size_t i = 0; i < n; ++i) {
    const auto ch = static_cast<unsigned char>(key[i]);
    if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
      out.push_back(static_cast<char>(ch));
    } else {
      out += fmt::format("\\x{:02x}", ch);
    }
  }
  if (key.size() > n) out += "...";
  return out;
}

void fsync_parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw RuntimeError(fmt::format("cannot open directory '{}' to fsync it: {}", dir, std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw RuntimeError(fmt::format("fsync of directory '{}' failed: {}", dir, std::strerror(err)));
}

}  // namespace detail
}  // namespace moka
