// check_task_group / check_job: validate a compiled TaskGroup or a job before anything runs, as
// check_plan does for one plan (what `moka check` reports, and what a job run checks first).
#pragma once

#include "moka/defs/job_def.h"
#include "moka/defs/task_group_def.h"

namespace moka {

/// @brief Checks every node of a compiled TaskGroup: a non-empty name, unique in the group, and
/// a plan that passes check_plan.
///
/// Throws InvalidInput with `node "n"` in its context (the plan's own location inside it), e.g.
/// `node "trainer" > network[0] "n" > operator #0 (Nope): unknown operator type "Nope"`.
/// Thread-safety: thread-safe (it only reads `group` and the operator registry).
void check_task_group(const TaskGroupDef& group);

/// @brief Checks a job (docs/job-format.md) without running it.
///
/// - every group (init_group, epoch_group, download_group, exit_group) passes check_task_group;
///   the error's context names the group (`epoch_group > node "t" > ...`);
/// - the job has at least one stop condition (without one its epoch loop would never end), and
///   each names a blob and a node of some group of the job;
/// - each of nodes_to_checkpoint is a node of some group, listed once.
/// Throws InvalidInput naming the field and the node (`stop_conditions[1]: node "ghost" is in no
/// group of the job (its nodes: "trainer", "reader")`). What only a run can tell (whether the stop
/// blob exists after an epoch, the checkpoint directory) is not checked. run_job's callers and
/// `moka check JOB.json` call it before anything runs.
/// Thread-safety: thread-safe.
void check_job(const JobDef& job);

}  // namespace moka
