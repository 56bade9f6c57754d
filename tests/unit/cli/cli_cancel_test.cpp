// `moka run` stops within a second on SIGINT and SIGTERM whatever its operators are doing: a While that
// never ends, a DequeueBlobs on a queue nobody fills, two billion concurrent instances, in concurrent
// steps and TaskGroups, on threads and on fibers.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "unit/cli/cli_fixture.h"

namespace {

using namespace moka_cli_test;

// A net that prints (on stderr: the test's cue that the plan runs) before the step that never ends.
constexpr const char* kAnnounce =
    R"({"name": "announce", "op": [{"type": "ConstantFill", "output": ["x"]}, {"type": "Print", "input": ["x"]}]})";

// A plan: the announce net, then `steps` (JSON list of steps) after a step that runs it.
std::string plan_with(const std::string& nets, const std::string& steps) {
  return std::string(R"({"network": [)") + kAnnounce + (nets.empty() ? "" : ", " + nets) +
         R"(], "execution_step": [{"name": "announce", "network": ["announce"]}, )" + steps + "]}";
}

const std::string kTrue =
    R"({"type": "ConstantFill", "output": ["c"], "arg": [{"name": "value", "i": 1}, {"name": "dtype", "s": "BOOL"}]})";

// While whose condition stays true, its body empty.
const std::string kWhileNet = R"({"name": "loop", "op": [)" + kTrue +
                              R"(, {"type": "While", "input": ["c"], "arg": [
    {"name": "loop_net", "n": {"name": "body", "op": []}},
    {"name": "cond_net", "n": {"name": "cond", "op": [)" +
                              kTrue + R"(]}}]}]})";

// DequeueBlobs (timeout 0: forever) on a queue nobody fills; take2 is a second such net, for a
// concurrent sibling (one net instance runs on one thread at a time).
const std::string kQueueNets = R"({"name": "make_queue", "op": [{"type": "CreateBlobsQueue", "output": ["q"]}]},
  {"name": "take", "op": [{"type": "DequeueBlobs", "input": ["q"], "output": ["y"]}]},
  {"name": "take2", "op": [{"type": "DequeueBlobs", "input": ["q"], "output": ["y2"]}]})";

struct Case {
  std::string name;
  std::string plan;
  std::vector<std::string> flags;
};

std::vector<Case> cases() {
  const std::string while_step = R"({"name": "while", "network": ["loop"]})";
  const std::string queue_steps =
      R"({"name": "make", "network": ["make_queue"]}, {"name": "take", "network": ["take"]})";
  const std::string spin_net = R"({"name": "spin", "op": [{"type": "ConstantFill", "output": ["z"]}]})";
  // Two billion instances of a step that spins for ever: on threads and, where allowed, fibers.
  // Each instance in a workspace of its own, so that instances do not share the net's operators.
  const std::string instances =
      R"({"name": "many", "num_concurrent_instances": 2000000000, "substep": [
           {"name": "spin", "create_workspace": true, "network": ["spin"], "num_iter": 9223372036854775807}]})";
  const std::string concurrent_while =
      R"({"name": "both", "concurrent_substeps": true, "substep": [{"name": "w", "network": ["loop"]}, )"
      R"({"name": "spin", "network": ["spin"], "num_iter": 9223372036854775807}]})";
  const std::string concurrent_queue = R"({"name": "make", "network": ["make_queue"]},
      {"name": "both", "concurrent_substeps": true, "substep": [{"name": "t1", "network": ["take"]},
                                                              {"name": "t2", "network": ["take2"]}]})";
  std::vector<Case> out = {
      {"While", plan_with(kWhileNet, while_step), {}},
      {"WhileOnFibers", plan_with(kWhileNet, while_step), {"--fibers"}},
      {"Dequeue", plan_with(kQueueNets, queue_steps), {}},
      {"ConcurrentDequeue", plan_with(kQueueNets, concurrent_queue), {"--threads"}},
      {"ConcurrentDequeueOnFibers", plan_with(kQueueNets, concurrent_queue), {"--fibers"}},
      {"ConcurrentWhile", plan_with(kWhileNet + ", " + spin_net, concurrent_while), {"--threads"}},
      {"ConcurrentWhileOnFibers", plan_with(kWhileNet + ", " + spin_net, concurrent_while), {"--fibers"}},
      {"TwoBillionInstances", plan_with(spin_net, instances), {"--threads"}},
      {"TwoBillionInstancesOnFibers", plan_with(spin_net, instances), {"--fibers"}},
  };
  // The same in a TaskGroup document: two nodes, one blocked in a queue, one in a While.
  const std::string group = std::string(R"({"name": "g", "nodes": [
      {"node": "a", "plan": )") +
                            plan_with(kQueueNets, queue_steps) + R"(},
      {"node": "b", "plan": )" +
                            plan_with(kWhileNet, while_step) + "}]}";
  out.push_back({"TaskGroup", group, {}});
  out.push_back({"TaskGroupOnFibers", group, {"--fibers"}});
  return out;
}

// Failure messages name the case, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CliCancel : public Cli, public ::testing::WithParamInterface<std::tuple<Case, int>> {};

TEST_P(CliCancel, StopsWithin1sAndExits130) {
  const auto& [c, sig] = GetParam();
  std::vector<std::string> args = {"run", plan_file(c.plan)};
  args.insert(args.end(), c.flags.begin(), c.flags.end());
  RunOpts opts;
  opts.interrupt_on_stderr = true;
  opts.signal = sig;
  opts.signal_delay = std::chrono::milliseconds(200);  // the plan is inside its endless step by then
  const CliResult r = run(args, opts);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("moka: interrupted"), std::string::npos) << r.err;
  EXPECT_GE(r.after_signal.count(), 0);
  EXPECT_LT(r.after_signal.count(), 1000) << "took " << r.after_signal.count() << " ms after the signal";
}

INSTANTIATE_TEST_SUITE_P(Plans, CliCancel,
                         ::testing::Combine(::testing::ValuesIn(cases()), ::testing::Values(SIGINT, SIGTERM)),
                         [](const auto& p) {
                           return std::get<0>(p.param).name + (std::get<1>(p.param) == SIGINT ? "_SIGINT" : "_SIGTERM");
                         });

}  // namespace
