// Dataset operators (Caffe2 dataset_ops; docs/operators.md §4): CreateTreeCursor, ResetCursor, GetCursorOffset,
// ReadNextBatch, ComputeOffset, SortAndShuffle, ShardIndices, ReadRandomBatch, CheckDatasetConsistency, Append,
// AtomicAppend, TrimDataset, IsEmpty.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <string_view>

#include "moka/core/error.h"
#include "moka/operators/mutex.h"
#include "moka/operators/registry.h"
#include "moka/operators/tree_cursor.h"
#include "operators/builtin.h"

namespace moka {

namespace {

// A domain no field belongs to has no row limit of its own (Caffe2 leaves it at the maximum too).
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

std::string input_desc(const OperatorBase& op, std::size_t i) {
  return fmt::format("input {} (\"{}\")", i, op.input_name(i));
}

[[noreturn]] void throw_not_a_filled_tensor(const OperatorBase& op, std::size_t i) {
  const Blob& b = op.input_blob(i);
  if (b.tensor_or_null() != nullptr)
    throw TypeError(fmt::format("{}: {} is a tensor that was never filled", op.type(), input_desc(op, i)));
  throw TypeError(fmt::format("{}: {} holds {}, expected a tensor", op.type(), input_desc(op, i), b.type_name()));
}

// Input i as a filled tensor; the TypeError names the operator (unit tests run operators outside nets).
inline const Tensor& tensor_input(const OperatorBase& op, std::size_t i) {
  const Tensor* t = op.input_blob(i).tensor_or_null();
  if (t != nullptr && t->defined()) [[likely]]
    return *t;
  throw_not_a_filled_tensor(op, i);
}

[[noreturn]] void throw_not_an_object(const OperatorBase& op, std::size_t i, std::string_view what) {
  throw TypeError(
      fmt::format("{}: {} holds {}, expected {}", op.type(), input_desc(op, i), op.input_blob(i).type_name(), what));
}

// Input i as a T (a cursor, a mutex); the TypeError says what was expected.
template <class T>
inline T& object_input(const OperatorBase& op, std::size_t i, std::string_view what) {
  Blob& b = op.input_blob(i);
  if (!b.is_type<T>()) [[unlikely]]
    throw_not_an_object(op, i, what);
  return b.get_checked_mutable<T>();
}

TreeCursor& cursor_input(const OperatorBase& op) {
  return object_input<TreeCursor>(op, 0, "a TreeCursor (made by CreateTreeCursor)");
}

int64_t positive_arg(const OperatorBase& op, const char* name, int64_t def) {
  const int64_t v = op.args().get_int(name, def);
  if (v < 1) throw InvalidInput(fmt::format("{}: argument \"{}\" = {} must be positive", op.type(), name, v));
  return v;
}

// Runs f, prefixing the operator's type to the InvalidInput that DatasetTree throws.
template <class F>
decltype(auto) with_op_name(const OperatorBase& op, F&& f) {
  try {
    return f();
  } catch (const InvalidInput& e) {
    throw InvalidInput(fmt::format("{}: {}", op.type(), e.message()));
  }
}

void check_field_count(const OperatorBase& op, const DatasetTree& tree, std::size_t given) {
  if (given != tree.num_fields())
    throw InvalidInput(fmt::format("{}: Invalid number of fields. Expected {}, got {} (fields: {})", op.type(),
                                   tree.num_fields(), given, fmt::join(tree.field_names(), ", ")));
}

// Values per row: the product of every dimension but the first.
int64_t row_numel(const Tensor& t) {
  int64_t n = 1;
  for (std::size_t i = 1; i < t.ndim(); ++i) n *= t.dim(i);
  return n;
}

// Copies rows [src_row, src_row + rows) of src to rows [dst_row, ...) of dst (same dtype and row shape).
void copy_rows(const Tensor& src, int64_t src_row, Tensor& dst, int64_t dst_row, int64_t rows) {
  const int64_t inner = row_numel(src);
  if (rows == 0 || inner == 0) return;
  if (src.dtype() == DType::String) {
    const std::string* s = src.data<std::string>() + src_row * inner;
    std::copy(s, s + rows * inner, dst.mutable_data<std::string>() + dst_row * inner);
  } else {
    const auto bytes_per_row = static_cast<std::size_t>(inner) * dtype_size(src.dtype());
    std::memcpy(dst.raw_mutable_data() + static_cast<std::size_t>(dst_row) * bytes_per_row,
                src.raw_data() + static_cast<std::size_t>(src_row) * bytes_per_row,
                static_cast<std::size_t>(rows) * bytes_per_row);
  }
}

// A 1-d tensor of fixed-size values: rows are values, copied with one memcpy.
inline bool plain_vector(const Tensor& t) { return t.ndim() == 1 && t.dtype() != DType::String; }

// copy_rows for plain vectors (a pipe's usual batch), without its row-shape loop and string branch.
inline void copy_vector_rows(const Tensor& src, int64_t src_row, Tensor& dst, int64_t dst_row, int64_t rows) {
  if (rows == 0) return;  // an empty tensor's storage may be null, which memcpy must not see
  const auto w = static_cast<std::size_t>(dtype_size(src.dtype()));
  std::memcpy(dst.raw_mutable_data() + static_cast<std::size_t>(dst_row) * w,
              src.raw_data() + static_cast<std::size_t>(src_row) * w, static_cast<std::size_t>(rows) * w);
}

// slice_rows for any tensors. `shape` is scratch space, so steady-state reads do not allocate.
[[gnu::noinline]] void slice_any_rows(const Tensor& src, int64_t row, int64_t rows, Tensor& dst,
                                      std::vector<int64_t>& shape) {
  shape.assign(src.shape().begin(), src.shape().end());
  shape[0] = rows;
  dst.resize(src.dtype(), shape);
  copy_rows(src, row, dst, 0, rows);
}

// dst = rows [row, row + rows) of src.
inline void slice_rows(const Tensor& src, int64_t row, int64_t rows, Tensor& dst, std::vector<int64_t>& shape) {
  // A vector into a vector of its dtype (what a pipe's reader gets back from its queue): only the
  // length changes, and resize_dim0's inline path keeps the storage.
  if (plain_vector(src) && dst.ndim() == 1 && dst.dtype() == src.dtype()) {
    dst.resize_dim0(rows, /*zero_new=*/false);  // every row is copied next
    copy_vector_rows(src, row, dst, 0, rows);
    return;
  }
  slice_any_rows(src, row, rows, dst, shape);
}

[[noreturn]] void throw_0d_field(const OperatorBase& op, const DatasetTree& tree, std::size_t first, std::size_t i) {
  throw InvalidInput(fmt::format("{}: field {} ({}), {}, is a 0-d tensor; dataset fields need a row dimension",
                                 op.type(), i, tree.field_names()[i], input_desc(op, first + i)));
}

// Field i of a dataset, input first + i: a filled tensor with a row dimension. Inline, as readers and
// writers check their fields on every batch.
inline const Tensor& field_input(const OperatorBase& op, const DatasetTree& tree, std::size_t first, std::size_t i) {
  const Tensor& t = tensor_input(op, first + i);
  if (t.ndim() == 0) [[unlikely]]
    throw_0d_field(op, tree, first, i);
  return t;
}

[[noreturn]] void throw_inconsistent_sizes(const OperatorBase& op, const DatasetTree& tree, std::size_t i,
                                           int64_t previous, int64_t rows) {
  throw InvalidInput(fmt::format(
      "{}: Inconsistent sizes for fields belonging to same domain. Field: {} ({}); Length field index: {}); "
      "Previous size: {}; New size: {}",
      op.type(), i, tree.field_names()[i], tree.domain_of(i), previous, rows));
}

// The field blobs of a dataset, checked against its tree.
struct FieldData {
  std::vector<const Tensor*> fields;
  std::vector<LengthsView> lengths;
  std::vector<int64_t> limits;  // per domain

  // Reads inputs [first, first + num_fields). Every field needs a first (row) dimension; lengths fields
  // must be 1-d int32/int64. With `strict`, fields of one domain must have equal row counts (else the
  // domain's limit is the smallest, as in Caffe2's readers).
  void gather(const OperatorBase& op, const DatasetTree& tree, std::size_t first, bool strict) {
    const std::size_t nf = tree.num_fields();
    fields.resize(nf);
    limits.assign(tree.num_offset_fields(), kNoLimit);
    for (std::size_t i = 0; i < nf; ++i) {
      const Tensor& t = field_input(op, tree, first, i);
      fields[i] = &t;
      int64_t& limit = limits[tree.domain_of(i)];
      if (strict && limit != kNoLimit && limit != t.dim(0)) throw_inconsistent_sizes(op, tree, i, limit, t.dim(0));
      limit = std::min(limit, t.dim(0));
    }
    lengths.resize(tree.num_length_fields());
    for (std::size_t j = 0; j < lengths.size(); ++j) {
      const std::size_t f = tree.length_field(j);
      const Tensor& t = *fields[f];
      if (t.ndim() == 1 && t.dtype() == DType::Int32)
        lengths[j] = LengthsView(t.data<int32_t>(), t.dim(0));
      else if (t.ndim() == 1 && t.dtype() == DType::Int64)
        lengths[j] = LengthsView(t.data<int64_t>(), t.dim(0));
      else
        throw TypeError(fmt::format("{}: lengths field {} ({}), {}, must be a 1-d int32 or int64 tensor, got {}",
                                    op.type(), f, tree.field_names()[f], input_desc(op, first + f), t.describe()));
    }
    if (limits[0] == kNoLimit) limits[0] = 0;  // no top-level field: there is nothing to read
  }
};

// ---- cursor management ----

class CreateTreeCursorOp final : public OperatorBase {
 public:
  CreateTreeCursorOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), tree_(with_op_name(*this, [&] { return DatasetTree(args().get_strings("fields")); })) {}
  bool run() override {
    // Reset a cursor over the same fields in place: readers of other threads may hold it.
    Blob& b = output_blob(0);
    if (b.is_type<TreeCursor>() && b.get<TreeCursor>().field_names() == tree_.field_names())
      b.get_checked_mutable<TreeCursor>().reset();
    else
      b.emplace<TreeCursor>(tree_);
    return true;
  }

 private:
  DatasetTree tree_;
};

class ResetCursorOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    cursor_input(*this).reset();
    return true;
  }
};

class GetCursorOffsetOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const std::vector<int64_t> off = cursor_input(*this).offsets();
    Tensor& out = output(0);
    out.resize(DType::Int32, {static_cast<int64_t>(off.size())});
    int32_t* p = out.mutable_data<int32_t>();
    for (std::size_t i = 0; i < off.size(); ++i) {
      if (off[i] > std::numeric_limits<int32_t>::max())
        throw RuntimeError(fmt::format("{}: offset {} does not fit the int32 output", type(), off[i]));
      p[i] = static_cast<int32_t>(off[i]);
    }
    return true;
  }
};

// ---- sequential reads ----

class ReadNextBatchOp final : public OperatorBase {
 public:
  ReadNextBatchOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        batch_size_(positive_arg(*this, "batch_size", 1)),
        enforce_batch_size_(args().get_bool("enforce_batch_size", false)) {}

  bool run() override {
    TreeCursor& cursor = cursor_input(*this);
    const DatasetTree& tree = cursor.tree();
    check_field_count(*this, tree, input_size() - 1);
    if (output_size() != tree.num_fields())
      throw InvalidInput(
          fmt::format("{}: expected one output per field ({}), got {}", type(), tree.num_fields(), output_size()));
    if (tree.num_length_fields() == 0 && run_flat(cursor, tree)) return true;
    run_nested(cursor, tree);
    return true;
  }

 private:
  // The general read: walks the tree of lengths fields. Out of line, so that run_flat's batches do not
  // pay for its frame.
  [[gnu::noinline]] void run_nested(TreeCursor& cursor, const DatasetTree& tree) {
    data_.gather(*this, tree, 1, false);
    const std::size_t nd = tree.num_offset_fields();
    {
      std::lock_guard lk(cursor.mutex());
      std::vector<int64_t>& off = cursor.offsets_locked();
      if (off.empty()) {
        off.assign(nd, 0);
      } else if (off.size() != nd) {
        throw InvalidInput(
            fmt::format("{}: the cursor holds {} offsets, but its fields have {} domains (was it used "
                        "by ReadRandomBatch?)",
                        type(), off.size(), nd));
      }
      prev_.assign(off.begin(), off.end());
      with_op_name(*this, [&] { tree.advance(data_.lengths, data_.limits, off, sizes_, batch_size_); });
      // Not enough rows left for a full batch: every output is empty, which tells the reader to stop.
      if (enforce_batch_size_ && sizes_[0] < batch_size_) std::fill(sizes_.begin(), sizes_.end(), 0);
    }
    // The rows are ours now; copy them outside the lock so that readers of other threads overlap.
    for (std::size_t i = 0; i < tree.num_fields(); ++i) {
      const std::size_t d = tree.domain_of(i);
      slice_rows(*data_.fields[i], prev_[d], sizes_[d], output(i), shape_);
    }
  }

  // A record without lists (no lengths fields: one offset, a pipe's usual batch): the read of run()
  // without the tree walk and its vectors, a third of the operator's instructions at batch 64. False,
  // having changed nothing, when run() must take over: a cursor that holds other offsets, or one past
  // the end (run() reports both).
  bool run_flat(TreeCursor& cursor, const DatasetTree& tree) {
    const std::size_t nf = tree.num_fields();
    if (data_.fields.size() != nf) data_.fields.resize(nf);
    int64_t rows = nf == 0 ? 0 : kNoLimit;
    for (std::size_t i = 0; i < nf; ++i) {
      const Tensor& t = field_input(*this, tree, 1, i);
      data_.fields[i] = &t;
      rows = std::min(rows, t.dim(0));
    }
    int64_t start = 0;
    int64_t n = cursor.claim_flat(rows, batch_size_, start);
    if (n < 0) return false;
    if (enforce_batch_size_ && n < batch_size_) n = 0;  // as in run(): the cursor moved, the outputs are empty
    for (std::size_t i = 0; i < nf; ++i) slice_rows(*data_.fields[i], start, n, output(i), shape_);
    return true;
  }

  int64_t batch_size_;
  bool enforce_batch_size_;
  FieldData data_;
  std::vector<int64_t> prev_, sizes_, shape_;
};

// ---- random reads: offsets matrix, shuffled index, ReadRandomBatch ----

class ComputeOffsetOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    TreeCursor& cursor = cursor_input(*this);
    const DatasetTree& tree = cursor.tree();
    check_field_count(*this, tree, input_size() - 1);
    FieldData data;
    data.gather(*this, tree, 1, false);
    const std::size_t nd = tree.num_offset_fields();
    const int64_t rows = data.limits[0];
    // Row k holds the offsets of every domain before top-level row k; row `rows` is the end. moka always
    // walks from the start (Caffe2 started from the cursor's offsets and documents running it only on a
    // fresh or reset cursor, where the two agree).
    Tensor& out = output(0);
    out.resize(DType::Int64, {rows + 1, static_cast<int64_t>(nd)});
    int64_t* p = out.mutable_data<int64_t>();
    std::vector<int64_t> off(nd, 0), sizes;
    for (int64_t k = 0; k <= rows; ++k) {
      std::copy(off.begin(), off.end(), p + k * static_cast<int64_t>(nd));
      if (k < rows) with_op_name(*this, [&] { tree.advance(data.lengths, data.limits, off, sizes, 1); });
    }
    std::lock_guard lk(cursor.mutex());
    cursor.offsets_locked().assign(nd, 0);
    return true;
  }
};

// Uniform integer in [0, n) from a 64-bit engine whose output sequence the standard fixes, so a seed
// gives the same permutation on every platform (std::shuffle and the distributions do not promise that).
uint64_t bounded(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t v;
  do v = rng();
  while (v >= limit);
  return v % n;
}

template <class It>
void seeded_shuffle(It first, It last, std::mt19937_64& rng) {
  for (auto n = static_cast<uint64_t>(last - first); n > 1; --n)
    std::iter_swap(first + static_cast<std::ptrdiff_t>(n - 1), first + static_cast<std::ptrdiff_t>(bounded(rng, n)));
}

class SortAndShuffleOp final : public OperatorBase {
 public:
  SortAndShuffleOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        sort_by_field_idx_(args().get_int("sort_by_field_idx", 1)),
        batch_size_(positive_arg(*this, "batch_size", 1)),
        shuffle_size_(positive_arg(*this, "shuffle_size", 1)),
        seed_(static_cast<uint64_t>(args().get_int("seed", 0))) {
    if (sort_by_field_idx_ < -1)
      throw InvalidInput(fmt::format("{}: argument \"sort_by_field_idx\" = {} must be -1 (no sort) or a field index",
                                     type(), sort_by_field_idx_));
    if (batch_size_ > std::numeric_limits<int64_t>::max() / shuffle_size_)
      throw InvalidInput(fmt::format("{}: batch_size * shuffle_size is too large", type()));
  }

  bool run() override {
    TreeCursor& cursor = cursor_input(*this);
    const DatasetTree& tree = cursor.tree();
    check_field_count(*this, tree, input_size() - 1);
    if (sort_by_field_idx_ >= static_cast<int64_t>(tree.num_fields()))
      throw InvalidInput(fmt::format("{}: argument \"sort_by_field_idx\" = {} but the dataset has {} fields", type(),
                                     sort_by_field_idx_, tree.num_fields()));
    const std::size_t key_field = sort_by_field_idx_ == -1 ? 0 : static_cast<std::size_t>(sort_by_field_idx_);
    if (tree.num_fields() == 0) throw InvalidInput(fmt::format("{}: the cursor has no fields", type()));
    const Tensor& key = tensor_input(*this, key_field + 1);
    if (key.ndim() == 0)
      throw InvalidInput(fmt::format("{}: field {} ({}) is a 0-d tensor; dataset fields need a row dimension", type(),
                                     key_field, tree.field_names()[key_field]));
    const int64_t size = key.dim(0);
    std::vector<int64_t> idx(static_cast<std::size_t>(size));
    std::iota(idx.begin(), idx.end(), 0);
    if (sort_by_field_idx_ != -1) {
      if (tree.domain_of(key_field) != 0)
        throw InvalidInput(fmt::format("{}: must sort by a field at the root level; field {} ({}) is nested", type(),
                                       key_field, tree.field_names()[key_field]));
      if (key.ndim() != 1)
        throw InvalidInput(fmt::format("{}: the sort field {} ({}) must be 1-d, got {}", type(), key_field,
                                       tree.field_names()[key_field], key.describe()));
      visit_dtype(key.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* k = key.data<T>();
        std::stable_sort(idx.begin(), idx.end(), [k](int64_t a, int64_t b) { return k[a] < k[b]; });
      });
    }
    int64_t shuffle = shuffle_size_;
    if (batch_size_ * shuffle > size) shuffle = size / batch_size_;  // as Caffe2: shrink to what fits
    const int64_t chunk = batch_size_ * shuffle;
    std::mt19937_64 rng(seed_);
    if (chunk > 1)
      for (int64_t at = 0; at + chunk <= size; at += chunk)
        seeded_shuffle(idx.begin() + at, idx.begin() + at + chunk, rng);
    // Then shuffle whole batches; the rows of an incomplete last batch stay at the end.
    const int64_t num_batch = size / batch_size_;
    std::vector<int64_t> order(static_cast<std::size_t>(num_batch));
    std::iota(order.begin(), order.end(), 0);
    seeded_shuffle(order.begin(), order.end(), rng);
    Tensor& out = output(0);
    out.resize(DType::Int64, {size});
    int64_t* p = out.mutable_data<int64_t>();
    for (int64_t b : order) p = std::copy(idx.begin() + b * batch_size_, idx.begin() + (b + 1) * batch_size_, p);
    std::copy(idx.begin() + num_batch * batch_size_, idx.end(), p);
    return true;
  }

 private:
  int64_t sort_by_field_idx_;
  int64_t batch_size_;
  int64_t shuffle_size_;
  uint64_t seed_;
};

// One shard of a dataset's records for one of several readers (moka addition, docs/pipelines.md §3.2):
// the top-level rows 0..rows-1 (rows from ComputeOffset's matrix) or a given order of them (SortAndShuffle's
// permutation), cut into blocks of block_size entries; this shard keeps blocks shard_id, shard_id +
// num_shards, ..., in order. The shards of one dataset are disjoint and together hold every record once.
class ShardIndicesOp final : public OperatorBase {
 public:
  ShardIndicesOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        num_shards_(positive_arg(*this, "num_shards", 1)),
        shard_id_(args().get_int("shard_id", 0)),
        block_size_(positive_arg(*this, "block_size", 1)) {
    if (shard_id_ < 0 || shard_id_ >= num_shards_)
      throw InvalidInput(fmt::format("{}: argument \"shard_id\" = {} must be in [0, num_shards = {})", type(),
                                     shard_id_, num_shards_));
  }

  bool run() override {
    const Tensor& mat = tensor_input(*this, 0);
    if (mat.ndim() != 2 || mat.dtype() != DType::Int64 || mat.dim(0) < 1)
      throw TypeError(
          fmt::format("{}: {} (the offsets matrix from ComputeOffset) must be a 2-d int64 tensor of "
                      "shape [rows + 1, domains], got {}",
                      type(), input_desc(*this, 0), mat.describe()));
    const int64_t rows = mat.dim(0) - 1;
    const int64_t* order = nullptr;
    int64_t n = rows;
    if (input_size() > 1) {
      const Tensor& index = tensor_input(*this, 1);
      if (index.ndim() != 1 || index.dtype() != DType::Int64)
        throw TypeError(
            fmt::format("{}: {} (an order of the records, e.g. from SortAndShuffle) must be a 1-d int64 "
                        "tensor, got {}",
                        type(), input_desc(*this, 1), index.describe()));
      order = index.data<int64_t>();
      n = index.dim(0);
      for (int64_t i = 0; i < n; ++i)
        if (order[i] < 0 || order[i] >= rows)
          throw InvalidInput(fmt::format("{}: {}[{}] = {} is not a record of a dataset of {} rows", type(),
                                         input_desc(*this, 1), i, order[i], rows));
    }
    std::vector<int64_t> mine;
    for (int64_t start = shard_id_ * block_size_; start < n; start += num_shards_ * block_size_)
      for (int64_t i = start; i < std::min(n, start + block_size_); ++i) mine.push_back(order ? order[i] : i);
    Tensor& out = output(0);
    out.resize(DType::Int64, {static_cast<int64_t>(mine.size())});
    std::copy(mine.begin(), mine.end(), out.mutable_data<int64_t>());
    return true;
  }

 private:
  int64_t num_shards_;
  int64_t shard_id_;
  int64_t block_size_;
};

class ReadRandomBatchOp final : public OperatorBase {
 public:
  ReadRandomBatchOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        batch_size_(positive_arg(*this, "batch_size", 1)),
        enforce_batch_size_(args().get_bool("enforce_batch_size", false)),
        loop_over_(args().get_bool("loop_over", false)) {}

  bool run() override {
    TreeCursor& cursor = cursor_input(*this);
    const DatasetTree& tree = cursor.tree();
    if (input_size() < 3)
      throw InvalidInput(
          fmt::format("{}: needs inputs [cursor, indices, offsets, fields...], got {} input(s)", type(), input_size()));
    check_field_count(*this, tree, input_size() - 3);
    if (output_size() != tree.num_fields())
      throw InvalidInput(
          fmt::format("{}: expected one output per field ({}), got {}", type(), tree.num_fields(), output_size()));
    const Tensor& index = tensor_input(*this, 1);
    if (index.ndim() != 1 || index.dtype() != DType::Int64)
      throw TypeError(fmt::format("{}: {} (the shuffled indices) must be a 1-d int64 tensor, got {}", type(),
                                  input_desc(*this, 1), index.describe()));
    const Tensor& mat = tensor_input(*this, 2);
    const auto nd = static_cast<int64_t>(tree.num_offset_fields());
    if (mat.ndim() != 2 || mat.dtype() != DType::Int64 || mat.dim(1) != nd)
      throw TypeError(
          fmt::format("{}: {} (the offsets matrix from ComputeOffset) must be an int64 tensor of shape "
                      "[rows + 1, {}], got {}",
                      type(), input_desc(*this, 2), nd, mat.describe()));
    const int64_t n = index.dim(0);
    const int64_t* ids = index.data<int64_t>();
    const int64_t* offs = mat.data<int64_t>();
    int64_t pos;
    {
      std::lock_guard lk(cursor.mutex());
      std::vector<int64_t>& off = cursor.offsets_locked();
      off.resize(1);  // a random reader's position is its place in the index list
      pos = off[0];
      if (enforce_batch_size_ && pos + batch_size_ > n) pos = n;  // skip an incomplete last batch
      if (loop_over_ && pos >= n) pos = 0;
      off[0] = pos + batch_size_;
    }
    const int64_t end = std::min(n, pos + batch_size_);
    for (std::size_t i = 0; i < tree.num_fields(); ++i) {
      const Tensor& in = tensor_input(*this, i + 3);
      if (in.ndim() == 0)
        throw InvalidInput(fmt::format("{}: field {} ({}) is a 0-d tensor; dataset fields need a row dimension", type(),
                                       i, tree.field_names()[i]));
      const auto d = static_cast<int64_t>(tree.domain_of(i));
      int64_t total = 0;
      for (int64_t k = pos; k < end; ++k) {
        total += record_rows(ids[k], offs, mat.dim(0), nd, d, in, i, tree).second;
      }
      shape_.assign(in.shape().begin(), in.shape().end());
      shape_[0] = total;
      Tensor& out = output(i);
      out.resize(in.dtype(), shape_);
      int64_t at = 0;
      for (int64_t k = pos; k < end; ++k) {
        const auto [begin, rows] = record_rows(ids[k], offs, mat.dim(0), nd, d, in, i, tree);
        copy_rows(in, begin, out, at, rows);
        at += rows;
      }
    }
    return true;
  }

 private:
  // The rows of field `field` (domain d) that top-level record `rec` covers, checked against the data.
  std::pair<int64_t, int64_t> record_rows(int64_t rec, const int64_t* offs, int64_t mat_rows, int64_t nd, int64_t d,
                                          const Tensor& in, std::size_t field, const DatasetTree& tree) const {
    if (rec < 0 || rec + 1 >= mat_rows)
      throw InvalidInput(
          fmt::format("{}: Out of bound when trying to get elem from offsetsmat (index {} with {} rows "
                      "in the offsets matrix)",
                      type(), rec, mat_rows));
    const int64_t begin = offs[rec * nd + d];
    const int64_t stop = offs[(rec + 1) * nd + d];
    if (begin < 0 || stop < begin || stop > in.dim(0))
      throw InvalidInput(fmt::format("{}: the offsets matrix gives rows [{}, {}) of field {} ({}), which has {} rows",
                                     type(), begin, stop, field, tree.field_names()[field], in.dim(0)));
    return {begin, stop - begin};
  }

  int64_t batch_size_;
  bool enforce_batch_size_;
  bool loop_over_;
  std::vector<int64_t> shape_;
};

// ---- writing: consistency check, Append, AtomicAppend, TrimDataset ----

class CheckDatasetConsistencyOp final : public OperatorBase {
 public:
  CheckDatasetConsistencyOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), tree_(with_op_name(*this, [&] { return DatasetTree(args().get_strings("fields")); })) {
    check_field_count(*this, tree_, input_size());
  }

  bool run() override {
    // No lengths fields (a flat record, a pipe writer's usual batch): equal row counts are the whole
    // check, made here without gather's vectors (they were most of the operator's cost per batch).
    if (tree_.num_length_fields() == 0)
      check_flat();
    else
      check_nested();
    return true;
  }

 private:
  // Walks every top-level row: each domain's lengths must add up to exactly the rows its fields have.
  // Out of line, so that the flat check does not pay for its frame.
  [[gnu::noinline]] void check_nested() {
    data_.gather(*this, tree_, 0, true);
    // off_ and sizes_ are members so that a writer checking every batch does not allocate.
    std::vector<int64_t>& off = off_;
    off.assign(tree_.num_offset_fields(), 0);
    with_op_name(*this, [&] { tree_.advance(data_.lengths, data_.limits, off, sizes_, data_.limits[0]); });
    for (std::size_t d = 1; d < off.size(); ++d) {
      if (data_.limits[d] == kNoLimit) continue;  // a lengths field with no values fields: nothing to match
      if (off[d] != data_.limits[d]) {
        const std::size_t lf = tree_.length_field(d - 1);
        throw InvalidInput(
            fmt::format("{}: Inconsistent dataset: the lengths in field {} ({}) add up to {}, but the "
                        "fields they index have {} rows",
                        type(), lf, tree_.field_names()[lf], off[d], data_.limits[d]));
      }
    }
  }

  // Every field of a flat record has a row dimension and the same number of rows (gather's strict
  // check, with the same errors).
  void check_flat() const {
    const std::size_t nf = tree_.num_fields();
    int64_t rows = 0;
    for (std::size_t i = 0; i < nf; ++i) {
      const int64_t r = field_input(*this, tree_, 0, i).dim(0);
      if (i > 0 && r != rows) throw_inconsistent_sizes(*this, tree_, i, rows, r);
      rows = r;
    }
  }

  DatasetTree tree_;
  FieldData data_;
  std::vector<int64_t> off_, sizes_;
};

// True when `t` is an empty dataset column that an append replaces instead of extending: a blob never
// written, or a tensor with no rows (Caffe2: `size() == 0 && dim(0) == 0`).
bool replaced_by_append(const Blob& b) {
  const Tensor* t = b.tensor_or_null();
  if (t == nullptr) return !b.is_initialized();
  return !t->defined() || (t->ndim() >= 1 && t->dim(0) == 0);
}

// Checks that b's rows can be appended to a; names the operator and both blobs.
[[gnu::noinline]] void check_appendable_slow(const OperatorBase& op, const Tensor& a, std::size_t a_in, const Tensor& b,
                                             std::size_t b_in) {
  auto fail = [&](std::string_view why) {
    throw InvalidInput(fmt::format("{}: cannot append {} {} to {} {}: {}", op.type(), input_desc(op, b_in),
                                   b.describe(), input_desc(op, a_in), a.describe(), why));
  };
  if (a.dtype() != b.dtype()) fail("the dtypes differ");
  if (a.ndim() != b.ndim()) fail("the ranks differ");
  if (a.ndim() == 0) fail("0-d tensors have no rows");
  for (std::size_t k = 1; k < a.ndim(); ++k)
    if (a.dim(k) != b.dim(k)) fail("all dimensions but the first must match");
}

// Inline for two vectors of one dtype (a writer's usual batch), which need no more checks.
inline void check_appendable(const OperatorBase& op, const Tensor& a, std::size_t a_in, const Tensor& b,
                             std::size_t b_in) {
  if (a.dtype() == b.dtype() && a.ndim() == 1 && b.ndim() == 1) return;
  check_appendable_slow(op, a, a_in, b, b_in);
}

[[noreturn]] void throw_no_rows(const OperatorBase& op, std::size_t b_in) {
  throw InvalidInput(fmt::format("{}: {} is a 0-d tensor; only tensors with a row dimension can be appended", op.type(),
                                 input_desc(op, b_in)));
}

inline void check_has_rows(const OperatorBase& op, const Tensor& b, std::size_t b_in) {
  if (b.ndim() < 1) [[unlikely]]
    throw_no_rows(op, b_in);
}

// a += rows of b, growing a's storage geometrically (amortized linear over many appends).
inline void append_rows(Tensor& a, const Tensor& b) {
  const int64_t old = a.dim(0);
  a.resize_dim0(old + b.dim(0), /*zero_new=*/false);  // every new row is copied next
  if (plain_vector(b))
    copy_vector_rows(b, 0, a, old, b.dim(0));
  else
    copy_rows(b, 0, a, old, b.dim(0));
}

class AppendOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const Tensor& b = tensor_input(*this, 1);
    check_has_rows(*this, b, 1);
    Blob& ab = input_blob(0);
    if (replaced_by_append(ab)) {
      Tensor copy = b;  // b may be the very blob we overwrite
      output(0) = std::move(copy);
      return true;
    }
    const Tensor& a = tensor_input(*this, 0);
    check_appendable(*this, a, 0, b, 1);
    append_rows(output(0), b);  // output 0 is input 0 (enforced); the schema keeps b a different blob
    return true;
  }
};

class AtomicAppendOp final : public OperatorBase {
 public:
  AtomicAppendOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    if (input_size() < 3 || (input_size() - 1) % 2 != 0 || output_size() != (input_size() - 1) / 2)
      throw InvalidInput(
          fmt::format("{}: needs inputs [mutex, dataset fields..., new fields...] with as many new "
                      "fields as dataset fields, and one output per dataset field; got {} inputs "
                      "and {} outputs",
                      type(), input_size(), output_size()));
    // Which new fields are also dataset fields (blobs are bound for the operator's life, so once):
    // those are snapshotted before anything is appended.
    const std::size_t n = output_size();
    snapshot_of_.assign(n, -1);
    int next = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Blob* bb = &input_blob(1 + n + i);
      for (std::size_t k = 0; k < n; ++k) {
        if (bb == &output_blob(k)) {
          snapshot_of_[i] = next++;
          break;
        }
      }
    }
    aliased_ = next > 0;
    new_.resize(n);
  }

  bool run() override {
    BlobMutex& mu = object_input<BlobMutex>(*this, 0, "a mutex (made by CreateMutex)");
    const std::size_t n = output_size();
    std::lock_guard lk(mu);
    // 1: check every field first, so the dataset is either extended in full or left alone.
    for (std::size_t i = 0; i < n; ++i) {
      const Tensor& b = tensor_input(*this, 1 + n + i);
      check_has_rows(*this, b, 1 + n + i);
      new_[i] = &b;
      if (replaced_by_append(input_blob(1 + i))) continue;
      const Tensor& a = tensor_input(*this, 1 + i);
      if (&input_blob(1 + i) != &output_blob(i))
        throw InvalidInput(fmt::format("{}: Appended-to arguments must be in-place. ({} is not output {} (\"{}\"))",
                                       type(), input_desc(*this, 1 + i), i, output_name(i)));
      check_appendable(*this, a, 1 + i, b, 1 + n + i);
    }
    // A new field that is also a dataset field would change under us: copy those first.
    if (aliased_) {
      snapshots_.clear();
      for (std::size_t i = 0; i < n; ++i)
        if (snapshot_of_[i] >= 0) snapshots_.push_back(*new_[i]);
      for (std::size_t i = 0; i < n; ++i)
        if (snapshot_of_[i] >= 0) new_[i] = &snapshots_[static_cast<std::size_t>(snapshot_of_[i])];
    }
    // 2: copy. (Asked again, as Caffe2 does: a column listed twice is no longer empty the second time.)
    for (std::size_t i = 0; i < n; ++i) {
      if (replaced_by_append(input_blob(1 + i)))
        output(i).copy_from(*new_[i]);
      else
        append_rows(output(i), *new_[i]);
    }
    return true;
  }

 private:
  // Per field, found by the checks: the tensor to append (or its snapshot).
  std::vector<const Tensor*> new_;
  std::vector<Tensor> snapshots_;
  std::vector<int> snapshot_of_;  // per new field: its index in snapshots_, or -1
  bool aliased_ = false;          // some snapshot_of_ >= 0
};

class TrimDatasetOp final : public OperatorBase {
 public:
  TrimDatasetOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        tree_(with_op_name(*this, [&] { return DatasetTree(args().get_strings("fields")); })),
        multiple_of_(positive_arg(*this, "multiple_of", 1)) {
    check_field_count(*this, tree_, input_size());
    if (output_size() != input_size())
      throw InvalidInput(fmt::format("{}: needs one output per input (in place), got {} inputs and {} outputs", type(),
                                     input_size(), output_size()));
    for (std::size_t i = 0; i < output_size(); ++i)
      if (output_name(i) != input_name(i))
        throw InvalidInput(fmt::format("{} must work in place: output {} (\"{}\") must be input {} (\"{}\")", type(), i,
                                       output_name(i), i, input_name(i)));
  }

  bool run() override {
    data_.gather(*this, tree_, 0, false);
    const int64_t rows = data_.limits[0];
    const int64_t keep = rows / multiple_of_ * multiple_of_;
    if (keep == rows) return true;
    std::vector<int64_t> off(tree_.num_offset_fields(), 0), sizes;
    with_op_name(*this, [&] { tree_.advance(data_.lengths, data_.limits, off, sizes, keep); });
    for (std::size_t i = 0; i < tree_.num_fields(); ++i) output(i).resize_dim0(off[tree_.domain_of(i)]);
    return true;
  }

 private:
  DatasetTree tree_;
  int64_t multiple_of_;
  FieldData data_;
};

class IsEmptyOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const bool empty = tensor_input(*this, 0).numel() == 0;  // before output(0): it may be input 0
    output(0).set_scalar<bool>(empty);
    return true;
  }
};

constexpr const char* kFieldsDoc =
    "field names; \"<prefix>:lengths\" introduces a nested domain indexed by it (see CreateTreeCursor)";

}  // namespace

namespace detail {

void register_dataset_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("CreateTreeCursor")
              .inputs(0)
              .outputs(1)
              .arg("fields", ArgType::Strings, kFieldsDoc, "[]")
              .doc("Creates a TreeCursor over a dataset with the given fields: a read position (one offset per "
                   "domain) and a mutex, no data. A field named \"<prefix>:lengths\" defines the domain <prefix>; "
                   "later fields named \"<prefix>:...\" belong to it and have, in total, as many rows as its lengths "
                   "add up to (e.g. \"a\", \"b:lengths\", \"b:values:lengths\", \"b:values:values\"). A lengths field "
                   "must come before the fields of its domain. Running it again on a cursor over the same fields "
                   "resets that cursor."),
          factory_of<CreateTreeCursorOp>());
  reg.add(
      OpSchema("ResetCursor").inputs(1).outputs(0).doc("Moves the cursor in input 0 back to the start. Thread-safe."),
      factory_of<ResetCursorOp>());
  reg.add(OpSchema("GetCursorOffset")
              .inputs(1)
              .outputs(1)
              .doc("Writes the offsets of the cursor in input 0 as a 1-d int32 tensor (empty before the first read)."),
          factory_of<GetCursorOffsetOp>());
  reg.add(OpSchema("ReadNextBatch")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1, OpSchema::kUnbounded)
              .arg("batch_size", ArgType::Int, "number of top-level rows to read; must be positive", "1")
              .arg("enforce_batch_size", ArgType::Bool,
                   "1: when fewer than batch_size rows are left, output empty tensors instead of a short batch", "0")
              .doc("Inputs: [cursor, field_0, ..., field_n-1], the cursor's dataset fields in its order. Under the "
                   "cursor's lock advances by min(rows left, batch_size) top-level rows and writes one output per "
                   "field: its rows of those records (nested fields: the rows their lengths cover). At the end every "
                   "output is empty (0 rows, the field's dtype and inner shape). Thread-safe: concurrent readers of "
                   "one cursor each get different rows."),
          factory_of<ReadNextBatchOp>());
  reg.add(OpSchema("ComputeOffset")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1)
              .doc("Inputs: [cursor, fields...]. Writes an int64 matrix [rows + 1, domains]: row k holds every "
                   "domain's offset before top-level record k (the last row is the end). Resets the cursor to the "
                   "start. Used with SortAndShuffle and ReadRandomBatch."),
          factory_of<ComputeOffsetOp>());
  reg.add(OpSchema("SortAndShuffle")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1)
              .arg("sort_by_field_idx", ArgType::Int, "top-level 1-d field to sort records by, or -1 for no sort", "1")
              .arg("batch_size", ArgType::Int, "records per batch; must be positive", "1")
              .arg("shuffle_size", ArgType::Int, "batches per shuffled chunk; must be positive", "1")
              .arg("seed", ArgType::Int, "random seed (moka addition; the result depends only on it and the data)", "0")
              .doc("Inputs: [cursor, fields...]. Writes a 1-d int64 permutation of the top-level records: sorted "
                   "(stably) by field sort_by_field_idx, each complete chunk of batch_size * shuffle_size shuffled, "
                   "then the order of complete batches shuffled; an incomplete last batch stays last. Deterministic "
                   "for a seed on every platform."),
          factory_of<SortAndShuffleOp>());
  reg.add(OpSchema("ShardIndices")
              .inputs(1, 2)
              .outputs(1)
              .arg("num_shards", ArgType::Int, "how many readers share the dataset; must be positive", "1")
              .arg("shard_id", ArgType::Int, "this reader's shard, in [0, num_shards)", "0")
              .arg("block_size", ArgType::Int, "records per block (a reader's batch_size keeps batches whole)", "1")
              .doc("moka addition. Inputs: [offsets (from ComputeOffset), optional order (1-d int64, e.g. from "
                   "SortAndShuffle)]. Writes the 1-d int64 indices of this shard for ReadRandomBatch: the records "
                   "0..rows-1 (or the order given) in blocks of block_size, keeping blocks shard_id, shard_id + "
                   "num_shards, ... The shards of one dataset are disjoint and together hold every record once."),
          factory_of<ShardIndicesOp>());
  reg.add(OpSchema("ReadRandomBatch")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1, OpSchema::kUnbounded)
              .arg("batch_size", ArgType::Int, "number of records to read; must be positive", "1")
              .arg("enforce_batch_size", ArgType::Bool, "1: skip an incomplete last batch (outputs are empty)", "0")
              .arg("loop_over", ArgType::Bool, "1: start over at the end (never empty)", "0")
              .doc("Inputs: [cursor, indices (1-d int64, e.g. from SortAndShuffle), offsets (from ComputeOffset), "
                   "fields...]. Under the cursor's lock takes the next batch_size entries of indices and writes one "
                   "output per field with the rows of those records, in that order. The cursor's offsets become one "
                   "number: the position in indices. Thread-safe."),
          factory_of<ReadRandomBatchOp>());
  reg.add(OpSchema("CheckDatasetConsistency")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(0)
              .arg("fields", ArgType::Strings, kFieldsDoc, "[]")
              .doc("Inputs: one tensor per field. Fails (InvalidInput) unless fields of one domain have equal row "
                   "counts and every lengths field adds up to exactly the rows of the fields it indexes, so the "
                   "data can be appended to a dataset safely."),
          factory_of<CheckDatasetConsistencyOp>());
  reg.add(OpSchema("Append").inputs(2).outputs(1).enforce_inplace({{0, 0}}).doc(
              "Appends the rows of input 1 to input 0 (in place). All dimensions but the first and the dtype "
              "must match; an input 0 with no rows is replaced by a copy of input 1. Storage grows "
              "geometrically (amortized linear)."),
          factory_of<AppendOp>());
  reg.add(OpSchema("AtomicAppend")
              .inputs(3, OpSchema::kUnbounded)
              .outputs(1, OpSchema::kUnbounded)
              .allow_any_inplace()
              .doc("Inputs: [mutex (CreateMutex), dataset fields (n)..., new fields (n)...]; outputs: the n dataset "
                   "fields (in place). Under the mutex checks every field, then appends each new field to its "
                   "dataset field as Append does: all fields or none."),
          factory_of<AtomicAppendOp>());
  reg.add(OpSchema("TrimDataset")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(1, OpSchema::kUnbounded)
              .allow_any_inplace()
              .arg("fields", ArgType::Strings, kFieldsDoc, "[]")
              .arg("multiple_of", ArgType::Int, "keep the largest number of records that is a multiple of this", "1")
              .doc("Inputs and outputs: the dataset's fields (in place). Drops the last top-level records (and the "
                   "nested rows they own) so that the record count is a multiple of multiple_of."),
          factory_of<TrimDatasetOp>());
  reg.add(OpSchema("IsEmpty").inputs(1).outputs(1).doc(
              "Writes a bool scalar (shape []): true when the tensor in input 0 has no elements."),
          factory_of<IsEmptyOp>());
}

}  // namespace detail
}  // namespace moka
