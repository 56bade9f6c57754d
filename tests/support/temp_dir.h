// TempDir: a fresh directory under the system temp folder, removed with its contents when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moka::testing {

/// @brief A directory made with mkdtemp (`<tmp>/<prefix>-XXXXXX`), deleted recursively on destruction.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "moka-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory, as a string.
  const std::string& path() const { return path_; }
  const std::string& str() const { return path_; }
  /// The directory, as a std::filesystem::path.
  std::filesystem::path fs_path() const { return path_; }
  /// `path() + "/" + name`.
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace moka::testing
