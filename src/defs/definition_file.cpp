// read_definition_file: a plan/TaskGroup/job file read whole, but never more than the size limit.
#include "moka/defs/definition_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "moka/core/error.h"

namespace moka {

namespace {

// "64 MiB (67108864 bytes)" for a limit that is a whole number of MiB, else its bytes.
std::string limit_text(std::size_t limit) {
  if (limit >= (std::size_t{1} << 20) && limit % (std::size_t{1} << 20) == 0)
    return fmt::format("{} MiB ({} bytes)", limit >> 20, limit);
  return fmt::format("{} bytes", limit);
}

// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_definition_file(const std::string& path, std::string_view kind, std::size_t limit) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw InvalidInput(fmt::format("{}: cannot open {} file: {}", path, kind, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw InvalidInput(fmt::format("{}: cannot read {} file: {}", path, kind, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InvalidInput(fmt::format("{}: is a directory, not a {} file", path, kind));
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit)
    throw InvalidInput(fmt::format("{}: {} file is {} bytes, larger than the limit of {}", path, kind,
                                   static_cast<uint64_t>(st.st_size), limit_text(limit)));
  std::string text;
  // A regular file's size is known (it may still grow while read: the limit applies to what arrives).
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InvalidInput(fmt::format("{}: cannot read {} file: {}", path, kind, std::strerror(errno)));
    }
    if (n == 0) break;
    if (static_cast<std::size_t>(n) > limit - text.size())
      throw InvalidInput(fmt::format("{}: {} file is larger than the limit of {}; reading stopped there", path, kind,
                                     limit_text(limit)));
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace moka
