// DSL setup and report blocks (Caffe2's `ops.task_init`, `task_exit`, `task_instance_init`,
// `task_instance_exit`, `local_init`, `local_exit`, `task_reporter`): bodies that become net
// attributes for Task/TaskGroup compilation instead of children of the enclosing builder.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"

namespace moka::ops {

/// Optional arguments of the setup blocks.
struct SetupOptions {
  std::string name{};  ///< relative name of the block's builder (and step)
};

namespace detail {
std::shared_ptr<SetupBuilder> make_setup(const char* what, const char* key, SetupBuilder::Type type,
                                         const std::function<void()>& body, const std::string& name);
std::shared_ptr<ReportStep> make_reporter(int64_t interval_ms, const std::function<void()>& body,
                                          const std::string& name);
}  // namespace detail

// Each block: creates a SetupBuilder, attaches it to the active builder's current net (created
// if needed) under its key, and runs body inside it. Its ops run only when a Task or TaskGroup
// collects the attribute (docs/tasks.md §3.4): task_* once per Task (before / after all instances),
// task_instance_* once per instance in the instance's workspace, local_* once per node per
// TaskGroup run.
//
//   moka::BlobRef one;
//   moka::ops::task_init([&] { one = moka::ops::Const(1); });
//   moka::BlobRef two = moka::ops::Add({one, one});
//   moka::ops::task_exit([&] { moka::ops::Print(two); });

/// Attribute kTaskSetup, Init.
template <std::invocable F>
std::shared_ptr<SetupBuilder> task_init(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "task_init", kTaskSetup, SetupBuilder::Type::Init, [&body] { body(); }, options.name);
}
/// Attribute kTaskSetup, Exit.
template <std::invocable F>
std::shared_ptr<SetupBuilder> task_exit(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "task_exit", kTaskSetup, SetupBuilder::Type::Exit, [&body] { body(); }, options.name);
}
/// Attribute kTaskInstanceSetup, Init.
template <std::invocable F>
std::shared_ptr<SetupBuilder> task_instance_init(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "task_instance_init", kTaskInstanceSetup, SetupBuilder::Type::Init, [&body] { body(); }, options.name);
}
/// Attribute kTaskInstanceSetup, Exit.
template <std::invocable F>
std::shared_ptr<SetupBuilder> task_instance_exit(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "task_instance_exit", kTaskInstanceSetup, SetupBuilder::Type::Exit, [&body] { body(); }, options.name);
}
/// Attribute kLocalSetup, Init.
template <std::invocable F>
std::shared_ptr<SetupBuilder> local_init(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "local_init", kLocalSetup, SetupBuilder::Type::Init, [&body] { body(); }, options.name);
}
/// Attribute kLocalSetup, Exit.
template <std::invocable F>
std::shared_ptr<SetupBuilder> local_exit(F&& body, const SetupOptions& options = {}) {
  return detail::make_setup(
      "local_exit", kLocalSetup, SetupBuilder::Type::Exit, [&body] { body(); }, options.name);
}

/// Optional arguments of ops::task_reporter.
struct ReporterOptions {
  std::string name{};
};

/// @brief A report step of the task (Caffe2's `ops.task_reporter(interval_ms)`): body becomes a
/// step with run_every_ms = interval_ms, attached to the active builder's current net under
/// kReportStep. The Task runs it periodically while its body runs, and once at the end.
/// interval_ms <= 0 leaves run_every_ms unset (the Task then uses 1000 ms, as Caffe2 does).
template <std::invocable F>
std::shared_ptr<ReportStep> task_reporter(int64_t interval_ms, F&& body, const ReporterOptions& options = {}) {
  return detail::make_reporter(
      interval_ms, [&body] { body(); }, options.name);
}
/// task_reporter every 1000 ms.
template <std::invocable F>
std::shared_ptr<ReportStep> task_reporter(F&& body, const ReporterOptions& options = {}) {
  return detail::make_reporter(
      1000, [&body] { body(); }, options.name);
}

}  // namespace moka::ops
