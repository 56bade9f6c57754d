// JSON codec for definitions, using caffe2.proto's field names. Loading validates everything and
// reports the JSON path of the first problem ("execution_step[0].substep[2]: unknown field \"num_iters\"").
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "moka/defs/job_def.h"
#include "moka/defs/plan_def.h"
#include "moka/defs/task_group_def.h"

namespace moka {

/// Parses a plan. Throws InvalidInput naming the JSON path of the first problem.
PlanDef plan_from_json(std::string_view text);
NetDef net_from_json(std::string_view text);
OperatorDef operator_from_json(std::string_view text);
ExecutionStepDef step_from_json(std::string_view text);

/// Parses a compiled TaskGroup: `{"name": ..., "nodes": [{"node": ..., "plan": {...}, "outputs": [...]}]}`.
TaskGroupDef task_group_from_json(std::string_view text);

/// Reads and parses a plan file; InvalidInput names the file on any problem. Files are read with
/// read_definition_file (moka/defs/definition_file.h): at most kMaxDefinitionFileBytes.
PlanDef load_plan_file(const std::string& path);

/// A plan or a compiled TaskGroup (told apart by the TaskGroup's "nodes" field).
using RunnableDef = std::variant<PlanDef, TaskGroupDef>;
RunnableDef runnable_from_json(std::string_view text);
/// Reads and parses a plan or TaskGroup file; InvalidInput names the file on any problem.
RunnableDef load_runnable_file(const std::string& path);

/// Parses a job: `{"epoch_group": {TaskGroup}, "init_group": ..., "download_group": ..., "exit_group": ...,
/// "stop_conditions": [{"node": ..., "blob": ...}], "nodes_to_checkpoint": [...]}` (docs/job-format.md).
JobDef job_from_json(std::string_view text);
/// Reads and parses a job file; InvalidInput names the file on any problem.
JobDef load_job_file(const std::string& path);

/// A plan, a compiled TaskGroup or a job, told apart by their top-level fields: a job has
/// "epoch_group" (or another field only jobs have: "init_group", "stop_conditions", ...), a
/// TaskGroup "nodes"; anything else is read as a plan. (runnable_from_json refuses a job document
/// with a message saying what it is.)
using DocumentDef = std::variant<PlanDef, TaskGroupDef, JobDef>;
DocumentDef document_from_json(std::string_view text);
/// Reads and parses a plan, TaskGroup or job file; InvalidInput names the file on any problem.
DocumentDef load_document_file(const std::string& path);

/// Serialises to JSON (indent < 0: one line). Round trip through *_from_json is lossless.
/// Throws InvalidInput for a plan holding a "Callable" operator (it only exists in this process).
std::string to_json(const PlanDef& plan, int indent = 2);
std::string to_json(const TaskGroupDef& group, int indent = 2);
std::string to_json(const JobDef& job, int indent = 2);
std::string to_json(const NetDef& net, int indent = 2);
std::string to_json(const OperatorDef& op, int indent = 2);
std::string to_json(const ExecutionStepDef& step, int indent = 2);
/// @brief One line of JSON for telling whether two processes built the same group (MpiSession): as
/// to_json, except that a "Callable" operator is written — its type, inputs, outputs and arguments other
/// than its process-local token — where to_json refuses it. Not readable back into a runnable group.
std::string comparison_json(const TaskGroupDef& group);

}  // namespace moka
