// DatasetTree (the nesting of a dataset's fields, parsed from their names; Caffe2's TreeIterator) and
// TreeCursor (a tree plus a read position, held by the blob CreateTreeCursor writes; docs/operators.md §4).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace moka {

/// @brief Read-only view of the values of a lengths field (int32 or int64), without copying them.
///
/// Thread-safety: a view is a pointer into a tensor; reading is safe while nobody writes the tensor.
class LengthsView {
 public:
  LengthsView() = default;
  LengthsView(const int32_t* data, int64_t size) : i32_(data), size_(size) {}
  LengthsView(const int64_t* data, int64_t size) : i64_(data), size_(size) {}
  int64_t size() const noexcept { return size_; }
  int64_t operator[](int64_t i) const noexcept { return i32_ ? int64_t{i32_[i]} : i64_[i]; }

 private:
  const int32_t* i32_ = nullptr;
  const int64_t* i64_ = nullptr;
  int64_t size_ = 0;
};

/// @brief How the fields of a dataset nest, parsed from their names (Caffe2's TreeIterator).
///
/// Names are split at ':'. A field whose last part is "lengths" (e.g. "b:lengths") introduces a
/// *domain* ("b"): every field whose name starts with the same parts ("b:values", "b:x:lengths")
/// belongs to it, and has, in total, as many rows as the lengths field's values add up to. A field
/// belongs to the longest matching domain; fields matching none are in the root domain (top-level
/// rows). Domains are numbered like Caffe2's offsets: 0 is the root, j+1 is the domain of the j-th
/// lengths field (in field order). A lengths field must come before every field of its domain.
///
/// @code
///   DatasetTree t({"a", "b:lengths", "b:values:lengths", "b:values:values"});
///   t.num_offset_fields();  // 3: root, "b", "b:values"
///   t.domain_of(3);         // 2 ("b:values:values" is indexed by "b:values:lengths")
/// @endcode
/// Thread-safety: immutable after construction; every method may be called concurrently.
class DatasetTree {
 public:
  /// @brief Parses the field names. Throws InvalidInput for an empty or duplicate name, or a field
  /// that depends on a lengths field defined after it (Caffe2's message).
  explicit DatasetTree(std::vector<std::string> field_names);

  /// @brief The field names, in order.
  const std::vector<std::string>& field_names() const noexcept { return names_; }
  std::size_t num_fields() const noexcept { return names_.size(); }
  /// @brief Number of fields named "<prefix>:lengths".
  std::size_t num_length_fields() const noexcept { return length_fields_.size(); }
  /// @brief Number of domains (lengths fields + 1 for the root): the size of a cursor's offsets.
  std::size_t num_offset_fields() const noexcept { return length_fields_.size() + 1; }
  /// @brief Field index of the j-th lengths field.
  std::size_t length_field(std::size_t j) const { return length_fields_.at(j); }
  /// @brief Domain (offset index) the field belongs to: 0 for top-level fields.
  std::size_t domain_of(std::size_t field) const { return domain_.at(field); }
  /// @brief Index j if the field is the j-th lengths field, -1 otherwise.
  int length_index_of(std::size_t field) const { return length_index_.at(field); }

  /// @brief Moves `offsets` forward by up to `num` top-level rows.
  ///
  /// `lengths[j]` holds the j-th lengths field's values; `limits[d]` the number of rows domain d
  /// has (the smallest first dimension among its fields). On return `sizes[d]` is the number of
  /// rows of domain d covered by the step, and `offsets` has moved past them. Throws InvalidInput
  /// (naming the field) for a negative length or lengths that run past the end of a field; on an
  /// error `offsets` is unchanged.
  void advance(std::span<const LengthsView> lengths, std::span<const int64_t> limits, std::vector<int64_t>& offsets,
               std::vector<int64_t>& sizes, int64_t num) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::size_t> length_fields_;  // field index of each lengths field
  std::vector<std::size_t> domain_;         // per field
  std::vector<int> length_index_;           // per field: j, or -1
};

/// @brief A read position in a dataset: a DatasetTree and one offset per domain, guarded by a mutex.
///
/// CreateTreeCursor puts one in a blob; ReadNextBatch, ReadRandomBatch, ComputeOffset and
/// ResetCursor use it. The cursor holds no data: readers pass the field blobs with each call. Its
/// position (field_names() and offsets()) is what a checkpoint saves; set_offsets() restores it.
///
/// @code
///   TreeCursor c({"a", "b:lengths", "b:values"});
///   c.offsets();            // {} : at the start (Caffe2 keeps an empty vector until the first read)
///   c.set_offsets({2, 5});  // resume after 2 top-level rows and 5 "b" values
///   c.reset();              // back to the start
/// @endcode
/// Thread-safety: every method may be called concurrently; position changes happen under mutex(),
/// except those of claim_flat(), which moves a one-offset position with a compare-and-swap.
// alignas(64) (and the mutex on its own line): see BlobMutex — readers use the cursor once per batch.
class alignas(64) TreeCursor {
 public:
  explicit TreeCursor(std::vector<std::string> field_names) : tree_(std::move(field_names)) {}
  explicit TreeCursor(DatasetTree tree) : tree_(std::move(tree)) {}
  TreeCursor(const TreeCursor&) = delete;
  TreeCursor& operator=(const TreeCursor&) = delete;

  /// @brief The field tree (immutable).
  const DatasetTree& tree() const noexcept { return tree_; }
  /// @brief The field names the cursor was created with.
  const std::vector<std::string>& field_names() const noexcept { return tree_.field_names(); }

  /// @brief A copy of the offsets: empty at the start; one per domain after ReadNextBatch; one
  /// element (the position in the index list) after ReadRandomBatch, as in Caffe2.
  std::vector<int64_t> offsets() const;
  /// @brief Restores a position saved with offsets(). Throws InvalidInput unless the vector is
  /// empty, has one element, or has num_offset_fields() elements, all >= 0.
  void set_offsets(std::vector<int64_t> offsets);
  /// @brief Back to the start (ResetCursor).
  void reset();

  /// @brief The mutex guarding the offsets; operators hold it while they use offsets_locked().
  std::mutex& mutex() const noexcept { return mu_; }
  /// @brief The offsets themselves. Call only while holding mutex(). A position that claim_flat()
  /// was moving becomes its one offset here again (claim_flat's next call takes it back).
  std::vector<int64_t>& offsets_locked() {
    if (flat_.load(std::memory_order_relaxed) != kNotFlat) offsets_.assign(1, flat_.exchange(kNotFlat));
    return offsets_;
  }

  /// @brief Claims the next rows of a record without lists (one offset; ReadNextBatch's usual
  /// read): up to `batch` rows of `rows`. Sets `start` and returns how many were claimed (0 at the
  /// end), or returns -1, changing nothing, when the cursor holds more than one offset or one past
  /// `rows`. Lock-free from the second call on: one compare-and-swap per batch, where the mutex's lock
  /// and unlock were two locked instructions.
  int64_t claim_flat(int64_t rows, int64_t batch, int64_t& start) {
    int64_t cur = flat_.load(std::memory_order_relaxed);
    for (;;) {
      if (cur == kNotFlat) {
        if (!enter_flat()) return -1;
        cur = flat_.load(std::memory_order_relaxed);
        continue;
      }
      if (cur > rows) return -1;
      const int64_t n = std::min(rows - cur, batch);
      // The claimed rows are only read (the dataset's fields do not change while it is read), so
      // the swap publishes nothing: relaxed is enough, and on x86 it is the same instruction.
      if (flat_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) {
        start = cur;
        return n;
      }
    }
  }

 private:
  static constexpr int64_t kNotFlat = -1;
  // Under mu_: moves an empty or one-offset position into flat_; false when it holds more offsets.
  bool enter_flat();

  DatasetTree tree_;
  alignas(64) mutable std::mutex mu_;
  // The position while claim_flat() moves it (then offsets_ is empty), else kNotFlat. Only holders
  // of mu_ set or clear it; claim_flat() advances it.
  std::atomic<int64_t> flat_{kNotFlat};
  std::vector<int64_t> offsets_;
};

}  // namespace moka
