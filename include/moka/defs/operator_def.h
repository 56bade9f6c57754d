// OperatorDef and NetDef: plain definitions of operators and nets, with caffe2.proto's field names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moka/defs/argument.h"

namespace moka {

/// @brief One operator: its registered type, input and output blob names and arguments.
struct OperatorDef {
  std::string name;  ///< optional label, used in messages
  std::string type;  ///< registered operator type ("Add", "ConstantFill", ...)
  std::vector<std::string> input;
  std::vector<std::string> output;
  std::vector<Argument> arg;
  std::string engine;
  std::vector<std::string> control_input;
  std::string debug_info;

  bool operator==(const OperatorDef&) const = default;
};

/// @brief A net: operators run in order over the blobs of one workspace.
///
/// When external_input is non-empty the net is checked at instantiation: every operator input
/// must be an external input or an earlier operator's output, and every external_output must be
/// produced (docs/plan-execution.md §1.3).
struct NetDef {
  std::string name;
  std::vector<OperatorDef> op;
  std::optional<std::string> type;  ///< "simple" (default); "dag"/"async_scheduling" run as simple
  std::optional<int32_t> num_workers;
  std::vector<Argument> arg;
  std::vector<std::string> external_input;
  std::vector<std::string> external_output;

  bool operator==(const NetDef&) const = default;
};

/// Builds an OperatorDef; handy in tests and examples.
OperatorDef make_op(std::string type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<Argument> args = {}, std::string name = {});

}  // namespace moka
