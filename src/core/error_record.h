// Error records: a moka exception as a string that can cross ranks and be rethrown there with the same
// class, message and context.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace moka::detail {

/// The exception as a record: its class (one of moka's, or Error for anything else), message and context.
std::string error_record(const std::exception_ptr& error);
/// Whether a record holds a Cancelled.
bool is_cancelled_record(std::string_view record);
/// @brief Throws the record's exception, with `rank R` as its outermost location when `rank` is given
/// (unless its outermost location already names a rank: it crossed ranks before).
[[noreturn]] void rethrow_record(std::string_view record, std::optional<int> rank = std::nullopt);

}  // namespace moka::detail
