// MinidbPreadPath: makes minidb DBs opened in its scope read with pread instead of mmap (tests of both paths).
#pragma once

#include <stdlib.h>

namespace moka::testing {

/// Sets MOKA_MINIDB_NO_MMAP for the scope; minidb reads the variable at each open.
/// Thread-safety: changes the process environment; use from one test thread only.
class MinidbPreadPath {
 public:
  MinidbPreadPath() { ::setenv("MOKA_MINIDB_NO_MMAP", "1", 1); }
  ~MinidbPreadPath() { ::unsetenv("MOKA_MINIDB_NO_MMAP"); }
  MinidbPreadPath(const MinidbPreadPath&) = delete;
  MinidbPreadPath& operator=(const MinidbPreadPath&) = delete;
};

}  // namespace moka::testing
