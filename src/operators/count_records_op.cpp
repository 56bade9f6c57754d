// CountRecords: adds the number of records in a batch to a stat of the registry (docs/operators.md §3).
#include <fmt/format.h>

#include <string>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "moka/operators/stats.h"
#include "operators/builtin.h"

namespace moka {

namespace {

std::string key_of(const OperatorDef& def, const Arguments& args) {
  std::string key = args.get_string("key", "");
  if (key.empty())
    throw InvalidInput(
        fmt::format("CountRecords: argument \"key\" (the stat to add to) must be a non-empty string "
                    "(input \"{}\")",
                    def.input.empty() ? std::string() : def.input[0]));
  return key;
}

// The batch's records are the rows of input 0 (its dim 0; a 0-d tensor is one record). With input 1, a batch
// whose stop flag is true is not counted: a reader that ran out left its outputs as they were.
class CountRecordsOp final : public OperatorBase {
 public:
  CountRecordsOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        batch_(&input_blob(0)),
        stop_(input_size() > 1 ? &input_blob(1) : nullptr),
        records_(StatRegistry::global(), key_of(def, args())) {}

  // Once per batch in every pipe: the checks are written out so that a run is a few loads and one add.
  bool run() override {
    if (stop_ != nullptr) {
      const Tensor* stop = stop_->tensor_or_null();
      if (stop == nullptr || stop->dtype() != DType::Bool || stop->numel() != 1) [[unlikely]]
        throw_bad_stop_flag();
      if (*reinterpret_cast<const bool*>(stop->raw_data())) return true;
    }
    const Tensor* batch = batch_->tensor_or_null();
    if (batch == nullptr || !batch->defined()) [[unlikely]]
      throw_input_not_tensor(0);
    const std::vector<int64_t>& shape = batch->shape();
    records_.add(shape.empty() ? 1 : shape.front());
    return true;
  }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void throw_bad_stop_flag() const {
    const Tensor* stop = stop_->tensor_or_null();
    const std::string got = stop == nullptr    ? fmt::format("{} (not a tensor)", stop_->type_name())
                            : !stop->defined() ? std::string("a tensor that was never filled")
                                               : stop->describe();
    throw TypeError(
        fmt::format("CountRecords: the stop flag (input 1, \"{}\") must be a bool tensor with one element, got {}",
                    input_name(1), got));
  }

  const Blob* batch_;
  const Blob* stop_;   // null: every run counts
  StatShare records_;  // this operator's part of the key: runs of one operator never overlap
};

}  // namespace

namespace detail {

void register_count_records_op(OperatorRegistry& reg) {
  reg.add(OpSchema("CountRecords")
              .inputs(1, 2)
              .outputs(0)
              .required_arg("key", ArgType::String, "stat key the records are added to")
              .doc("moka: adds the number of records in input 0 (its dim 0; a 0-d tensor is one) to the stat "
                   "<key>. With input 1, a bool with one element, nothing is counted while it is true. The pipes "
                   "count the records they read with it under <pipe timer key>/records."),
          factory_of<CountRecordsOp>());
}

}  // namespace detail
}  // namespace moka
