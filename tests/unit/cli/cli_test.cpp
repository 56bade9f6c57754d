// End-to-end tests of the moka command-line tool: runs the built binary as a subprocess (stdout and
// stderr captured separately, killed after a timeout) and checks its output, error lines and exit codes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/one_cpu.h"
#include "unit/cli/cli_fixture.h"

namespace {

using namespace moka_cli_test;

const std::string kFills = one_net_plan(R"([
  {"type": "ConstantFill", "output": ["y"],
   "arg": [{"name": "value", "i": 5}, {"name": "dtype", "s": "INT64"}]},
  {"type": "GivenTensorFill", "output": ["v"], "arg": [{"name": "values", "floats": [0.1, -2.5, 3, 1e-7]}]},
  {"type": "GivenTensorDoubleFill", "output": ["d"], "arg": [{"name": "values", "floats": [0.1, 1e300]}]},
  {"type": "GivenTensorStringFill", "output": ["s"],
   "arg": [{"name": "values", "strings": ["hello", "", "line\nbreak", "\u00e9\"q\""]}, {"name": "shape", "ints": [2, 2]}]},
  {"type": "GivenTensorBoolFill", "output": ["b"], "arg": [{"name": "values", "ints": [1, 0, 1]}]},
  {"type": "GivenTensorFill", "output": ["nf"], "arg": [{"name": "values", "floats": ["NaN", "Infinity", "-Infinity", -0.0]}]},
  {"type": "GivenTensorIntFill", "output": ["m"], "arg": [{"name": "values", "ints": [-2147483648, 7]}, {"name": "shape", "ints": [2, 1]}]},
  {"type": "GivenTensorInt64Fill", "output": ["big"], "arg": [{"name": "values", "ints": [-9223372036854775808, 9223372036854775807]}]},
  {"type": "CreateCounter", "output": ["counter"]}
])");

// ---------------------------------------------------------------------------------------------
// moka run: fetched blobs

TEST_F(Cli, FetchInt64Scalar) { EXPECT_EQ(run_ok(kFills, "y"), (Json{{"y", tensor("int64", Json::array(), {5})}})); }

TEST_F(Cli, FetchFloatVector) {
  // float32 values print in their shortest form, which reads back as the same float32.
  EXPECT_EQ(run_ok(kFills, "v"), (Json{{"v", tensor("float32", {4}, {0.1, -2.5, 3.0, 1e-7})}}));
  EXPECT_EQ(run_ok(kFills, "d"), (Json{{"d", tensor("float64", {2}, {0.1, 1e300})}}));
}

TEST_F(Cli, FetchStringTensor) {
  EXPECT_EQ(run_ok(kFills, "s"), (Json{{"s", tensor("string", {2, 2}, {"hello", "", "line\nbreak", "\u00e9\"q\""})}}));
}

TEST_F(Cli, FetchBoolTensor) {
  EXPECT_EQ(run_ok(kFills, "b"), (Json{{"b", tensor("bool", {3}, {true, false, true})}}));
}

TEST_F(Cli, FetchIntegerExtremes) {
  const Json j = run_ok(kFills, "m,big");
  EXPECT_EQ(j["m"], tensor("int32", {2, 1}, {-2147483648LL, 7}));
  EXPECT_EQ(j["big"]["dtype"], "int64");
  EXPECT_EQ(j["big"]["data"][0].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(j["big"]["data"][1].get<int64_t>(), std::numeric_limits<int64_t>::max());
}

TEST_F(Cli, NonFiniteFloatsPrintAsStrings) {
  const CliResult r = run({"run", plan_file(kFills), "--fetch", "nf"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"nf":{"dtype":"float32","shape":[4],"data":["NaN","Infinity","-Infinity",-0.0]}})"
                   "\n");
}

TEST_F(Cli, NonTensorBlobPrintsItsType) {
  EXPECT_EQ(run_ok(kFills, "counter"), (Json{{"counter", {{"type", "Counter"}}}}));
}

TEST_F(Cli, OutputKeepsFetchOrder) {
  const CliResult r = run({"run", plan_file(kFills), "--fetch", "y,b", "--fetch", "counter"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            R"({"y":{"dtype":"int64","shape":[],"data":[5]},"b":{"dtype":"bool","shape":[3],"data":[true,false,true]},)"
            R"("counter":{"type":"Counter"}})"
            "\n");
}

TEST_F(Cli, NoFetchPrintsEmptyObject) {
  const CliResult r = run({"run", plan_file(kFills)});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{}\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, ExceptionTimeoutAccepted) {
  const CliResult r = run({"run", plan_file(kFills), "--exception-timeout", "0.5", "--fetch", "y"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_stdout(r)["y"]["data"], Json::array({5}));
}

TEST_F(Cli, FibersRunConcurrentSubstepsOnOneThread) {
  // A writer and a reader of a capacity-1 queue as concurrent substeps: with --fibers they take turns.
  const std::string plan = R"({"network": [
    {"name": "init", "op": [{"type": "CreateBlobsQueue", "output": ["q"],
       "arg": [{"name": "capacity", "i": 1}, {"name": "num_blobs", "i": 1}]}]},
    {"name": "write", "op": [{"type": "ConstantFill", "output": ["x"], "arg": [{"name": "shape", "ints": []},
       {"name": "dtype", "i": 10}, {"name": "value", "i": 7}]},
      {"type": "EnqueueBlobs", "input": ["q", "x"], "output": ["x"]}]},
    {"name": "read", "op": [{"type": "DequeueBlobs", "input": ["q"], "output": ["y"]}]}],
   "execution_step": [{"name": "init", "network": ["init"]},
     {"name": "both", "concurrent_substeps": true, "substep": [
       {"name": "writer", "num_iter": 50, "network": ["write"]},
       {"name": "reader", "num_iter": 50, "network": ["read"]}]}]})";
  const CliResult r = run({"run", plan_file(plan), "--fibers", "--fetch", "y"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_stdout(r)["y"]["data"], Json::array({7}));
}

TEST_F(Cli, InterruptExits130) {
  // Print in the first net signals (on stderr) that the plan is running; then SIGINT stops the loop.
  const std::string plan = R"({"network": [
    {"name": "init", "op": [{"type": "ConstantFill", "output": ["x"]}, {"type": "Print", "input": ["x"]}]},
    {"name": "spin", "op": [{"type": "Iter", "output": ["it"]}]}],
    "execution_step": [{"name": "init", "network": ["init"]},
                       {"name": "forever", "network": ["spin"], "num_iter": 9223372036854775807}]})";
  RunOpts opts;
  opts.interrupt_on_stderr = true;
  const CliResult r = run({"run", plan_file(plan), "--fetch", "it"}, opts);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("moka: interrupted"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// ---------------------------------------------------------------------------------------------
// The example plans under examples/plans, each with its exact results.

struct Example {
  std::string fetch;
  Json expected;
};

const std::map<std::string, Example>& examples() {
  static const std::map<std::string, Example> m = {
      {"demo.json",
       {"total,count,squares,power,done", Json{{"total", tensor("int64", Json::array(), {149})},
                                               {"count", tensor("int64", Json::array(), {24})},
                                               {"squares", tensor("int64", Json::array(), {30})},
                                               {"power", tensor("int64", Json::array(), {64})},
                                               {"done", tensor("bool", Json::array(), {true})}}}},
      {"counting_loop.json",
       {"i,factorial,acc,iterations,positive,acc_int", Json{{"i", tensor("int64", Json::array(), {10})},
                                                            {"factorial", tensor("int64", Json::array(), {3628800})},
                                                            {"acc", tensor("float64", {3}, {2.5, 3.5, 1.5})},
                                                            {"iterations", tensor("int64", {1}, {10})},
                                                            {"positive", tensor("bool", Json::array(), {true})},
                                                            {"acc_int", tensor("int32", {3}, {2, 3, 1})}}}},
      {"concurrent.json",
       {"ping_count,pong_count,total,shared_iter", Json{{"ping_count", tensor("int64", Json::array(), {15})},
                                                        {"pong_count", tensor("int64", Json::array(), {21})},
                                                        {"total", tensor("int64", Json::array(), {36})},
                                                        {"shared_iter", tensor("int64", {1}, {36})}}}},
      {"should_stop.json",
       {"ticks,done,once,remaining", Json{{"ticks", tensor("int64", Json::array(), {6})},
                                          {"done", tensor("bool", Json::array(), {true})},
                                          {"once", tensor("int64", Json::array(), {1})},
                                          {"remaining", tensor("int64", Json::array(), {-1})}}}},
  };
  return m;
}

TEST_F(Cli, EveryExamplePlanHasExpectedResults) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(source_path("examples/plans"))) {
    if (entry.path().extension() != ".json") continue;
    ++seen;
    const std::string name = entry.path().filename().string();
    const auto it = examples().find(name);
    ASSERT_NE(it, examples().end()) << "examples/plans/" << name << " has no expected results in this test";
    SCOPED_TRACE(name);
    const CliResult checked = run({"check", entry.path().string()});
    EXPECT_EQ(checked.code, 0) << checked.err;
    const CliResult r = run({"run", entry.path().string(), "--fetch", it->second.fetch});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(parse_stdout(r), it->second.expected);
  }
  EXPECT_EQ(seen, static_cast<int>(examples().size())) << "an expected example plan is missing";
}

TEST_F(Cli, DemoIsDeterministicAndReportsProgress) {
  // The report substep prints the counter on stderr; its final run comes after every sibling.
  for (int i = 0; i < 5; ++i) {
    const CliResult r = run({"run", source_path("examples/plans/demo.json"), "--fetch", "total,count"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              R"({"total":{"dtype":"int64","shape":[],"data":[149]},"count":{"dtype":"int64","shape":[],"data":[24]}})"
              "\n");
    const std::size_t last = r.err.rfind("progress");
    ASSERT_NE(last, std::string::npos) << r.err;
    EXPECT_NE(r.err.find("24", last), std::string::npos) << r.err;
  }
}

TEST_F(Cli, ConcurrentChildWorkspaceBlobsAreGone) {
  // ping_previous lived in the substeps' child workspaces, which are destroyed after each run.
  const CliResult r = run({"run", source_path("examples/plans/concurrent.json"), "--fetch", "total,ping_previous"});
  expect_error(r, 1, {"--fetch", "\"ping_previous\"", "does not exist"});
}

// ---------------------------------------------------------------------------------------------
// Exit 2: invalid input, one line on stderr naming the problem

TEST_F(Cli, MissingFile) {
  const std::string path = (dir_ / "no_such_plan.json").string();
  expect_error(run({"run", path}), 2, {"no_such_plan.json", "cannot open"});
}

TEST_F(Cli, InvalidJson) {
  expect_error(run({"run", plan_file("{\n  \"network\": [,]\n}")}), 2, {"line 2", "column", "invalid JSON"});
}

TEST_F(Cli, UnknownField) {
  const std::string plan = R"({"execution_step": [{"name": "s", "num_iters": 3}]})";
  expect_error(run({"run", plan_file(plan)}), 2, {"execution_step[0]", "\"num_iters\""});
}

TEST_F(Cli, UnknownOperatorType) {
  expect_error(run({"run", plan_file(one_net_plan(R"([{"type": "NoSuchOp", "output": ["x"]}])"))}), 2,
               {"NoSuchOp", "unknown operator type"});
}

TEST_F(Cli, BadArgumentType) {
  const std::string plan =
      one_net_plan(R"([{"type": "ConstantFill", "output": ["x"], "arg": [{"name": "value", "s": "five"}]}])");
  expect_error(run({"run", plan_file(plan)}), 2, {"ConstantFill", "\"value\""});
}

TEST_F(Cli, WrongArity) {
  const std::string plan = one_net_plan(R"([{"type": "Add", "input": ["a"], "output": ["x"]}])");
  expect_error(run({"run", plan_file(plan)}), 2, {"Add", "2 input"});
}

TEST_F(Cli, DuplicateNet) {
  const std::string plan = R"({"network": [{"name": "n"}, {"name": "n"}], "execution_step": [{"network": ["n"]}]})";
  expect_error(run({"run", plan_file(plan)}), 2, {"duplicate net name", "\"n\""});
}

TEST_F(Cli, StepUsesUndefinedNet) {
  const std::string plan = R"({"network": [{"name": "n"}], "execution_step": [{"name": "s", "network": ["ghost"]}]})";
  expect_error(run({"run", plan_file(plan)}), 2, {"\"ghost\"", "not defined"});
}

TEST_F(Cli, BadFlag) { expect_error(run({"run", plan_file(kFills), "--nope"}), 2, {"--nope"}); }

TEST_F(Cli, MissingPlanArgument) { expect_error(run({"run"}), 2, {"plan", "required"}); }

TEST_F(Cli, MissingFetchValue) { expect_error(run({"run", plan_file(kFills), "--fetch"}), 2, {"--fetch"}); }

TEST_F(Cli, EmptyFetchName) {
  expect_error(run({"run", plan_file(kFills), "--fetch", "y,,b"}), 2, {"--fetch", "empty"});
}

TEST_F(Cli, ExtraPositional) { expect_error(run({"run", plan_file(kFills), "other.json"}), 2, {"other.json"}); }

TEST_F(Cli, BadExceptionTimeout) {
  for (const char* v : {"-1", "nan", "inf", "1e300", "soon"}) {
    SCOPED_TRACE(v);
    expect_error(run({"run", plan_file(kFills), "--exception-timeout", v}), 2, {"--exception-timeout", v});
  }
}

TEST_F(Cli, FibersAndThreadsExcludeEachOther) {
  expect_error(run({"run", plan_file(kFills), "--fibers", "--threads"}), 2, {"--fibers", "--threads"});
  expect_error(run({"job", "run", "job.json", "--checkpoint-dir", "d", "--threads", "--fibers"}), 2,
               {"--fibers", "--threads"});
}

TEST_F(Cli, NoSubcommand) { expect_error(run({}), 2, {"subcommand"}); }

TEST_F(Cli, UnknownSubcommand) { expect_error(run({"frobnicate"}), 2, {"unknown subcommand", "\"frobnicate\""}); }

TEST_F(Cli, ErrorMessageWithNewlineStaysOneLine) {
  // A net name holding a newline is quoted in the message; the CLI escapes it.
  const std::string plan = R"({"network": [{"name": "bad\nname", "op": [{"type": "NoSuchOp"}]}],
                               "execution_step": [{"network": ["bad\nname"]}]})";
  expect_error(run({"run", plan_file(plan)}), 2, {"NoSuchOp", "bad\\nname"});
}

// ---------------------------------------------------------------------------------------------
// Exit 1: failures while running

TEST_F(Cli, FetchNameThatDoesNotExist) {
  expect_error(run({"run", plan_file(kFills), "--fetch", "y,nope"}), 1, {"\"nope\"", "does not exist"});
}

TEST_F(Cli, IntegerDivisionByZero) {
  const std::string plan = one_net_plan(R"([
    {"type": "GivenTensorInt64Fill", "output": ["a"], "arg": [{"name": "values", "ints": [7]}]},
    {"type": "GivenTensorInt64Fill", "output": ["z"], "arg": [{"name": "values", "ints": [0]}]},
    {"type": "Div", "input": ["a", "z"], "output": ["q"]}])");
  expect_error(run({"run", plan_file(plan), "--fetch", "q"}), 1, {"Div", "division by zero", "net \"n\""});
}

TEST_F(Cli, CastNaNToInt) {
  const std::string plan = one_net_plan(R"([
    {"type": "GivenTensorFill", "output": ["x"], "arg": [{"name": "values", "floats": ["NaN"]}]},
    {"type": "Cast", "input": ["x"], "output": ["y"], "arg": [{"name": "to", "s": "INT32"}]}])");
  expect_error(run({"run", plan_file(plan), "--fetch", "y"}), 1, {"Cast", "nan", "INT32"});
}

TEST_F(Cli, ShouldStopBlobNotBool) {
  const std::string plan = R"({"network": [
    {"name": "init", "op": [{"type": "ConstantFill", "output": ["stop"], "arg": [{"name": "dtype", "s": "INT64"}]}]},
    {"name": "body", "op": [{"type": "Iter", "output": ["it"]}]}],
    "execution_step": [{"name": "init", "network": ["init"]},
                       {"name": "loop", "network": ["body"], "should_stop_blob": "stop"}]})";
  expect_error(run({"run", plan_file(plan)}), 1, {"should_stop_blob", "\"stop\"", "bool"});
}

// ---------------------------------------------------------------------------------------------
// moka check

TEST_F(Cli, CheckValidPlan) {
  // check does not run the plan: a run-time failure (division by zero) is not reported.
  const std::string plan = one_net_plan(R"([
    {"type": "GivenTensorInt64Fill", "output": ["a"], "arg": [{"name": "values", "ints": [7]}]},
    {"type": "GivenTensorInt64Fill", "output": ["z"], "arg": [{"name": "values", "ints": [0]}]},
    {"type": "Div", "input": ["a", "z"], "output": ["q"]}])");
  const std::string path = plan_file(plan);
  const CliResult r = run({"check", path});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, path + ": ok (1 nets, 1 top-level steps)\n");
}

TEST_F(Cli, CheckInvalidPlan) {
  expect_error(run({"check", plan_file(one_net_plan(R"([{"type": "NoSuchOp"}])"))}), 2, {"NoSuchOp"});
  expect_error(run({"check", plan_file("[1, 2]")}), 2, {"expected an object"});
  expect_error(run({"check"}), 2, {"file", "required"});
}

// ---------------------------------------------------------------------------------------------
// moka ops

TEST_F(Cli, OpsListsEveryOperatorWithArguments) {
  const CliResult r = run({"ops"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* needle : {"\nAdd\n", "\nConstantFill\n", "\nCreateCounter\n", "\nCountUp\n", "\nPrint\n",
                             "arg value", "arg dtype", "arg shape", "arg init_count", "arg broadcast"}) {
    EXPECT_NE(("\n" + r.out).find(needle), std::string::npos) << needle;
  }
}

TEST_F(Cli, OpsOneType) {
  const CliResult r = run({"ops", "Add"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Add\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("inputs: 2, outputs: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arg broadcast"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ConstantFill"), std::string::npos) << "only Add should be described";
}

TEST_F(Cli, OpsUnknownType) { expect_error(run({"ops", "NoSuchOp"}), 2, {"\"NoSuchOp\""}); }

// ---------------------------------------------------------------------------------------------
// Help

TEST_F(Cli, TopLevelHelpMentionsEverySubcommandAndFlag) {
  const CliResult r = run({"--help"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* needle : {"run", "check", "ops", "--fetch", "--exception-timeout", "--version", "--help"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle;
}

TEST_F(Cli, RunHelpMentionsEveryFlag) {
  const CliResult r = run({"run", "--help"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* needle : {"--fetch", "--exception-timeout", "plan", "Exit codes"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle;
}

TEST_F(Cli, SubcommandHelp) {
  for (const char* sub : {"check", "ops"}) {
    const CliResult r = run({sub, "--help"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("Usage: moka " + std::string(sub)), std::string::npos) << r.out;
  }
}

TEST_F(Cli, Version) {
  const CliResult r = run({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("moka ", 0), 0u) << r.out;
}

}  // namespace

// TaskGroup documents through `moka run`.

TEST_F(Cli, TaskGroupExampleRunsEveryNode) {
  const CliResult r = run({"run", source_path("examples/task_groups/two_nodes.json"), "--fetch", "total,product"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_stdout(r), Json::parse(R"({"total": {"dtype": "int64", "shape": [], "data": [15]},
                                            "product": {"dtype": "int64", "shape": [], "data": [1024]}})"));
}

TEST_F(Cli, TaskGroupNodesDoNotShareBlobs) {
  const CliResult r = run({"run", source_path("examples/task_groups/two_nodes.json"), "--fetch", "x"});
  expect_error(r, 1, {"\"x\"", "several nodes", "local", "n2"});
}

TEST_F(Cli, TaskGroupSharedWorkspaceOption) {
  // Each node writes its own blob; in one workspace both are visible.
  const std::string doc = R"({"nodes": [
    {"node": "a", "plan": {"network": [{"name": "na", "op": [{"type": "ConstantFill", "output": ["from_a"],
      "arg": [{"name": "shape", "ints": []}, {"name": "dtype", "i": 10}, {"name": "value", "i": 1}]}]}],
      "execution_step": [{"name": "s", "network": ["na"]}]}},
    {"node": "b", "plan": {"network": [{"name": "nb", "op": [{"type": "ConstantFill", "output": ["from_b"],
      "arg": [{"name": "shape", "ints": []}, {"name": "dtype", "i": 10}, {"name": "value", "i": 2}]}]}],
      "execution_step": [{"name": "s", "network": ["nb"]}]}}]})";
  const CliResult r = run({"run", plan_file(doc), "--shared-workspace", "--fetch", "from_a,from_b"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_stdout(r)["from_b"]["data"], Json::parse("[2]"));
  // The same net name on two nodes cannot share one workspace.
  std::string clash = doc;
  for (const char* from : {"\"nb\""}) clash.replace(clash.find(from), 4, "\"na\"");
  clash.replace(clash.find("[\"nb\"]"), 6, "[\"na\"]");
  const CliResult c = run({"run", plan_file(clash, "clash.json"), "--shared-workspace"});
  expect_error(c, 2, {"both define net", "na"});
}

TEST_F(Cli, TaskGroupInvalidNodeExits2) {
  const CliResult r = run({"run", plan_file(R"({"nodes": [{"node": "a", "plan": {"network": [{"name": "n",
      "op": [{"type": "Nope"}]}], "execution_step": [{"name": "s", "network": ["n"]}]}}]})"),
                           "--fetch", "x"});
  expect_error(r, 2, {"node \"a\"", "Nope"});
  const CliResult c = run({"check", source_path("examples/task_groups/two_nodes.json")});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("task group, 2 nodes"), std::string::npos) << c.out;
}

// ---------------------------------------------------------------------------------------------
// moka job run

TEST_F(CliJob, PrintsOneLinePerEpochAndTheOutputs) {
  const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Every epoch's line: its number, seconds, the checkpoint's size and seconds; the last one says stop.
  std::istringstream lines(r.out);
  std::string line;
  const std::string size_and_time = R"(, checkpoint [0-9]+(\.[0-9])? (B|KiB|MiB) in [0-9]+\.[0-9]{3} s)";
  for (int e = 0; e <= 4; ++e) {
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    const std::string head =
        e == 0 ? std::string(R"(epoch 0 \(init\))") : "epoch " + std::to_string(e) + R"(: [0-9]+\.[0-9]{3} s)";
    EXPECT_TRUE(std::regex_match(line, std::regex(head + size_and_time + (e == 4 ? ", stop" : ""))))
        << "epoch " << e << ": " << line;
    // The checkpoint holds the 1000 weights (4000 bytes) and more: a few KiB, never "0 B".
    EXPECT_NE(line.find(" KiB in "), std::string::npos) << line;
  }
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "finished after epoch 4");
  EXPECT_NE(r.out.find(std::string(kOutputs) + "\n"), std::string::npos) << r.out;
  for (int e = 0; e <= 4; ++e)
    EXPECT_TRUE(fs::exists(fs::path(ckpt()) / ("moka-manifest." + std::to_string(e) + ".json")));
}

TEST_F(CliJob, BackgroundSavePrintsWhenEachCheckpointIsWritten) {
  const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--background-save"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Epoch E's line (its snapshot), then, once the next epoch's save (or the end) has waited for the
  // writer, the line saying epoch E was written and how long the writer took.
  std::istringstream lines(r.out);
  std::string line;
  const std::string snapshot =
      R"(, checkpoint [0-9]+(\.[0-9])? (B|KiB|MiB) in [0-9]+\.[0-9]{3} s \(snapshot; written in the background\))";
  for (int e = 0; e <= 4; ++e) {
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    const std::string head =
        e == 0 ? std::string(R"(epoch 0 \(init\))") : "epoch " + std::to_string(e) + R"(: [0-9]+\.[0-9]{3} s)";
    EXPECT_TRUE(std::regex_match(line, std::regex(head + snapshot + (e == 4 ? ", stop" : ""))))
        << "epoch " << e << ": " << line;
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    EXPECT_TRUE(std::regex_match(line, std::regex("epoch " + std::to_string(e) +
                                                  R"(: checkpoint written in [0-9]+\.[0-9]{3} s \(background\))")))
        << "epoch " << e << ": " << line;
  }
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "finished after epoch 4");
  EXPECT_NE(r.out.find(std::string(kOutputs) + "\n"), std::string::npos) << r.out;
}

TEST_F(CliJob, AToleratedBackgroundSaveFailureIsPrintedUnderItsEpoch) {
  fs::create_directories(fs::path(ckpt()) / "trainer.2" / "x");  // Save cannot replace it with a file
  const CliResult r =
      run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--background-save", "--tolerate-save-failures"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nepoch 1: checkpoint written in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nepoch 2: checkpoint not written (background; failure tolerated)\nepoch 3: "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("epoch 2: checkpoint written"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checkpoint save failed (tolerated): Unable to write checkpoint for epoch 2."),
            std::string::npos)
      << r.out;
}

TEST_F(CliJob, FibersGiveTheSameOutputs) {
  // The job's pipe (reader → processor → queue → writer) with its tasks as fibers on one thread.
  const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--fibers"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(", stop\nfinished after epoch 4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::string(kOutputs) + "\n"), std::string::npos) << r.out;
}

TEST_F(CliJob, ThreadsGiveTheSameOutputsOnOneCpu) {
  // --threads keeps worker threads where the default would pick fibers: pinned to one CPU.
  CliResult r, d;
  {
    const moka::testing::PinnedToOneCpu one;  // inherited by the child processes
    ASSERT_TRUE(one.ok());
    r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--threads"});
    d = run({"job", "run", small_job(), "--checkpoint-dir", ckpt() + "-default"});
  }
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string(kOutputs) + "\n"), std::string::npos) << r.out;
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find(std::string(kOutputs) + "\n"), std::string::npos) << d.out;
}

TEST_F(CliJob, ResumeLatestAfterTheEndRunsNoMoreEpochs) {
  ASSERT_EQ(run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--background-save"}).code, 0);
  const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--resume", "latest"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("resuming from epoch 4\nfinished after epoch 4\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(kOutputs), std::string::npos) << r.out;
}

TEST_F(CliJob, CorruptNewestCheckpointIsSkippedWithItsReason) {
  ASSERT_EQ(run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--db-type", "lmdb"}).code, 0);
  fs::remove(fs::path(ckpt()) / "moka-manifest.4.json");  // as if killed before epoch 4 committed
  fs::remove_all(fs::path(ckpt()) / "trainer.3");
  const CliResult r =
      run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--db-type", "lmdb", "--resume", "latest"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("skipping checkpoint epoch 3: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainer.3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resuming from epoch 2\nepoch 3: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kOutputs), std::string::npos) << r.out;
}

TEST_F(CliJob, KeepLastDeletesOlderCheckpoints) {
  ASSERT_EQ(run({"job", "run", small_job(), "--checkpoint-dir", ckpt(), "--keep-last", "2"}).code, 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ckpt())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"moka-manifest.3.json", "moka-manifest.4.json", "moka.lock", "reader.3",
                                             "reader.4", "trainer.3", "trainer.4"}));
}

TEST_F(CliJob, ACheckpointDirectoryInUseIsRefused) {
  // This process holds the directory's lock, as a first `moka job run` would.
  fs::create_directories(ckpt());
  const std::string lock = ckpt() + "/moka.lock";
  std::ofstream(lock) << "4242\n";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt()});
  expect_error(r, 1, {"checkpoint directory '" + ckpt() + "' is in use by another job run", "process 4242"});
  EXPECT_EQ(r.out, "");  // refused before any epoch ran
  EXPECT_FALSE(fs::exists(ckpt() + "/moka-manifest.0.json"));
  ::close(fd);  // released: the same command now runs
  EXPECT_EQ(run({"job", "run", small_job(), "--checkpoint-dir", ckpt()}).code, 0);
}

TEST_F(CliJob, BadInputExitsWithTwo) {
  const std::string job = small_job();
  expect_error(run({"job", "run", job}), 2, {"--checkpoint-dir"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ""}), 2, {"--checkpoint-dir", "must not be empty"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--resume", ""}), 2,
               {"--resume", "must not be empty"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--keep-every", "5"}), 2,
               {"--keep-every", "--keep-last"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--db-type", "rocksdb"}), 2, {"--db-type"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--keep-last", "-1"}), 2, {"--keep-last"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--resume", "soon"}), 2, {"--resume", "soon"});
  expect_error(run({"job", "run", job, "--checkpoint-dir", ckpt(), "--resume", "9"}), 2,
               {"--resume 9", "not committed", "moka-manifest.9.json"});
  expect_error(run({"job", "run", plan_file(R"({"epoch_group": {"nodes": [{"node": 3}]}})", "bad.json"),
                    "--checkpoint-dir", ckpt()}),
               2, {"bad.json", "epoch_group.nodes[0].node"});
  expect_error(
      run({"job", "run", plan_file(R"({"epoch_group": {"nodes": []}})", "nostop.json"), "--checkpoint-dir", ckpt()}), 2,
      {"stop_conditions"});
  expect_error(run({"job", "frobnicate"}), 2, {"frobnicate"});
}

TEST_F(CliJob, CheckpointDirectoryThatCannotBeCreatedFailsTheRun) {
  write_file(dir_ / "file", "x");
  expect_error(run({"job", "run", small_job(), "--checkpoint-dir", (dir_ / "file" / "ckpt").string()}), 1,
               {"cannot create checkpoint directory", "exists and is not a directory"});
}
