// Session: what every session (LocalSession now, MpiSession later) offers: run runnables, close (docs/sessions.md §8).
#pragma once

#include "moka/builder/plan.h"
#include "moka/builder/task_group.h"

namespace moka {

/// @brief Runs Tasks, TaskGroups, steps, plans and nets somewhere (Caffe2's `Session`).
///
/// A TaskGroup is compiled once per session (decision 2); anything else runs as a GLOBAL
/// TaskGroup holding it. After close(), run() throws InvalidInput ("Session is closed.").
/// Thread-safety: one run at a time per session.
class Session {
 public:
  virtual ~Session() = default;
  virtual void run(TaskGroup& group) = 0;
  virtual void run(const Task& task) = 0;
  virtual void run(const ExecutionStep& step) = 0;
  virtual void run(const Plan& plan) = 0;
  virtual void run(const Net& net) = 0;
  virtual void close() = 0;
  virtual bool is_closed() const = 0;
};

}  // namespace moka
