// Operators Save, Load and DBExists (Caffe2 load_save_op; docs/save-load.md) over save_blobs/load_blobs, and
// GetAllBlobNames (here because it can keep only the blobs Save can write); the storage layer registers them
// itself (register_storage_operators), as exec does its control operators.
#include <fmt/format.h>

#include <mutex>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/save_load.h"

namespace moka {

namespace {

class SaveOp final : public OperatorBase {
 public:
  SaveOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    const Arguments& a = args();
    spec_.blob_names = def.input;
    spec_.db = a.get_string("db", "");
    spec_.db_type = a.get_string("db_type", "");
    spec_.absolute_path = a.get_int("absolute_path", 0) != 0;
    spec_.strip_prefix = a.get_string("strip_prefix", "");
    spec_.blob_name_overrides = a.get_strings("blob_name_overrides");
    spec_.chunk_size = a.get_int("chunk_size", 0);
    // Argument errors surface when the operator is created, as in Caffe2's constructor.
    detail::save_stored_names(spec_);
    // The newest Caffe2 computes the path at construction: root_folder changes later do not apply.
    path_ = resolve_db_path(*ws, spec_.db, spec_.absolute_path);
    for (Blob* b : input_blobs()) blobs_.push_back(b);
  }
  bool run() override {
    detail::save_bound_blobs(spec_, path_, blobs_);
    return true;
  }

 private:
  SaveSpec spec_;
  std::string path_;
  std::vector<const Blob*> blobs_;
};

class LoadOp final : public OperatorBase {
 public:
  LoadOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    if (input_size() > 0)
      throw InvalidInput(fmt::format(
          "Load: loading from DBReader inputs ({} given, first \"{}\") is not supported in moka; pass the db path "
          "with the `db` or `dbs` argument and `db_type`",
          input_size(), input_name(0)));
    const Arguments& a = args();
    spec_.blob_names = def.output;
    const std::string db = a.get_string("db", "");
    spec_.dbs = a.get_strings("dbs");
    // As Caffe2: `dbs` wins when both are given.
    if (spec_.dbs.empty() && !db.empty()) spec_.dbs.push_back(db);
    spec_.db_type = a.get_string("db_type", "");
    spec_.absolute_path = a.get_int("absolute_path", 0) != 0;
    spec_.add_prefix = a.get_string("add_prefix", "");
    spec_.strip_prefix = a.get_string("strip_prefix", "");
    spec_.source_blob_names = a.get_strings("source_blob_names");
    spec_.load_all = a.get_int("load_all", 0) != 0;
    spec_.allow_incomplete = a.get_bool("allow_incomplete", false);
    spec_.keep_device = a.get_int("keep_device", 0) != 0;
    detail::check_load_spec(spec_);
    for (const auto& d : spec_.dbs) paths_.push_back(resolve_db_path(*ws, d, spec_.absolute_path));
  }
  bool run() override {
    detail::load_bound_blobs(*workspace(), spec_, paths_, output_blobs());
    return true;
  }

 private:
  LoadSpec spec_;
  std::vector<std::string> paths_;
};

class DBExistsOp final : public OperatorBase {
 public:
  DBExistsOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    const std::string name = args().get_string("db_name", "");
    db_type_ = args().get_string("db_type", "");
    if (name.empty()) throw InvalidInput("DBExists: Must specify a db name (argument \"db_name\").");
    if (db_type_.empty()) throw InvalidInput("DBExists: Must specify a db type.");
    path_ = resolve_db_path(*ws, name, args().get_int("absolute_path", 0) != 0);
  }
  bool run() override {
    output(0).set_scalar<bool>(db_exists(db_type_, path_));
    return true;
  }

 private:
  std::string db_type_;
  std::string path_;
};

class GetAllBlobNamesOp final : public OperatorBase {
 public:
  GetAllBlobNamesOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        include_shared_(args().get_bool("include_shared", true)),
        serializable_only_(args().get_bool("serializable_only", false)) {}
  bool run() override {
    std::vector<std::string> names = include_shared_ ? workspace()->blobs() : workspace()->local_blobs();
    if (serializable_only_) {
      // The output itself stays: it is a string tensor once written, and a checkpoint's list includes it.
      std::erase_if(names, [&](const std::string& name) {
        return name != output_name(0) && !is_serializable(*workspace()->get_blob(name));
      });
    }
    Tensor& out = output(0);
    out.resize(DType::String, {static_cast<int64_t>(names.size())});
    std::copy(names.begin(), names.end(), out.mutable_data<std::string>());
    return true;
  }

 private:
  bool include_shared_;
  bool serializable_only_;
};

void register_db_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("Save")
              .inputs(1, OpSchema::kUnbounded)
              .outputs(0)
              .arg("db", ArgType::String, "path of the DB to write (required)")
              .arg("db_type", ArgType::String, "minidb, leveldb or lmdb, case-insensitive (required)")
              .arg("absolute_path", ArgType::Int, "0: the path is the workspace's root_folder + \"/\" + db", "0")
              .arg("strip_prefix", ArgType::String,
                   "stored names lose everything up to and including the first occurrence of this")
              .arg("blob_name_overrides", ArgType::Strings, "stored name of each input (one per input)")
              .arg("chunk_size", ArgType::Int, "tensor elements per record: 0 default (1,000,000), -1 no chunking", "0")
              .doc("Writes the input blobs into a new DB (an existing DB at the path is replaced), all in one "
                   "transaction that is committed durably. Tensors are stored in chunks under \"<name>#%<i>\", "
                   "other blobs (counters, cursors) under \"<name>\". See docs/save-load.md."),
          factory_of<SaveOp>());
  reg.add(OpSchema("Load")
              .inputs(0, OpSchema::kUnbounded)
              .outputs(0, OpSchema::kUnbounded)
              .arg("db", ArgType::String, "path of the DB to read")
              .arg("dbs", ArgType::Strings, "paths of several DBs to read (instead of db)")
              .arg("db_type", ArgType::String, "minidb, leveldb or lmdb, case-insensitive (required)")
              .arg("absolute_path", ArgType::Int, "0: paths are relative to the workspace's root_folder", "0")
              .arg("add_prefix", ArgType::String, "prepended to every stored name")
              .arg("strip_prefix", ArgType::String,
                   "stored names lose everything up to and including the first occurrence of this")
              .arg("source_blob_names", ArgType::Strings, "stored name read into each output (one per output)")
              .arg("load_all", ArgType::Int, "1: load every entry into a blob of its name; outputs are ignored", "0")
              .arg("allow_incomplete", ArgType::Bool, "1: stored blobs that are missing are not an error", "0")
              .arg("keep_device", ArgType::Int, "accepted for compatibility (moka has one device)", "0")
              .doc("Loads blobs from one or more DBs into the output blobs (created in the workspace the "
                   "operator runs in when missing). Each loaded blob is replaced as a whole; chunks may arrive in "
                   "any order. DBReader inputs are not supported. See docs/save-load.md."),
          factory_of<LoadOp>());
  reg.add(
      OpSchema("GetAllBlobNames")
          .inputs(0)
          .outputs(1)
          .arg("include_shared", ArgType::Bool,
               "1: every blob visible from the workspace (parents' and forwarded ones too); 0: local blobs only", "1")
          .arg("serializable_only", ArgType::Bool,
               "1: only blobs Save can write (no queues, mutexes or uninitialized blobs); a moka addition", "0")
          .doc("Writes the names of the workspace's blobs as a 1-d string tensor, sorted (Caffe2's order was "
               "unspecified). The output blob itself is included, since it exists once the operator does."),
      factory_of<GetAllBlobNamesOp>());
  reg.add(OpSchema("DBExists")
              .inputs(0)
              .outputs(1)
              .arg("db_name", ArgType::String, "path of the DB (note: not `db`) (required)")
              .arg("db_type", ArgType::String, "minidb, leveldb or lmdb, case-insensitive (required)")
              .arg("absolute_path", ArgType::Int, "0: the path is relative to the workspace's root_folder", "0")
              .doc("Writes a bool scalar (shape []): whether a readable DB of db_type exists at the path (it is "
                   "opened in read mode). An unknown db_type is an error."),
          factory_of<DBExistsOp>());
}

}  // namespace

void register_storage_operators() {
  static std::once_flag once;
  std::call_once(once, [] {
    OperatorRegistry& reg = OperatorRegistry::global();
    register_db_ops(reg);
    // They wait only for the disk (or nothing), never for a sibling: safe to run as fibers, like the built-ins.
    for (const char* type : {"Save", "Load", "DBExists", "GetAllBlobNames"}) reg.mark_fiber_safe(type);
  });
}

}  // namespace moka
