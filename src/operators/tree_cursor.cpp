// DatasetTree: parsing field names into nested domains and advancing offsets; TreeCursor's position.
#include "moka/operators/tree_cursor.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "moka/core/error.h"

namespace moka {

namespace {

constexpr char kSeparator = ':';
constexpr std::string_view kLengths = "lengths";

std::vector<std::string_view> split_name(std::string_view name) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = name.find(kSeparator, start);
    if (pos == std::string_view::npos) {
      parts.push_back(name.substr(start));
      return parts;
    }
    parts.push_back(name.substr(start, pos - start));
    start = pos + 1;
  }
}

}  // namespace

DatasetTree::DatasetTree(std::vector<std::string> field_names) : names_(std::move(field_names)) {
  const std::size_t n = names_.size();
  std::vector<std::vector<std::string_view>> parts(n);
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < n; ++i) {
    if (names_[i].empty()) throw InvalidInput(fmt::format("dataset field {} has an empty name", i));
    if (!seen.insert(names_[i]).second)
      throw InvalidInput(fmt::format("dataset field name \"{}\" appears more than once", names_[i]));
    parts[i] = split_name(names_[i]);
  }
  length_index_.assign(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (parts[i].back() == kLengths) {
      length_index_[i] = static_cast<int>(length_fields_.size());
      length_fields_.push_back(i);
    }
  }
  // Each field belongs to the lengths field with the longest prefix that its name starts with.
  // A lengths field named just "lengths" has an empty prefix and, as in Caffe2, indexes nothing.
  domain_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t best_len = 1;
    for (std::size_t j = 0; j < length_fields_.size(); ++j) {
      const std::size_t lf = length_fields_[j];
      if (lf == i) continue;  // a lengths field is not indexed by itself
      const auto& prefix = parts[lf];
      const std::size_t plen = prefix.size() - 1;
      if (prefix.size() <= best_len || parts[i].size() < plen) continue;
      if (!std::equal(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(plen), parts[i].begin())) continue;
      best_len = prefix.size();
      domain_[i] = j + 1;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (domain_[i] == 0) continue;
    const std::size_t lf = length_fields_[domain_[i] - 1];
    if (lf > i)
      throw InvalidInput(fmt::format("Error: Field {} ({}) depends on a field defined afterwards: {} ({}).", i,
                                     names_[i], lf, names_[lf]));
  }
}

void DatasetTree::advance(std::span<const LengthsView> lengths, std::span<const int64_t> limits,
                          std::vector<int64_t>& offsets, std::vector<int64_t>& sizes, int64_t num) const {
  const std::size_t nd = num_offset_fields();
  if (lengths.size() != num_length_fields() || limits.size() != nd || offsets.size() != nd)
    throw InvalidInput(fmt::format("dataset cursor: expected {} lengths fields and {} offsets, got {} and {}",
                                   num_length_fields(), nd, lengths.size(), offsets.size()));
  if (num < 0) throw InvalidInput(fmt::format("dataset cursor: cannot advance by {} rows", num));
  sizes.resize(nd);
  // First pass computes every size from the old offsets (and checks them); the second moves the
  // offsets, so an error leaves the cursor where it was.
  if (limits[0] < offsets[0])
    throw InvalidInput(fmt::format(
        "Tried to advance past end of cursor. (offset {} of the top level, which has {} rows)", offsets[0], limits[0]));
  sizes[0] = std::min(limits[0] - offsets[0], num);
  for (std::size_t d = 1; d < nd; ++d) {
    const std::size_t lf = length_fields_[d - 1];
    const std::size_t parent = domain_[lf];  // lengths fields come after their parent's, so it is done
    const LengthsView& len = lengths[d - 1];
    const int64_t begin = offsets[parent];
    if (begin + sizes[parent] > len.size())
      throw InvalidInput(
          fmt::format("Inconsistent field length: field {} ({}) has {} rows, but rows [{}, {}) are needed", lf,
                      names_[lf], len.size(), begin, begin + sizes[parent]));
    int64_t total = 0;
    for (int64_t k = begin; k < begin + sizes[parent]; ++k) {
      const int64_t v = len[k];
      if (v < 0)
        throw InvalidInput(
            fmt::format("lengths field {} ({}) has a negative length {} at row {}", lf, names_[lf], v, k));
      if (total > std::numeric_limits<int64_t>::max() - v)
        throw InvalidInput(fmt::format("lengths field {} ({}) adds up to more than int64 can hold", lf, names_[lf]));
      total += v;
    }
    if (offsets[d] > limits[d] || total > limits[d] - offsets[d])
      throw InvalidInput(
          fmt::format("Inconsistent field length: tried to advance past the end of field {} "
                      "(domain of {}: {} rows, needed rows [{}, {}))",
                      d, names_[lf], limits[d], offsets[d], offsets[d] + total));
    sizes[d] = total;
  }
  for (std::size_t d = 0; d < nd; ++d) offsets[d] += sizes[d];
}

std::vector<int64_t> TreeCursor::offsets() const {
  std::lock_guard lk(mu_);
  const int64_t flat = flat_.load();
  if (flat != kNotFlat) return {flat};
  return offsets_;
}

void TreeCursor::set_offsets(std::vector<int64_t> offsets) {
  const std::size_t nd = tree_.num_offset_fields();
  if (!offsets.empty() && offsets.size() != 1 && offsets.size() != nd)
    throw InvalidInput(
        fmt::format("TreeCursor: {} offsets given, but a cursor over {} fields has {} domains "
                    "(0 or 1 offsets are also accepted)",
                    offsets.size(), tree_.num_fields(), nd));
  for (int64_t v : offsets)
    if (v < 0) throw InvalidInput(fmt::format("TreeCursor: offset {} is negative", v));
  std::lock_guard lk(mu_);
  flat_.store(kNotFlat);  // a claim_flat() racing with this fails its swap and comes back to mu_
  offsets_ = std::move(offsets);
}

void TreeCursor::reset() {
  std::lock_guard lk(mu_);
  flat_.store(kNotFlat);
  offsets_.clear();
}

bool TreeCursor::enter_flat() {
  std::lock_guard lk(mu_);
  if (flat_.load() != kNotFlat) return true;  // another reader got here first
  if (offsets_.size() > 1) return false;
  flat_.store(offsets_.empty() ? 0 : offsets_[0]);
  offsets_.clear();
  return true;
}

}  // namespace moka
