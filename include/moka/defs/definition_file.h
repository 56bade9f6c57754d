// Reading a definition file (plan, TaskGroup or job JSON) from disk, with a size limit, so that a
// huge file, /dev/zero or an endless FIFO fails with a clear error instead of exhausting memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace moka {

/// The largest plan, TaskGroup or job file moka reads: 64 MiB (docs/plan-format.md). JSON of a
/// plan is kilobytes; tensors that large belong in a DB (Load), not in GivenTensorFill arguments.
inline constexpr std::size_t kMaxDefinitionFileBytes = std::size_t{64} << 20;

/// @brief The whole content of `path`, read as bytes.
///
/// `kind` names the file in messages ("plan", "job"). Throws InvalidInput naming the file when it
/// cannot be opened or read, is a directory, or holds more than `limit` bytes: a regular file is
/// refused by its size before anything is read, a stream (FIFO, character device such as
/// /dev/zero or /dev/stdin) once `limit` + 1 bytes have arrived — reading stops there.
/// Thread-safety: thread-safe.
std::string read_definition_file(const std::string& path, std::string_view kind,
                                 std::size_t limit = kMaxDefinitionFileBytes);

}  // namespace moka
