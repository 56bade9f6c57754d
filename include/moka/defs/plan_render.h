// A plan, TaskGroup or job definition drawn for a person: an indented text outline (`moka plan show`) and a
// Graphviz DOT graph of its steps, substeps and nets (`moka plan dot`; docs/cli.md, `moka plan`).
#pragma once

#include <string>

#include "moka/defs/job_def.h"
#include "moka/defs/plan_def.h"
#include "moka/defs/task_group_def.h"

namespace moka {

/// @brief The outline: one line per group, node, step (with its iteration, stop, concurrency and
/// workspace settings), net (with its operator count) and, with `operators`, operator
/// (`#i Type(inputs) -> (outputs)`), indented two spaces per level. Steps that name a net the plan
/// does not hold say so instead of failing (check_plan names such errors).
std::string plan_outline(const PlanDef& plan, bool operators = true);
std::string plan_outline(const TaskGroupDef& group, bool operators = true);
std::string plan_outline(const JobDef& job, bool operators = true);

/// @brief A DOT digraph: a cluster per job group and per node, a box per step (doubled when its
/// substeps run concurrently), an ellipse per net labelled with its operator count, and edges from
/// each step to its substeps and nets, numbered in run order. Names are quoted, so any name is safe.
std::string plan_dot(const PlanDef& plan);
std::string plan_dot(const TaskGroupDef& group);
std::string plan_dot(const JobDef& job);

}  // namespace moka
