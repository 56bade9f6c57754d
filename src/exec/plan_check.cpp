// check_plan: validates a plan's structure and every operator (nested nets' included) against its schema before
// anything runs.
#include <fmt/format.h>

#include <set>

#include "moka/core/error.h"
#include "moka/exec/control_ops.h"
#include "moka/exec/plan_executor.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/operator.h"
#include "moka/operators/registry.h"

namespace moka {

namespace {

constexpr int kMaxDepth = 64;

[[noreturn]] void step_error(const std::string& path, const std::string& what) {
  throw InvalidInput(fmt::format("{}: {}", path, what));
}

void check_step(const ExecutionStepDef& s, const std::set<std::string>& nets, const std::string& path, int depth) {
  if (depth > kMaxDepth) step_error(path, fmt::format("steps are nested more than {} levels deep", kMaxDepth));
  if (!s.substep.empty() && !s.network.empty())
    step_error(path, "An ExecutionStep should either have substep or networks but not both.");
  for (const auto& n : s.network)
    if (!nets.count(n)) step_error(path, fmt::format("ExecutionStep {} uses undefined net {}", s.name, n));
  if (s.should_stop_blob && s.num_iter) step_error(path, "Must not specify num_iter if should_stop_blob is set");
  if (s.only_once && !s.should_stop_blob) step_error(path, "only_once is not supported without should_stop_blob");
  if (s.num_iter && *s.num_iter < 0) step_error(path, fmt::format("num_iter must be >= 0, got {}", *s.num_iter));
  if (s.should_stop_blob && s.should_stop_blob->empty()) step_error(path, "should_stop_blob is empty");
  if (s.stats_key && s.stats_key->empty()) step_error(path, "stats_key is empty");
  if (s.num_concurrent_instances && *s.num_concurrent_instances < 1)
    step_error(path, fmt::format("num_concurrent_instances must be >= 1, got {}", *s.num_concurrent_instances));
  if (s.run_every_ms && *s.run_every_ms <= 0)
    step_error(path, fmt::format("run_every_ms must be > 0, got {}", *s.run_every_ms));
  if (s.report_net) {
    if (!s.report_interval) step_error(path, "A report_interval must be provided if report_net is set.");
    if (*s.report_interval <= 0)
      step_error(path, fmt::format("report_interval must be > 0, got {}", *s.report_interval));
    if (!nets.count(*s.report_net))
      step_error(path, fmt::format("ExecutionStep {} uses undefined report net {}", s.name, *s.report_net));
  }
  for (std::size_t i = 0; i < s.substep.size(); ++i)
    check_step(s.substep[i], nets, fmt::format("{}.substep[{}] \"{}\"", path, i, s.substep[i].name), depth + 1);
}

void check_ops(const NetDef& net, int depth);

// The nets an operator holds in its arguments (If's then_net, While's loop_net, ...): checked as
// the plan's own nets are, with the operator and the net in the context, as a run would name them.
void check_nested_nets(const OperatorDef& op, int depth) {
  for (const Argument& arg : op.arg) {
    auto check = [&](const NetDef& net) {
      if (depth >= kMaxDepth)
        throw InvalidInput(
            fmt::format("argument \"{}\": nets are nested in arguments more than {} levels deep", arg.name, kMaxDepth));
      if (net.name.empty()) throw InvalidInput(fmt::format("argument \"{}\": a net needs a name", arg.name));
      try {
        check_ops(net, depth + 1);
      } catch (Error& e) {
        e.add_context(fmt::format("net \"{}\"", net.name));
        throw;
      }
    };
    if (arg.n) check(*arg.n);
    if (arg.nets)
      for (const NetDef& net : *arg.nets) check(net);
  }
}

// Every operator of net against its schema, nested nets included.
void check_ops(const NetDef& net, int depth) {
  const auto& reg = OperatorRegistry::global();
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    try {
      reg.validate(net.op[i]);
      check_nested_nets(net.op[i], depth);
    } catch (Error& e) {
      e.add_context(OperatorBase::describe(net.op[i], static_cast<int>(i)));
      throw;
    }
  }
}

}  // namespace

void check_plan(const PlanDef& plan) {
  register_all_operators();
  std::set<std::string> names;
  for (std::size_t n = 0; n < plan.network.size(); ++n) {
    const NetDef& net = plan.network[n];
    if (net.name.empty()) throw InvalidInput(fmt::format("network[{}]: a net needs a name", n));
    if (!names.insert(net.name).second)
      throw InvalidInput(fmt::format(
          "Your plan contains networks of the same name \"{}\", which should not happen. Check your plan to see "
          "if you made a programming error in creating the plan.",
          net.name));
    try {
      check_ops(net, 0);
    } catch (Error& e) {
      e.add_context(fmt::format("network[{}] \"{}\"", n, net.name));
      throw;
    }
  }
  for (std::size_t i = 0; i < plan.execution_step.size(); ++i)
    check_step(plan.execution_step[i], names, fmt::format("execution_step[{}] \"{}\"", i, plan.execution_step[i].name),
               0);
}

}  // namespace moka
