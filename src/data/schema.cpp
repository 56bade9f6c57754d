// Records: the Field tree (Scalar/Struct/List), flattening, cloning, and binding to nets and workspaces.
#include "moka/data/schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "moka/builder/ops.h"
#include "moka/core/error.h"
#include "moka/core/workspace.h"

namespace moka::schema {

namespace detail {

struct FieldNode {
  FieldKind kind = FieldKind::Struct;
  // Scalar
  std::optional<DType> dtype;
  std::optional<BlobRef> blob;
  std::optional<Tensor> value;
  // Struct: named children; List: {"lengths", "values"}
  std::vector<std::pair<std::string, std::shared_ptr<FieldNode>>> children;

  static Field handle(std::shared_ptr<FieldNode> n) { return Field(std::move(n)); }
  static const std::shared_ptr<FieldNode>& node(const Field& f) { return f.node_; }

  std::shared_ptr<FieldNode> copy(bool keep_data) const {
    auto n = std::make_shared<FieldNode>();
    n->kind = kind;
    n->dtype = dtype;
    if (keep_data) {
      n->blob = blob;
      n->value = value;
    }
    for (const auto& [name, c] : children) n->children.emplace_back(name, c->copy(keep_data));
    return n;
  }

  void names(const std::string& prefix, std::vector<std::string>& out) const {
    if (kind == FieldKind::Scalar) {
      out.push_back(prefix);
      return;
    }
    for (const auto& [name, c] : children) c->names(prefix.empty() ? name : prefix + kFieldSeparator + name, out);
  }

  void scalars(const std::shared_ptr<FieldNode>& self, std::vector<std::shared_ptr<FieldNode>>& out) const {
    if (kind == FieldKind::Scalar) {
      out.push_back(self);
      return;
    }
    for (const auto& [name, c] : children) c->scalars(c, out);
  }

  std::string repr() const {
    switch (kind) {
      case FieldKind::Scalar: {
        std::string s = fmt::format("Scalar({}", dtype ? std::string(dtype_name(*dtype)) : std::string("None"));
        if (blob) s += fmt::format(", blob={}", blob->name());
        return s + ")";
      }
      case FieldKind::List:
        return fmt::format("List(values={})", children.at(1).second->repr());
      case FieldKind::Struct: {
        std::string s = "Struct(";
        for (std::size_t i = 0; i < children.size(); ++i)
          s += fmt::format("{}{}={}", i ? ", " : "", children[i].first, children[i].second->repr());
        return s + ")";
      }
    }
    return {};
  }

  bool same(const FieldNode& o) const {
    if (kind != o.kind || children.size() != o.children.size()) return false;
    if (kind == FieldKind::Scalar) return dtype == o.dtype;
    for (std::size_t i = 0; i < children.size(); ++i)
      if (children[i].first != o.children[i].first || !children[i].second->same(*o.children[i].second)) return false;
    return true;
  }
};

}  // namespace detail

using detail::FieldNode;

namespace {

std::vector<std::shared_ptr<FieldNode>> scalar_nodes(const std::shared_ptr<FieldNode>& root) {
  std::vector<std::shared_ptr<FieldNode>> out;
  root->scalars(root, out);
  return out;
}

}  // namespace

Field::Field() : node_(std::make_shared<FieldNode>()) {}

FieldKind Field::kind() const noexcept { return node_->kind; }

std::vector<std::string> Field::field_names() const {
  std::vector<std::string> out;
  node_->names("", out);
  return out;
}

std::vector<BlobRef> Field::field_blobs() const {
  const auto scalars = scalar_nodes(node_);
  const auto names = field_names();
  std::vector<BlobRef> out;
  out.reserve(scalars.size());
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    if (!scalars[i]->blob)
      throw InvalidInput(fmt::format("Value is not set for this field. (field \"{}\" of {})", names[i], repr()));
    out.push_back(*scalars[i]->blob);
  }
  return out;
}

bool Field::has_blobs() const {
  const auto scalars = scalar_nodes(node_);
  return !scalars.empty() &&
         std::all_of(scalars.begin(), scalars.end(), [](const auto& n) { return n->blob.has_value(); });
}

std::vector<std::optional<DType>> Field::field_types() const {
  std::vector<std::optional<DType>> out;
  for (const auto& n : scalar_nodes(node_)) out.push_back(n->dtype);
  return out;
}

std::size_t Field::num_fields() const { return scalar_nodes(node_).size(); }

std::vector<Field> Field::all_scalars() const {
  std::vector<Field> out;
  for (auto& n : scalar_nodes(node_)) out.push_back(Field(n));
  return out;
}

Field Field::clone_schema() const { return Field(node_->copy(false)); }
Field Field::clone() const { return Field(node_->copy(true)); }

std::vector<std::pair<std::string, Field>> Field::children() const {
  std::vector<std::pair<std::string, Field>> out;
  for (const auto& [name, c] : node_->children) out.emplace_back(name, Field(c));
  return out;
}

bool Field::has_field(std::string_view name) const {
  const FieldNode* n = node_.get();
  while (true) {
    const auto sep = name.find(kFieldSeparator);
    const std::string_view head = name.substr(0, sep);
    const auto it =
        std::find_if(n->children.begin(), n->children.end(), [&](const auto& c) { return c.first == head; });
    if (it == n->children.end()) return false;
    n = it->second.get();
    if (sep == std::string_view::npos) return true;
    name = name.substr(sep + 1);
  }
}

Field Field::field(std::string_view name) const {
  std::shared_ptr<FieldNode> n = node_;
  std::string_view rest = name;
  while (true) {
    const auto sep = rest.find(kFieldSeparator);
    const std::string_view head = rest.substr(0, sep);
    const auto it =
        std::find_if(n->children.begin(), n->children.end(), [&](const auto& c) { return c.first == head; });
    if (it == n->children.end()) {
      std::vector<std::string> have;
      for (const auto& c : n->children) have.push_back(c.first);
      throw NotFound(
          fmt::format("Field \"{}\" not found in {} (fields there: [{}])", name, repr(), fmt::join(have, ", ")));
    }
    n = it->second;
    if (sep == std::string_view::npos) return Field(n);
    rest = rest.substr(sep + 1);
  }
}

std::optional<DType> Field::dtype() const { return node_->dtype; }
bool Field::has_blob() const { return node_->blob.has_value(); }

BlobRef Field::blob() const {
  if (node_->kind != FieldKind::Scalar)
    throw InvalidInput(fmt::format("{} is not a Scalar: it has no single blob (use field_blobs())", repr()));
  if (!node_->blob) throw InvalidInput(fmt::format("Value is not set for this field. ({})", repr()));
  return *node_->blob;
}

void Field::set(const BlobRef& blob, bool unsafe) {
  if (node_->kind != FieldKind::Scalar) throw InvalidInput(fmt::format("set(): {} is not a Scalar", repr()));
  if (blob.empty()) throw InvalidInput(fmt::format("set(): an empty BlobRef for {}", repr()));
  if (node_->blob && !unsafe)
    throw InvalidInput(
        fmt::format("Scalar should be considered immutable: {} already has a blob; pass unsafe = true "
                    "to replace it with {}",
                    repr(), blob.name()));
  node_->blob = blob;
}

const std::optional<Tensor>& Field::value() const { return node_->value; }

void Field::set_value(Tensor value) {
  if (node_->kind != FieldKind::Scalar) throw InvalidInput(fmt::format("set_value(): {} is not a Scalar", repr()));
  node_->dtype = value.dtype();
  node_->value = std::move(value);
}

std::string Field::repr() const { return node_->repr(); }

bool Field::same_schema(const Field& other) const { return node_->same(*other.node_); }

Scalar::Scalar(std::optional<DType> dtype, std::optional<BlobRef> blob) : Field(std::make_shared<FieldNode>()) {
  node_->kind = FieldKind::Scalar;
  node_->dtype = dtype;
  if (blob && blob->empty()) throw InvalidInput("Scalar: an empty BlobRef");
  node_->blob = std::move(blob);
}

Scalar::Scalar(Tensor value) : Scalar(value.dtype()) { node_->value = std::move(value); }

Struct::Struct(std::initializer_list<std::pair<std::string, Field>> fields)
    : Struct(std::vector<std::pair<std::string, Field>>(fields)) {}

Struct::Struct(const std::vector<std::pair<std::string, Field>>& fields) {
  for (const auto& [name, f] : fields) {
    if (name.empty()) throw InvalidInput("Struct: a field name is empty");
    if (name.find(kFieldSeparator) != std::string::npos)
      throw InvalidInput(
          fmt::format("Struct: field name \"{}\" contains '{}'; nest a Struct instead", name, kFieldSeparator));
    for (const auto& existing : node_->children)
      if (existing.first == name) throw InvalidInput(fmt::format("Struct: duplicate field name \"{}\"", name));
    node_->children.emplace_back(name, FieldNode::node(f));
  }
}

List::List(const Field& values, std::optional<BlobRef> lengths_blob) {
  node_->kind = FieldKind::List;
  node_->children.emplace_back("lengths", FieldNode::node(Scalar(DType::Int32, std::move(lengths_blob))));
  node_->children.emplace_back("values", FieldNode::node(values));
}

Field from_column_list(const std::vector<std::string>& column_names,
                       const std::vector<std::optional<DType>>& column_types) {
  if (!column_types.empty() && column_types.size() != column_names.size())
    throw InvalidInput(
        fmt::format("from_column_list: {} column names but {} column types", column_names.size(), column_types.size()));
  std::vector<std::pair<std::string, Field>> fields;
  for (std::size_t i = 0; i < column_names.size(); ++i)
    fields.emplace_back(column_names[i], Scalar(column_types.empty() ? std::nullopt : column_types[i]));
  return Struct(fields);
}

Field from_blob_list(const Field& schema, const std::vector<BlobRef>& blobs) {
  Field record = schema.clone_schema();
  auto scalars = record.all_scalars();
  if (scalars.size() != blobs.size())
    throw InvalidInput(fmt::format("Values must have {} elements, got {}.", scalars.size(), blobs.size()));
  for (std::size_t i = 0; i < blobs.size(); ++i) scalars[i].set(blobs[i], true);
  return record;
}

Field NewRecord(Net& net, const Field& schema) {
  if (schema.is_scalar()) {
    Field result = schema.clone_schema();
    result.set(net.next_scoped_blob("unnamed_scalar"), true);
    return result;
  }
  std::vector<BlobRef> blobs;
  for (const auto& name : schema.field_names()) blobs.push_back(net.next_scoped_blob(name));
  return from_blob_list(schema, blobs);
}

Field NewRecord(const Field& schema) {
  Net net = ops::net();
  return NewRecord(net, schema);
}

BlobRef const_tensor(Net& net, const Tensor& value, const BlobRef& blob) {
  std::vector<Arg> args;
  const char* type = nullptr;
  const std::vector<int64_t>& shape = value.shape();
  switch (value.dtype()) {
    case DType::Int64: {
      auto v = value.values<int64_t>();
      args.emplace_back("values", std::vector<int64_t>(v.begin(), v.end()));
      type = "GivenTensorInt64Fill";
      break;
    }
    case DType::Int32: {
      auto v = value.values<int32_t>();
      args.emplace_back("values", std::vector<int64_t>(v.begin(), v.end()));
      type = "GivenTensorIntFill";
      break;
    }
    case DType::Bool: {
      auto v = value.values<bool>();
      args.emplace_back("values", std::vector<int64_t>(v.begin(), v.end()));
      type = "GivenTensorBoolFill";
      break;
    }
    case DType::Double: {
      auto v = value.values<double>();
      args.emplace_back("values", std::vector<double>(v.begin(), v.end()));
      type = "GivenTensorDoubleFill";
      break;
    }
    case DType::Float: {
      auto v = value.values<float>();
      args.emplace_back("values", std::vector<double>(v.begin(), v.end()));
      type = "GivenTensorFill";
      break;
    }
    case DType::String: {
      auto v = value.values<std::string>();
      args.emplace_back("values", std::vector<std::string>(v.begin(), v.end()));
      type = "GivenTensorStringFill";
      break;
    }
    default:
      throw InvalidInput(fmt::format("ConstRecord: cannot make a constant of dtype {} (blob {})",
                                     dtype_caffe2_name(value.dtype()), blob.name()));
  }
  args.emplace_back("shape", shape);
  return net.op(type, {}, {blob}, std::move(args)).single();
}

Field ConstRecord(Net& net, const Field& data) {
  Field record = NewRecord(net, data);
  const auto values = data.all_scalars();
  const auto blobs = record.field_blobs();
  const auto names = data.field_names();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i].value()) throw InvalidInput(fmt::format("ConstRecord: field \"{}\" has no value", names[i]));
    const_tensor(net, *values[i].value(), blobs[i]);
  }
  return record;
}

Field ConstRecord(const Field& data) {
  Net net = ops::net();
  return ConstRecord(net, data);
}

Field InitEmptyRecord(Net& net, const Field& schema_or_record, bool enforce_types) {
  Field record = schema_or_record.has_blobs() ? schema_or_record : NewRecord(net, schema_or_record);
  const auto types = record.field_types();
  const auto blobs = record.field_blobs();
  const auto names = record.field_names();
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    if (types[i] && *types[i] == DType::String) {
      // ConstantFill cannot make strings; an empty string tensor is GivenTensorStringFill of nothing.
      net.op("GivenTensorStringFill", {}, {blobs[i]},
             {{"values", std::vector<std::string>{}}, {"shape", std::vector<int64_t>{0}}});
    } else if (types[i]) {
      net.op("ConstantFill", {}, {blobs[i]}, {{"shape", std::vector<int64_t>{0}}, {"dtype", *types[i]}});
    } else {
      if (enforce_types)
        throw InvalidInput(fmt::format("InitEmptyRecord: field \"{}\" has no dtype (enforce_types)", names[i]));
      net.op("ConstantFill", {}, {blobs[i]}, {{"shape", std::vector<int64_t>{0}}});
    }
  }
  return record;
}

void FeedRecord(const Field& record, const std::vector<Tensor>& values, Workspace& ws) {
  const auto blobs = record.field_blobs();
  if (blobs.size() != values.size())
    throw InvalidInput(fmt::format("FeedRecord: the record has {} fields, got {} values", blobs.size(), values.size()));
  for (std::size_t i = 0; i < blobs.size(); ++i) ws.create_blob(blobs[i].name())->get_mutable<Tensor>() = values[i];
}

void FeedRecord(const Field& record, const Field& data, Workspace& ws) {
  std::vector<Tensor> values;
  const auto names = data.field_names();
  const auto scalars = data.all_scalars();
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    if (!scalars[i].value())
      throw InvalidInput(fmt::format("FeedRecord: field \"{}\" of the data has no value", names[i]));
    values.push_back(*scalars[i].value());
  }
  FeedRecord(record, values, ws);
}

Field FetchRecord(const Field& record, const Workspace& ws) {
  Field out = record.clone();
  for (Field& s : out.all_scalars()) {
    const BlobRef b = s.blob();
    const Blob* blob = ws.get_blob(b.name());
    if (!blob) throw NotFound(fmt::format("FetchRecord: blob \"{}\" does not exist", b.name()));
    const Tensor* t = blob->tensor_or_null();
    if (!t)
      throw TypeError(fmt::format("FetchRecord: blob \"{}\" holds {}, not a tensor", b.name(), blob->type_name()));
    s.set_value(*t);
  }
  return out;
}

}  // namespace moka::schema
