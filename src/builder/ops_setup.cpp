// The DSL's setup and report blocks: ops::task_init & co. (Caffe2's _SetupBuilder) and
// ops::task_reporter (_ReporterBuilder).
#include "moka/builder/ops_setup.h"

namespace moka::ops::detail {

std::shared_ptr<SetupBuilder> make_setup(const char* what, const char* key, SetupBuilder::Type type,
                                         const std::function<void()>& body, const std::string& name) {
  NetBuilder& parent = active_builder(what);
  auto setup = std::make_shared<SetupBuilder>(type, NetBuilder({.name = name}));
  parent.current_net().add_attribute(key, setup);
  setup->builder().build(body, BuildHooks{});
  return setup;
}

std::shared_ptr<ReportStep> make_reporter(int64_t interval_ms, const std::function<void()>& body,
                                          const std::string& name) {
  NetBuilder& parent = active_builder("task_reporter");
  Net net = parent.current_net();
  NetBuilder reporter({.name = name});
  std::shared_ptr<ReportStep> result;
  reporter.build(body, BuildHooks{.on_exit = [&] {
                   ExecutionStep step = to_execution_step(reporter);
                   if (interval_ms > 0) step.run_every_millis(interval_ms);
                   result = std::make_shared<ReportStep>(step);
                   net.add_attribute(kReportStep, result);
                 }});
  return result;
}

}  // namespace moka::ops::detail
