// Where the tests find the source tree and the moka CLI: functions, not macros, so that only
// paths.cpp is compiled with this checkout's absolute paths and every other test object is the
// same in any clone (ccache hits across folders).
#pragma once

namespace moka::testing {

/// The repository root this build was configured from (examples/, docs/ live there).
const char* source_dir();
/// The moka CLI executable of this build.
const char* cli_path();

}  // namespace moka::testing
