// The JSON form in which the CLI prints a blob (`moka run --fetch`, `moka job run`, `moka checkpoint blob`):
// {"dtype": ..., "shape": [...], "data": [...]} for a tensor, {"type": NAME} for anything else (docs/cli.md).
#pragma once

#include <nlohmann/json.hpp>

#include "moka/core/blob.h"

namespace moka_cli {

/// Output keeps the order fields are added in.
using Json = nlohmann::ordered_json;

/// A blob as JSON; NaN and infinities as the strings the plan format reads, float32 in its shortest form.
Json blob_json(const moka::Blob& blob);

}  // namespace moka_cli
