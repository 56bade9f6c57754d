// Length-prefixed records: what MpiSession and the queue links put in one message — <8-byte length><bytes>
// per record, in order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "moka/core/error.h"

namespace moka::detail {

/// Appends `record` with its length first.
inline void append_record(std::string& out, std::string_view record) {
  const uint64_t n = record.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += record;
}

/// The records of `in`, in order; RuntimeError "<who>: a truncated message from another rank" when cut short.
inline std::vector<std::string> split_records(std::string_view in, const char* who) {
  std::vector<std::string> out;
  while (!in.empty()) {
    uint64_t n = 0;
    if (in.size() < sizeof n) throw RuntimeError(std::string(who) + ": a truncated message from another rank");
    std::memcpy(&n, in.data(), sizeof n);
    in.remove_prefix(sizeof n);
    if (in.size() < n) throw RuntimeError(std::string(who) + ": a truncated message from another rank");
    out.emplace_back(in.substr(0, n));
    in.remove_prefix(n);
  }
  return out;
}

}  // namespace moka::detail
