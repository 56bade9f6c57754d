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
      : OperatorBase(def, ws), records_(StatRegistry::global(), key_of(def, args())) {}

  bool run() override {
    if (input_size() > 1 && stopped()) return true;
    const Tensor& batch = input(0);
    records_.add(batch.ndim() == 0 ? 1 : batch.dim(0));
    return true;
  }

 private:
  bool stopped() const {
    const Tensor& stop = input(1);
    if (stop.dtype() != DType::Bool || stop.numel() != 1) [[unlikely]]
      throw TypeError(
          fmt::format("CountRecords: the stop flag (input 1, \"{}\") must be a bool tensor with one "
                      "element, got {}",
                      input_name(1), stop.describe()));
    return stop.data<bool>()[0];
  }

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
