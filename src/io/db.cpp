// The db_type registry (minidb, leveldb, lmdb built in), db_exists, and helpers shared by the backends.
#include "moka/io/db.h"

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
    case DbMode::New: return "new";
    case DbMode::Write: return "write";
    case DbMode::Read: return "read";
  }
  return "?";
}

void Cursor::throw_bad_value_range(uint64_t offset, uint64_t n, uint64_t size) {
  throw RuntimeError(fmt::format("cursor read_value: bytes [{}, +{}) are outside the {}-byte value", offset, n, size));
}

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
