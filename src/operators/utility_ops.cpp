// Utility operators: Copy, Print, CreateMutex, Iter, AtomicIter and StatRegistryExport.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>

#include "moka/core/error.h"
#include "moka/operators/mutex.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"
#include "operators/builtin.h"

namespace moka {

namespace {

class CopyOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const Tensor& in = input(0);
    Tensor& out = output(0);
    if (&out != &in) out.copy_from(in);
    return true;
  }
};

class PrintOp final : public OperatorBase {
 public:
  PrintOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    const int64_t to_file = args().get_int("to_file", 0);
    const int64_t limit = args().get_int("limit", 0);
    every_n_ = args().get_int("every_n", 1);
    if (to_file != 0 && to_file != 1)
      throw InvalidInput(fmt::format("Print: argument \"to_file\" = {} must be 0 or 1", to_file));
    if (limit < 0) throw InvalidInput(fmt::format("Print: argument \"limit\" = {} must be >= 0", limit));
    if (every_n_ < 1) throw InvalidInput(fmt::format("Print: argument \"every_n\" = {} must be >= 1", every_n_));
    limit_ = limit == 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(limit);
    if (to_file == 1) {
      // Caffe2 writes to <root folder>/<blob name>.log, with '/' in the blob name replaced by '#'.
      std::string file = input_name(0);
      std::replace(file.begin(), file.end(), '/', '#');
      path_ = ws->root_folder() + "/" + file + ".log";
      file_ = std::make_unique<std::ofstream>(path_, std::ios::out | std::ios::trunc);
      if (!*file_) throw RuntimeError(fmt::format("Print: cannot open \"{}\" for writing", path_));
    }
  }

  bool run() override {
    if (++occurrences_ > every_n_) occurrences_ = 1;
    if (occurrences_ != 1) return true;
    const Blob& b = input_blob(0);
    const Tensor* t = b.tensor_or_null();
    const std::string text =
        fmt::format("{}: {}\n", input_name(0), t != nullptr ? t->to_string(limit_) : std::string(b.type_name()));
    if (file_) {
      *file_ << text;
      file_->flush();
      if (!*file_) throw RuntimeError(fmt::format("Print: writing \"{}\" failed", path_));
    } else {
      std::fputs(text.c_str(), stderr);  // one call, so lines of concurrent printers do not interleave
    }
    return true;
  }

 private:
  int64_t every_n_ = 1;
  int64_t occurrences_ = 0;
  std::size_t limit_ = 0;
  std::string path_;
  std::unique_ptr<std::ofstream> file_;
};

class CreateMutexOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    // Keep an existing mutex: replacing one that another thread holds would destroy a locked mutex.
    Blob& b = output_blob(0);
    if (!b.is_type<BlobMutex>()) b.emplace<BlobMutex>();
    return true;
  }
};

// Caffe2's IncrementIter: the iteration counter is an int64 tensor with one element.
void increment_iter(const OperatorBase& op, Tensor& t, const std::string& blob) {
  if (t.dtype() != DType::Int64 || t.numel() != 1)
    throw TypeError(fmt::format("{}: iteration blob \"{}\" must be an int64 tensor with one element, got {}", op.type(),
                                blob, t.describe()));
  int64_t* p = t.mutable_data<int64_t>();
  if (*p < 0)
    throw RuntimeError(fmt::format("{}: Previous iteration number is negative ({} in \"{}\").", op.type(), *p, blob));
  if (*p == std::numeric_limits<int64_t>::max())
    throw RuntimeError(fmt::format("{}: Overflow will happen! (\"{}\" is at the int64 maximum)", op.type(), blob));
  ++*p;
}

class IterOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    Blob& b = output_blob(0);
    Tensor* t = b.tensor_or_null();
    if (input_size() == 0 && (t == nullptr || !t->defined())) {
      // First run: start counting at 0.
      t = &b.get_mutable<Tensor>();
      t->resize(DType::Int64, {1});
      t->mutable_data<int64_t>()[0] = 0;
    } else if (input_size() == 1) {
      (void)input(0);  // TypeError naming the blob when it is not a filled tensor
    }
    increment_iter(*this, output(0), output_name(0));
    return true;
  }
};

class AtomicIterOp final : public OperatorBase {
 public:
  AtomicIterOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        num_iter_(StatRegistry::global().stat(fmt::format("atomic_iter/stats/{}/num_iter", def.input.at(1)))) {}
  bool run() override {
    BlobMutex& mu = input_object<BlobMutex>(0);
    std::lock_guard lk(mu);
    (void)input(1);                                   // TypeError naming the blob when it is not a filled tensor
    increment_iter(*this, output(0), input_name(1));  // output 0 is input 1 (enforced in place)
    num_iter_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

 private:
  std::atomic<int64_t>& num_iter_;
};

class StatRegistryExportOp final : public OperatorBase {
 public:
  StatRegistryExportOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), reset_(args().get_bool("reset", true)) {}
  bool run() override {
    const auto stats = StatRegistry::global().export_all(reset_);
    const int64_t n = static_cast<int64_t>(stats.size());
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    Tensor& keys = output(0);
    keys.resize(DType::String, {n});
    std::string* pk = keys.mutable_data<std::string>();
    Tensor& values = output(1);
    values.resize(DType::Int64, {n});
    int64_t* pv = values.mutable_data<int64_t>();
    Tensor& stamps = output(2);
    stamps.resize(DType::Int64, {n});
    int64_t* pt = stamps.mutable_data<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      pk[k] = stats[static_cast<std::size_t>(k)].first;
      pv[k] = stats[static_cast<std::size_t>(k)].second;
      pt[k] = now;
    }
    return true;
  }

 private:
  bool reset_;
};

}  // namespace

namespace detail {

void register_utility_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("Copy").inputs(1).outputs(1).allow_inplace({{0, 0}}).doc(
              "Copies the tensor in input 0 (any dtype, strings included) into output 0, reusing the output's "
              "storage. In place it does nothing."),
          factory_of<CopyOp>());
  reg.add(OpSchema("Print")
              .inputs(1)
              .outputs(0)
              .arg("to_file", ArgType::Int,
                   "0: write to stderr; 1: write to <workspace root folder>/<blob name>.log ('/' replaced by '#'), "
                   "truncated when the operator is constructed",
                   "0")
              .arg("limit", ArgType::Int, "print at most this many elements; 0 = all", "0")
              .arg("every_n", ArgType::Int, "print on the 1st run and then every n-th run", "1")
              .doc("Prints `<blob name>: <tensor>` (dtype, shape and values) for input 0, or the name of the type "
                   "the blob holds when it is not a tensor."),
          factory_of<PrintOp>());
  reg.add(OpSchema("CreateMutex")
              .inputs(0)
              .outputs(1)
              .doc("Puts a mutex (moka::BlobMutex) in the output blob, for AtomicIter. A blob that already holds a "
                   "mutex keeps it."),
          factory_of<CreateMutexOp>());
  reg.add(OpSchema("Iter").inputs(0, 1).outputs(1).enforce_inplace({{0, 0}}).doc(
              "Increments the iteration counter in output 0, an int64 tensor with one element. Without an input, "
              "a blob that does not hold a filled tensor yet is first set to int64 [1] = 0. With an input it "
              "must be the output (in place). Fails on a negative count and with \"Overflow will happen!\" at "
              "the int64 maximum."),
          factory_of<IterOp>());
  reg.add(OpSchema("AtomicIter")
              .inputs(2)
              .outputs(1)
              .enforce_inplace({{1, 0}})
              .doc("Like Iter, holding the mutex in input 0 (from CreateMutex) while incrementing the counter in "
                   "input 1, which must also be output 0. Adds 1 to the stat "
                   "atomic_iter/stats/<counter blob name>/num_iter in the stat registry."),
          factory_of<AtomicIterOp>());
  reg.add(OpSchema("StatRegistryExport")
              .inputs(0)
              .outputs(3)
              .arg("reset", ArgType::Bool, "1: set every exported stat to 0 after reading it", "1")
              .doc("Exports the process-wide stat registry, sorted by key: output 0 the keys (string [n]), output 1 "
                   "the values (int64 [n]), output 2 the export time in ns since the Unix epoch (int64 [n])."),
          factory_of<StatRegistryExportOp>());
}

}  // namespace detail
}  // namespace moka
