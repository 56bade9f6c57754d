// Tests of the plan JSON codec: lossless round trips and the JSON path reported for each validation error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <unistd.h>

#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/operators/callable.h"

namespace moka {
namespace {

/// The message of the InvalidInput that plan_from_json(text) throws ("" and a test failure if none).
std::string plan_error(std::string_view text) {
  try {
    plan_from_json(text);
  } catch (const InvalidInput& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error for: " << text;
  return {};
}

#define EXPECT_STARTS_WITH(msg, prefix)                                                            \
  do {                                                                                             \
    const std::string m_ = (msg);                                                                  \
    EXPECT_TRUE(m_.starts_with(prefix)) << "message: " << m_ << "\nexpected prefix: " << (prefix); \
  } while (0)

NetDef sample_net(std::string name) {
  NetDef net;
  net.name = std::move(name);
  net.op.push_back(make_op("ConstantFill", {}, {"x"}, {make_arg("value", 1.5), make_arg("dtype", int64_t{1})}));
  net.op.push_back(make_op("Add", {"x", "x"}, {"y"}, {}, "add"));
  return net;
}

PlanDef rich_plan() {
  PlanDef plan;
  plan.name = "rich";

  NetDef init = sample_net("init");
  init.type = "simple";
  init.num_workers = 4;
  init.arg.push_back(make_arg("net_arg", std::string("v")));
  init.external_input = {"a", "b"};
  init.external_output = {"y"};
  OperatorDef& op = init.op[0];
  op.engine = "CUDNN";
  op.control_input = {"c1"};
  op.debug_info = "file.py:12";
  op.arg.push_back(make_arg("ints", std::vector<int64_t>{1, -2, 3}));
  op.arg.push_back(make_arg("floats", std::vector<double>{0.5, -1.25}));
  op.arg.push_back(make_arg("strings", std::vector<std::string>{"p", "q"}));
  op.arg.push_back(make_arg("s", std::string("text")));
  op.arg.push_back(make_arg("n", sample_net("inner")));
  op.arg.push_back(make_arg("nets", std::vector<NetDef>{sample_net("i1"), sample_net("i2")}));
  plan.network.push_back(init);
  plan.network.push_back(sample_net("body"));
  plan.network.push_back(sample_net("report"));

  ExecutionStepDef s0;
  s0.name = "init";
  s0.network = {"init"};
  s0.num_iter = 1;
  s0.create_workspace = false;
  s0.criteria_network = "ignored";

  ExecutionStepDef loop;
  loop.name = "loop";
  loop.should_stop_blob = "stop";
  loop.only_once = false;
  loop.concurrent_substeps = true;
  loop.num_concurrent_instances = 3;
  loop.report_net = "report";
  loop.report_interval = 5;
  loop.stats_key = "local/task/loop";
  ExecutionStepDef body;
  body.name = "body";
  body.network = {"body", "body"};
  ExecutionStepDef reporter;
  reporter.name = "reporter";
  reporter.network = {"report"};
  reporter.run_every_ms = 250;
  reporter.create_workspace = true;
  loop.substep = {body, reporter};

  plan.execution_step = {s0, loop};
  return plan;
}

// ------------------------------------------------------------------------------------------------
// Round trips

TEST(PlanJson, RoundTripLossless) {
  PlanDef plan = rich_plan();
  for (int indent : {-1, 0, 2, 4}) {
    std::string text = to_json(plan, indent);
    EXPECT_EQ(plan_from_json(text), plan) << text;
    EXPECT_EQ(to_json(plan_from_json(text), indent), text);
  }
  EXPECT_EQ(to_json(plan, -1).find('\n'), std::string::npos);
}

TEST(PlanJson, RoundTripEachKind) {
  PlanDef plan = rich_plan();
  const NetDef& net = plan.network[0];
  EXPECT_EQ(net_from_json(to_json(net)), net);
  EXPECT_EQ(operator_from_json(to_json(net.op[0])), net.op[0]);
  EXPECT_EQ(step_from_json(to_json(plan.execution_step[1])), plan.execution_step[1]);
}

TEST(PlanJson, RoundTripExtremes) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<double> doubles = {0.1,
                                       1.0 / 3.0,
                                       -0.0,
                                       std::numeric_limits<double>::denorm_min(),
                                       std::numeric_limits<double>::min(),
                                       std::numeric_limits<double>::max(),
                                       std::numeric_limits<double>::lowest(),
                                       std::numeric_limits<double>::epsilon(),
                                       9007199254740993.0,
                                       1e300,
                                       123456789.123456789};
  NetDef net;
  net.name = "n\u00e9t \u2713 \U0001F600";
  net.num_workers = std::numeric_limits<int32_t>::max();
  OperatorDef op = make_op("T", {std::string("nul\0byte", 8), "quote\"back\\slash\ttab\n\x01"}, {"\u00fc"});
  op.arg.push_back(make_arg("min", kMin));
  op.arg.push_back(make_arg("max", kMax));
  op.arg.push_back(make_arg("ints", std::vector<int64_t>{kMin, -1, 0, 1, kMax}));
  op.arg.push_back(make_arg("floats", doubles));
  for (size_t k = 0; k < doubles.size(); ++k) op.arg.push_back(make_arg("d" + std::to_string(k), doubles[k]));
  op.arg.push_back(make_arg("unicode", std::string("\u65e5\u672c\u8a9e \U0001F680")));
  net.op.push_back(op);

  ExecutionStepDef step;
  step.network = {net.name};
  step.num_iter = kMax;
  step.report_net = net.name;
  step.report_interval = std::numeric_limits<int32_t>::max();
  step.num_concurrent_instances = std::numeric_limits<int32_t>::max();
  ExecutionStepDef sub;
  sub.substep = {};
  sub.run_every_ms = kMax;
  PlanDef plan;
  plan.network = {net};
  plan.execution_step = {step};

  PlanDef back = plan_from_json(to_json(plan));
  ASSERT_EQ(back, plan);
  const auto& floats = *back.network[0].op[0].arg[3].floats;
  for (size_t k = 0; k < doubles.size(); ++k) {
    EXPECT_EQ(std::memcmp(&floats[k], &doubles[k], sizeof(double)), 0) << k;  // bit for bit, -0.0 too
    double d = *back.network[0].op[0].arg[4 + k].f;
    EXPECT_EQ(std::memcmp(&d, &doubles[k], sizeof(double)), 0) << k;
  }
  EXPECT_EQ(step_from_json(to_json(sub)), sub);
}

TEST(PlanJson, NonFiniteFloats) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  OperatorDef op = make_op("T", {}, {});
  op.arg.push_back(make_arg("nan", std::numeric_limits<double>::quiet_NaN()));
  op.arg.push_back(make_arg("inf", kInf));
  op.arg.push_back(make_arg("ninf", -kInf));
  op.arg.push_back(make_arg("list", std::vector<double>{-kInf, std::nan(""), kInf, 1.0}));
  std::string text = to_json(op, -1);
  EXPECT_NE(text.find(R"("f":"NaN")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("f":"Infinity")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("f":"-Infinity")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(["-Infinity","NaN","Infinity",1.0])"), std::string::npos) << text;

  OperatorDef back = operator_from_json(text);
  EXPECT_TRUE(std::isnan(*back.arg[0].f));
  EXPECT_EQ(*back.arg[1].f, kInf);
  EXPECT_EQ(*back.arg[2].f, -kInf);
  const auto& l = *back.arg[3].floats;
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], -kInf);
  EXPECT_TRUE(std::isnan(l[1]));
  EXPECT_EQ(l[2], kInf);
  EXPECT_EQ(l[3], 1.0);
  EXPECT_EQ(to_json(back, -1), text);
}

TEST(PlanJson, NestedNetsInArguments) {
  NetDef leaf = sample_net("leaf");
  NetDef mid = sample_net("mid");
  mid.op[0].arg.push_back(make_arg("then_net", leaf));
  NetDef top = sample_net("top");
  top.op.push_back(make_op("While", {"cond"}, {}, {make_arg("loop_net", mid)}));
  top.arg.push_back(make_arg("branches", std::vector<NetDef>{leaf, mid}));
  PlanDef plan;
  plan.network = {top};
  std::string text = to_json(plan);
  PlanDef back = plan_from_json(text);
  EXPECT_EQ(back, plan);
  ASSERT_NE(back.network[0].op[2].arg[0].n, nullptr);
  EXPECT_EQ(back.network[0].op[2].arg[0].n->op[0].arg[2].n->name, "leaf");
  // Nested nets are not plan nets: a step cannot name them.
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"top","op":[{"type":"If","arg":[{"name":"x","n":{"name":"inner"}}]}]}],
                                   "execution_step":[{"network":["inner"]}]})"),
      "execution_step[0].network[0]: net \"inner\" is not defined");
}

TEST(PlanJson, EmptyListsStaySet) {
  OperatorDef op = make_op("T", {}, {});
  op.arg.push_back(make_arg("i", std::vector<int64_t>{}));
  op.arg.push_back(make_arg("f", std::vector<double>{}));
  op.arg.push_back(make_arg("s", std::vector<std::string>{}));
  op.arg.push_back(make_arg("n", std::vector<NetDef>{}));
  op.arg.push_back(make_arg("e", std::string()));
  std::string text = to_json(op, -1);
  EXPECT_EQ(text, R"({"type":"T","arg":[{"name":"i","ints":[]},{"name":"f","floats":[]},{"name":"s","strings":[]},)"
                  R"({"name":"n","nets":[]},{"name":"e","s":""}]})");
  OperatorDef back = operator_from_json(text);
  EXPECT_EQ(back, op);
  EXPECT_TRUE(back.arg[0].ints.has_value());
}

TEST(PlanJson, MinimalOutput) {
  NetDef net;
  net.name = "n";
  EXPECT_EQ(to_json(net, -1), R"({"name":"n"})");
  ExecutionStepDef step;
  EXPECT_EQ(to_json(step, -1), "{}");
  step.num_iter = 0;
  step.create_workspace = false;
  EXPECT_EQ(to_json(step, -1), R"({"num_iter":0,"create_workspace":false})");
  EXPECT_EQ(to_json(PlanDef{}, -1), "{}");
  EXPECT_EQ(plan_from_json("{}"), PlanDef{});
}

TEST(PlanJson, AcceptsExactConversions) {
  PlanDef p = plan_from_json(R"({"network":[{"name":"n","op":[{"type":"T","arg":[
      {"name":"a","i":3.0},{"name":"b","f":2},{"name":"c","ints":[1.0,-4e0]},{"name":"d","floats":[1,2.5]},
      {"name":"e","i":-9223372036854775808}]}]}],
      "execution_step":[{"network":["n"],"num_iter":1e2,"report_net":"n","report_interval":2.0}]})");
  const auto& args = p.network[0].op[0].arg;
  EXPECT_EQ(*args[0].i, 3);
  EXPECT_EQ(*args[1].f, 2.0);
  EXPECT_EQ(*args[2].ints, (std::vector<int64_t>{1, -4}));
  EXPECT_EQ(*args[3].floats, (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(*args[4].i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*p.execution_step[0].num_iter, 100);
  EXPECT_EQ(*p.execution_step[0].report_interval, 2);
}

TEST(PlanJson, CallableCannotBeSerialised) {
  EXPECT_STREQ(kCallableOpType, "Callable");
  PlanDef plan = rich_plan();
  plan.network[1].op.push_back(make_op(kCallableOpType, {"x"}, {"z"}, {make_arg("token", int64_t{7})}));
  const std::string expected =
      "operator #2 (Callable) in net \"body\" holds a C++ callable that exists only in this process; plans with "
      "callables cannot be serialised";
  try {
    to_json(plan);
    FAIL() << "no error";
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  EXPECT_THROW(to_json(plan.network[1]), InvalidInput);
  EXPECT_THROW(to_json(plan.network[1].op[2]), InvalidInput);
  // Also inside a net nested in an argument.
  NetDef outer = sample_net("outer");
  outer.op[0].arg.push_back(make_arg("body", plan.network[1]));
  EXPECT_THROW(to_json(outer), InvalidInput);
}

TEST(PlanJsonErrors, CallableCannotBeLoaded) {
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"n","op":[{"type":"Callable","arg":[{"name":"token","i":1}]}]}]})"),
      "network[0].op[0].type: \"Callable\" operators hold a C++ callable");
}

TEST(PlanJson, InvalidUtf8CannotBeSerialised) {
  NetDef net;
  net.name = "bad\xff";
  EXPECT_THROW(to_json(net), InvalidInput);
}

// ------------------------------------------------------------------------------------------------
// Errors: each names the JSON path of the first problem.

TEST(PlanJsonErrors, UnknownField) {
  std::string msg = plan_error(R"({"execution_step":[{"substep":[{},{},{"num_iters":3}]}]})");
  EXPECT_STARTS_WITH(msg, "execution_step[0].substep[2]: unknown field \"num_iters\"");
  EXPECT_NE(msg.find("did you mean \"num_iter\"?"), std::string::npos) << msg;
  EXPECT_STARTS_WITH(plan_error(R"({"networks":[]})"), "top level: unknown field \"networks\"");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"n","op":[{"type":"T","arg":[{"name":"a","i":1,"x":2}]}]}]})"),
                     "network[0].op[0].arg[0]: unknown field \"x\"");
}

TEST(PlanJsonErrors, ArgumentWithTwoValues) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a"},{"name":"b","op":[{"type":"T"},{"type":"T"},{"type":"T"},
                                   {"type":"T","arg":[{"name":"v","i":1,"f":2.0}]}]}]})"),
                     "network[1].op[3].arg[0]: argument has two values (\"i\" and \"f\")");
}

TEST(PlanJsonErrors, ArgumentWithoutValueOrName) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v"}]}]}]})"),
                     "network[0].op[0].arg[0]: argument \"v\" has no value");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"i":1}]}]}]})"),
                     "network[0].op[0].arg[0]: missing field \"name\"");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"","i":1}]}]}]})"),
                     "network[0].op[0].arg[0].name: must not be empty");
}

TEST(PlanJsonErrors, DuplicateArgumentName) {
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v","i":1},{"name":"v","i":2}]}]}]})"),
      "network[0].op[0].arg[1].name: duplicate argument name \"v\"");
}

TEST(PlanJsonErrors, MissingOperatorType) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T"},{"type":"T"},{"input":["x"]}]}]})"),
                     "network[0].op[2]: missing field \"type\"");
}

TEST(PlanJsonErrors, NonIntegerNumIter) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{}, {"num_iter":1.5}]})"),
                     "execution_step[1].num_iter: expected an integer, got 1.5");
}

TEST(PlanJsonErrors, BothSubstepAndNetwork) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"n"}],"execution_step":[{"substep":[{}],"network":["n"]}]})"),
                     "execution_step[0]: has both \"substep\" and \"network\"");
}

TEST(PlanJsonErrors, DuplicateNetName) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"x"},{"name":"y"},{"name":"x"}]})"),
                     "network[2].name: duplicate net name \"x\"");
}

TEST(PlanJsonErrors, UndefinedNet) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"x"}],"execution_step":[{"network":["y"]}]})"),
                     "execution_step[0].network[0]: net \"y\" is not defined in this plan's \"network\"");
  EXPECT_STARTS_WITH(
      plan_error(
          R"({"network":[{"name":"x"}],"execution_step":[{"substep":[{"network":["x"]},{"network":["x","z"]}]}]})"),
      "execution_step[0].substep[1].network[1]: net \"z\" is not defined");
  EXPECT_STARTS_WITH(
      plan_error(
          R"({"network":[{"name":"x"}],"execution_step":[{"network":["x"],"report_net":"r","report_interval":1}]})"),
      "execution_step[0].report_net: net \"r\" is not defined");
  // Only plans know their nets: a lone step may name any net.
  EXPECT_EQ(step_from_json(R"({"network":["y"]})").network, std::vector<std::string>{"y"});
}

TEST(PlanJsonErrors, NegativeNumIter) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"num_iter":-1}]})"), "execution_step[0].num_iter: must be >= 0");
}

TEST(PlanJsonErrors, ReportNetNeedsReportInterval) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"r"}],"execution_step":[{"report_net":"r"}]})"),
                     "execution_step[0]: \"report_net\" needs \"report_interval\"");
}

TEST(PlanJsonErrors, ShouldStopBlobWithNumIter) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"substep":[{"should_stop_blob":"s","num_iter":2}]}]})"),
                     "execution_step[0].substep[0]: \"should_stop_blob\" and \"num_iter\" cannot both be set");
}

TEST(PlanJsonErrors, OnlyOnceNeedsShouldStopBlob) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"only_once":true}]})"),
                     "execution_step[0]: \"only_once\" needs \"should_stop_blob\"");
}

TEST(PlanJsonErrors, OutOfRangeStepFields) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"stats_key":""}]})"), "execution_step[0].stats_key:");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"stats_key":3}]})"), "execution_step[0].stats_key:");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"num_concurrent_instances":0}]})"),
                     "execution_step[0].num_concurrent_instances: must be >= 1");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"substep":[{"run_every_ms":0}]}]})"),
                     "execution_step[0].substep[0].run_every_ms: must be > 0");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"report_interval":-3}]})"),
                     "execution_step[0].report_interval: must be > 0");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"should_stop_blob":""}]})"),
                     "execution_step[0].should_stop_blob: must not be empty");
}

TEST(PlanJsonErrors, NetWithoutName) {
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a"},{"op":[]}]})"), "network[1]: missing field \"name\"");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":""}]})"), "network[0].name: must not be empty");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"If","arg":[{"name":"then","n":{}}]}]}]})"),
                     "network[0].op[0].arg[0].n: missing field \"name\"");
}

TEST(PlanJsonErrors, WrongTypes) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"num_iter":"3"}]})"),
                     "execution_step[0].num_iter: expected an integer, got \"3\"");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"report_interval":3000000000}]})"),
                     "execution_step[0].report_interval: 3000000000 is out of range for a 32-bit integer");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"num_iter":9223372036854775808}]})"),
                     "execution_step[0].num_iter: 9223372036854775808 is out of range for a 64-bit integer");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"num_iter":1e300}]})"),
                     "execution_step[0].num_iter: 1e+300 is out of range for a 64-bit integer");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"concurrent_substeps":1}]})"),
                     "execution_step[0].concurrent_substeps: expected true or false, got 1");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"name":null}]})"),
                     "execution_step[0].name: expected a string, got null");
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":{}})"), "execution_step: expected an array, got an object");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T","input":["x",5]}]}]})"),
                     "network[0].op[0].input[1]: expected a string, got 5");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":["Add"]}]})"),
                     "network[0].op[0]: expected an object, got \"Add\"");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","num_workers":2147483648}]})"),
                     "network[0].num_workers: 2147483648 is out of range for a 32-bit integer");
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v","f":"nan"}]}]}]})"),
      "network[0].op[0].arg[0].f: expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got \"nan\"");
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v","ints":[1,2.5]}]}]}]})"),
      "network[0].op[0].arg[0].ints[1]: expected an integer, got 2.5");
  EXPECT_STARTS_WITH(
      plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v","f":9007199254740993}]}]}]})"),
      "network[0].op[0].arg[0].f: 9007199254740993 cannot be represented exactly as a double");
  EXPECT_STARTS_WITH(plan_error(R"({"network":[{"name":"a","op":[{"type":"T","arg":[{"name":"v","i":"NaN"}]}]}]})"),
                     "network[0].op[0].arg[0].i: expected an integer, got \"NaN\"");
}

TEST(PlanJsonErrors, TopLevelNotAnObject) {
  EXPECT_STARTS_WITH(plan_error("[1, 2]"), "top level: expected an object, got an array");
  EXPECT_STARTS_WITH(plan_error("42"), "top level: expected an object, got 42");
  EXPECT_THROW(net_from_json("\"n\""), InvalidInput);
}

TEST(PlanJsonErrors, InvalidSyntax) {
  EXPECT_STARTS_WITH(plan_error("{\n  \"name\": ,\n}"), "line 2, column 11: invalid JSON: syntax error");
  EXPECT_STARTS_WITH(plan_error(""), "line 1, column 1: invalid JSON:");
  EXPECT_STARTS_WITH(plan_error("{\"name\": \"unterminated"), "line 1, column 23: invalid JSON:");
  EXPECT_STARTS_WITH(plan_error("{\"name\": \"bad \xff utf8\"}"), "line 1, column 15: invalid JSON:");
}

TEST(PlanJsonErrors, TrailingGarbage) {
  std::string msg = plan_error("{}\n x");
  EXPECT_STARTS_WITH(msg, "line 2, column 2: invalid JSON:");
  EXPECT_NE(msg.find("end of input"), std::string::npos) << msg;
}

TEST(PlanJsonErrors, DuplicateField) {
  EXPECT_STARTS_WITH(plan_error(R"({"execution_step":[{"name":"a","name":"b"}]})"),
                     "execution_step[0]: duplicate field \"name\"");
}

TEST(PlanJsonErrors, NestingDepthLimit) {
  auto nested_steps = [](int levels) {
    std::string s = "{}";
    for (int k = 0; k < levels; ++k) s = R"({"substep":[)" + s + "]}";
    return R"({"execution_step":[)" + s + "]}";
  };
  EXPECT_NO_THROW(plan_from_json(nested_steps(64)));
  std::string msg = plan_error(nested_steps(65));
  EXPECT_STARTS_WITH(msg, "execution_step[0].substep[0].substep[0]");
  EXPECT_NE(msg.find("steps nested deeper than 64 levels"), std::string::npos) << msg;

  auto nested_nets = [](int levels) {
    std::string s = R"({"name":"leaf"})";
    for (int k = 0; k < levels; ++k) s = R"({"name":"n","op":[{"type":"If","arg":[{"name":"x","n":)" + s + "}]}]}";
    return R"({"network":[)" + s + "]}";
  };
  EXPECT_NO_THROW(plan_from_json(nested_nets(64)));
  msg = plan_error(nested_nets(65));
  EXPECT_STARTS_WITH(msg, "network[0].op[0].arg[0].n.op[0]");
  EXPECT_NE(msg.find("nets nested (in arguments) deeper than 64 levels"), std::string::npos) << msg;

  // Raw JSON nesting is bounded while parsing, long before the stack could suffer.
  std::string deep(100000, '[');
  msg = plan_error(R"({"name":)" + deep);
  EXPECT_STARTS_WITH(msg, "name[0][0][0]");
  EXPECT_NE(msg.find("JSON nested deeper than 512 levels"), std::string::npos) << msg.substr(msg.size() - 80);

  // A def built in C++ that could not be loaded back is refused by the writer too.
  ExecutionStepDef step;
  for (int k = 0; k < 70; ++k) {
    ExecutionStepDef outer;
    outer.substep.push_back(std::move(step));
    step = std::move(outer);
  }
  EXPECT_THROW(to_json(step), InvalidInput);
}

TEST(PlanJsonErrors, LoadPlanFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("moka_json_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string good = (dir / "good.json").string();
  const std::string bad = (dir / "plan.json").string();
  std::ofstream(good) << to_json(rich_plan());
  std::ofstream(bad) << R"({"execution_step":[{"num_iter":1.5}]})";

  EXPECT_EQ(load_plan_file(good), rich_plan());
  try {
    load_plan_file(bad);
    ADD_FAILURE() << "no error";
  } catch (const InvalidInput& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": execution_step[0].num_iter: expected an integer, got 1.5");
  }
  const std::string missing = (dir / "missing.json").string();
  try {
    load_plan_file(missing);
    ADD_FAILURE() << "no error";
  } catch (const InvalidInput& e) {
    EXPECT_STARTS_WITH(std::string(e.what()), missing + ": cannot open plan file: No such file or directory");
  }
  try {
    load_plan_file(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const InvalidInput& e) {
    EXPECT_STARTS_WITH(std::string(e.what()), dir.string() + ": ");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moka
