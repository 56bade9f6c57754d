// Records (Caffe2's schema.py; docs/pipelines.md §1): Scalar, Struct and List fields with flattened names and blobs,
// and the helpers that bind them to nets and workspaces (NewRecord, ConstRecord, InitEmptyRecord,
// FeedRecord, FetchRecord, from_blob_list).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/net.h"
#include "moka/core/dtype.h"
#include "moka/core/tensor.h"

namespace moka {
class Workspace;
}

namespace moka::schema {

/// Caffe2's FIELD_SEPARATOR: joins nested names ("a:b", "x:lengths").
inline constexpr char kFieldSeparator = ':';

enum class FieldKind { Scalar, Struct, List };

namespace detail {
struct FieldNode;
}

/// @brief A record or a record schema: a tree of Struct, List and Scalar nodes (Caffe2's
/// `schema.Field`).
///
/// A Field is a **handle**: copies share the node, like Python references, so `rec["uid"]`
/// returned from a Struct is the Struct's own child and `set()` on it changes the Struct.
/// A Scalar may carry a blob (a record bound to a net) and/or a value (a Tensor: data records
/// such as Caffe2's `Struct(('uid', np.array(...)))`, and what FetchRecord returns).
///
/// Flattened names follow Caffe2: a Scalar is `""`, a Struct child `name` or `name:sub`, a
/// List `lengths` and `values[:sub]`.
/// @code
///   namespace s = moka::schema;
///   s::Struct rec({{"uid", s::Scalar(moka::DType::Int64)}, {"tags", s::List(s::Scalar(moka::DType::String))}});
///   rec.field_names();              // {"uid", "tags:lengths", "tags:values"}
///   s::Field bound = s::NewRecord(net, rec);
///   moka::BlobRef uid = bound["uid"]();   // the blob (Caffe2's rec.uid())
/// @endcode
/// Thread-safety: build on one thread; a finished record may be read concurrently.
class Field {
 public:
  /// An empty Struct.
  Field();

  FieldKind kind() const noexcept;
  bool is_scalar() const noexcept { return kind() == FieldKind::Scalar; }
  bool is_struct() const noexcept { return kind() == FieldKind::Struct; }
  bool is_list() const noexcept { return kind() == FieldKind::List; }

  /// The flattened field names, in order.
  std::vector<std::string> field_names() const;
  /// The blobs of every scalar, in order; InvalidInput "Value is not set for this field." (naming
  /// the field) when one has none.
  std::vector<BlobRef> field_blobs() const;
  /// True when every scalar has a blob (and there is at least one scalar).
  bool has_blobs() const;
  /// The dtype of every scalar (nullopt where unknown).
  std::vector<std::optional<DType>> field_types() const;
  /// Number of scalars (= field_names().size()).
  std::size_t num_fields() const;
  /// Every scalar, in order (handles into this record).
  std::vector<Field> all_scalars() const;

  /// A deep copy with the same structure and dtypes, without blobs and values.
  Field clone_schema() const;
  /// A deep copy, blobs and values included.
  Field clone() const;

  /// Struct: the named children in order; List: {"lengths", …}, {"values", …}; Scalar: none.
  std::vector<std::pair<std::string, Field>> children() const;
  /// Whether field(name) would succeed.
  bool has_field(std::string_view name) const;
  /// @brief The child called name; nested names use ':' ("a:b"). NotFound naming the field
  /// and the names there are.
  Field field(std::string_view name) const;
  Field operator[](std::string_view name) const { return field(name); }

  /// Scalar: its dtype, if known.
  std::optional<DType> dtype() const;
  /// Scalar: whether it has a blob.
  bool has_blob() const;
  /// Scalar: its blob (Caffe2's `rec.uid()`); InvalidInput "Value is not set for this field.".
  BlobRef blob() const;
  BlobRef operator()() const { return blob(); }
  /// @brief Scalar: binds it to blob (Caffe2's `set(blob=..., unsafe=True)`).
  ///
  /// Scalars are meant to be immutable once bound: replacing an existing blob needs unsafe = true
  /// (InvalidInput otherwise), as in `out["value"].set(rec["value"](), true)`.
  void set(const BlobRef& blob, bool unsafe = false);
  /// Scalar: its value, if it carries one.
  const std::optional<Tensor>& value() const;
  /// Scalar: sets the value (and the dtype, from it).
  void set_value(Tensor value);

  /// "Struct(uid=Scalar(int64, blob=init/uid), ...)"
  std::string repr() const;

  /// Same structure, names and dtypes (blobs and values are ignored).
  bool same_schema(const Field& other) const;
  /// Whether both handles refer to the same node.
  bool same_as(const Field& other) const noexcept { return node_ == other.node_; }

 protected:
  explicit Field(std::shared_ptr<detail::FieldNode> node) : node_(std::move(node)) {}
  std::shared_ptr<detail::FieldNode> node_;

  friend struct detail::FieldNode;
};

/// @brief A leaf: one blob (Caffe2's `Scalar(dtype=None, blob=None)`).
/// @code
///   moka::schema::Scalar a;                                         // no dtype, no blob
///   moka::schema::Scalar b(moka::DType::Int64);
///   moka::schema::Scalar c(moka::DType::Double, moka::BlobRef("x"));
///   moka::schema::Scalar d(moka::Tensor::vector<int64_t>({1, 2, 6}));  // a value (data record)
/// @endcode
class Scalar : public Field {
 public:
  explicit Scalar(std::optional<DType> dtype = std::nullopt, std::optional<BlobRef> blob = std::nullopt);
  explicit Scalar(Tensor value);
};

/// @brief Named fields in order (Caffe2's `Struct(('a', f), ...)`). Duplicate names, empty names
/// and names containing ':' are refused (InvalidInput).
class Struct : public Field {
 public:
  Struct() = default;
  Struct(std::initializer_list<std::pair<std::string, Field>> fields);
  explicit Struct(const std::vector<std::pair<std::string, Field>>& fields);
};

/// @brief A list per row: `lengths` (int32) and the concatenated `values` (Caffe2's `List`).
class List : public Field {
 public:
  explicit List(const Field& values, std::optional<BlobRef> lengths_blob = std::nullopt);
  /// The lengths scalar.
  Field lengths() const { return field("lengths"); }
  /// The values field.
  Field values() const { return field("values"); }
};

/// @brief A Struct of scalars named by columns (Caffe2's `from_column_list`).
Field from_column_list(const std::vector<std::string>& column_names,
                       const std::vector<std::optional<DType>>& column_types = {});

/// @brief A copy of schema whose scalars are bound to blobs, in order (Caffe2's
/// `from_blob_list`); InvalidInput "Values must have N elements, got M.".
Field from_blob_list(const Field& schema, const std::vector<BlobRef>& blobs);

/// @brief A record with a fresh blob per field: `net.next_scoped_blob(field_name)` (a lone
/// Scalar gets "unnamed_scalar") — Caffe2's `NewRecord(net, schema)`.
Field NewRecord(Net& net, const Field& schema);
/// NewRecord on the current net of the active NetBuilder (Caffe2's `NewRecord(ops, schema)`).
Field NewRecord(const Field& schema);

/// @brief NewRecord(net, data) plus one constant fill per field holding data's values (Caffe2's
/// `ConstRecord`); every scalar of data needs a value (InvalidInput otherwise).
Field ConstRecord(Net& net, const Field& data);
/// ConstRecord on the current net of the active NetBuilder.
Field ConstRecord(const Field& data);

/// @brief `ConstantFill(shape=[0], dtype)` into each field (Caffe2's `InitEmptyRecord`): an
/// empty record of the schema's types. A schema without blobs gets NewRecord(net, ...) first.
/// A scalar of unknown dtype becomes an empty float tensor, unless enforce_types (InvalidInput).
Field InitEmptyRecord(Net& net, const Field& schema_or_record, bool enforce_types = false);

/// @brief Writes values into the record's blobs in ws (Caffe2's `FeedRecord`); InvalidInput when
/// the counts differ.
void FeedRecord(const Field& record, const std::vector<Tensor>& values, Workspace& ws);
/// FeedRecord with the values of a data record (every scalar must carry a value).
void FeedRecord(const Field& record, const Field& data, Workspace& ws);

/// @brief A copy of record whose scalars carry the tensors now in ws (Caffe2's `FetchRecord`).
/// NotFound when a blob is missing, TypeError when it holds no tensor.
Field FetchRecord(const Field& record, const Workspace& ws);

/// @brief Emits into net a fill operator writing value to blob (GivenTensor*Fill by dtype), the
/// way ConstRecord does.
BlobRef const_tensor(Net& net, const Tensor& value, const BlobRef& blob);

}  // namespace moka::schema
