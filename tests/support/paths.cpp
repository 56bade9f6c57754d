// The two absolute paths of this build (MOKA_SOURCE_DIR, MOKA_CLI_PATH), defined for this file only.
#include "support/paths.h"

namespace moka::testing {

const char* source_dir() { return MOKA_SOURCE_DIR; }
const char* cli_path() { return MOKA_CLI_PATH; }

}  // namespace moka::testing
