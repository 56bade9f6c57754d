// ExecutionStepDef and PlanDef: plain definitions of execution steps and plans (caffe2.proto; docs/plan-format.md §2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moka/defs/operator_def.h"

namespace moka {

/// @brief A step: either substeps or networks (never both), run per the plan executor's rules.
///
/// Unset optionals mean "not given" exactly like proto2's has_*(): num_iter unset and no
/// should_stop_blob runs once; num_iter = 0 never runs.
struct ExecutionStepDef {
  std::string name;
  std::vector<ExecutionStepDef> substep;
  std::vector<std::string> network;  ///< names of nets in the plan's `network` list
  std::optional<int64_t> num_iter;
  std::optional<std::string> criteria_network;  ///< deprecated in Caffe2; ignored
  std::optional<std::string> report_net;
  std::optional<int32_t> report_interval;  ///< seconds; required with report_net
  std::optional<int64_t> run_every_ms;     ///< makes this substep a periodic report substep
  std::optional<bool> concurrent_substeps;
  std::optional<std::string> should_stop_blob;
  std::optional<bool> only_once;
  std::optional<bool> create_workspace;
  std::optional<int32_t> num_concurrent_instances;
  /// moka's (decision 69): each execution adds 1 to stat "<stats_key>/runs" and its wall time to
  /// "<stats_key>/busy_ns" in the stat registry. The builder sets it on every Task's step.
  std::optional<std::string> stats_key;

  bool operator==(const ExecutionStepDef&) const = default;
};

/// @brief A plan: the nets it uses and the top-level steps, run one after another.
struct PlanDef {
  std::string name;
  std::vector<NetDef> network;
  std::vector<ExecutionStepDef> execution_step;

  bool operator==(const PlanDef&) const = default;
};

}  // namespace moka
