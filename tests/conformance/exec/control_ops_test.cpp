// Conformance: ports of net_builder_test.py test_if_net and test_while_net (docs/testing.md §1), written
// as NetDefs built with control_ops_util's add_if_op / add_while_op / merge_nets (If/While + Do + CreateScope), the
// way net_builder's _RunIfNet/_RunWhileNet call them, run as plans. (The DSL version is conformance/build.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "moka/builder/control_ops_util.h"
#include "moka/exec/control_ops.h"
#include "moka/moka.h"

namespace moka {
namespace {

using Names = BlobNameSet;  // Python sets; sorted so the generated nets are deterministic

// ---- what core.Net does, on NetDefs ----

NetDef net(const std::string& name, std::vector<OperatorDef> ops = {}) {
  NetDef n;
  n.name = name;
  n.op = std::move(ops);
  return n;
}

// core.Const(v) of a Python int: GivenTensorInt64Fill, 0-d.
OperatorDef konst(const std::string& out, int64_t v) {
  return make_op("GivenTensorInt64Fill", {}, {out},
                 {make_arg("values", std::vector<int64_t>{v}), make_arg("shape", std::vector<int64_t>{})});
}

// core.Const(v) of a Python bool: ConstantFill(dtype=BOOL), 0-d.
OperatorDef bool_konst(const std::string& out, bool v) {
  return make_op("ConstantFill", {}, {out}, {make_arg("dtype", int64_t{5}), make_arg("value", int64_t{v})});
}

// core.Net adds every undefined input to external_input as ops are added.
NetDef& declare_inputs(NetDef& n) {
  n.external_input = undefined_inputs(n);
  return n;
}

// A net as core.Net builds it: its undefined inputs declared as external inputs.
NetDef pnet(const std::string& name, std::vector<OperatorDef> ops = {}) {
  NetDef n = net(name, std::move(ops));
  return declare_inputs(n);
}

Names operator|(Names a, const Names& b) {
  a.insert(b.begin(), b.end());
  return a;
}

int64_t fetch(const Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>().item<int64_t>(); }

PlanDef plan_of(const std::string& name, std::vector<NetDef> nets) {
  PlanDef plan;
  plan.name = name;
  ExecutionStepDef step;  // to_execution_step(nb): one step running the builder's nets in order
  step.name = name;
  for (auto& n : nets) {
    step.network.push_back(n.name);
    plan.network.push_back(std::move(n));
  }
  plan.execution_step.push_back(std::move(step));
  return plan;
}

// Ports net_builder_test.py TestNetBuilder.test_if_net. Each `with ops.IfNet(...)`
// / `ops.Else()` is built the way net_builder's _RunIfNet/_RunElseNet call add_if_op, with the lexical
// scope it would see; Const blobs get readable names instead of `<net>/GivenTensorInt64Fill:0`.
TEST(ControlOpsConformance, IfNet) {
  // x0, x1, x2 = Const(0), Const(1), Const(2); y0, y1, y2 likewise; first_res = Const(0); Const(True)
  NetDef net0 = net("net", {konst("x0", 0), konst("x1", 1), konst("x2", 2), konst("y0", 0), konst("y1", 1),
                            konst("y2", 2), konst("first_res", 0), bool_konst("true", true)});
  declare_inputs(net0);
  Names scope = used_blob_names(net0);

  // with ops.IfNet(Const(True)): Const(1, blob_out=first_res)   with ops.Else(): Const(2, blob_out=first_res)
  NetDef if_else_net = net("/if_else_net");
  add_if_op(if_else_net, "true", scope, pnet("net_2", {konst("first_res", 1)}), pnet("net_3", {konst("first_res", 2)}));
  scope = scope | used_blob_names(if_else_net);

  // second_res = Const(0); IfNet(Const(False)) ... Else ...
  NetDef net_1 = net("net_1", {konst("second_res", 0), bool_konst("false", false)});
  scope = scope | used_blob_names(net_1);
  NetDef if_else_net_1 = net("/if_else_net_1");
  add_if_op(if_else_net_1, "false", scope, pnet("net_4", {konst("second_res", 1)}),
            pnet("net_5", {konst("second_res", 2)}));
  scope = scope | used_blob_names(if_else_net_1);

  // with ops.IfNet(ops.LT([x0, x1])):
  NetDef net_6 = pnet("net_6", {make_op("LT", {"x0", "x1"}, {"lt"})});
  scope = scope | used_blob_names(net_6);
  const Names outer_scope = scope;
  //   local_blob = Const(900); ops.Add([Const(100), local_blob], [y0]); gt = ops.GT([x1, x2])
  NetDef a = pnet("net_7", {konst("local_blob", 900), konst("c100", 100),
                            make_op("Add", {"c100", "local_blob"}, {"y0"}), make_op("GT", {"x1", "x2"}, {"gt"})});
  Names inner_scope = outer_scope | used_blob_names(a);
  //   with ops.IfNet(gt): pass   with ops.Else(): Add([y1, local_blob], [local_blob]); Add([Const(100), y1], [y1])
  NetDef nested_if = net("/if_else_net_2");
  add_if_op(nested_if, "gt", inner_scope, pnet("empty_then_net"),
            pnet("net_8", {make_op("Add", {"y1", "local_blob"}, {"local_blob"}), konst("c100_2", 100),
                           make_op("Add", {"c100_2", "y1"}, {"y1"})}));
  inner_scope = inner_scope | used_blob_names(nested_if);
  //   with ops.IfNet(ops.EQ([local_blob, Const(901)])): Const(7, blob_out=y2); ops.Add([y1, y2], [y2])
  NetDef b = pnet("net_9", {konst("c901", 901), make_op("EQ", {"local_blob", "c901"}, {"eq"})});
  inner_scope = inner_scope | used_blob_names(b);
  NetDef nested_if_2 = net("/if_net_3");
  add_if_op(nested_if_2, "eq", inner_scope, pnet("net_10", {konst("y2", 7), make_op("Add", {"y1", "y2"}, {"y2"})}));
  NetDef big_then = merge_nets({a, nested_if, b, nested_if_2}, outer_scope);
  declare_inputs(big_then);
  // with ops.Else(): pass — an empty else leaves the then-only if_net.
  NetDef if_net_4 = net("/if_net_4");
  add_if_op(if_net_4, "lt", outer_scope, big_then);

  // What the generated If looks like, as add_if_op makes it.
  const OperatorDef& big_if = if_net_4.op.back();
  EXPECT_EQ(big_if.type, "If");
  EXPECT_EQ(big_if.input, (std::vector<std::string>{"lt", "x1", "x2", "y1", "/if_net_4/workspace_if_then"}));
  EXPECT_EQ(big_if.output, (std::vector<std::string>{"y0", "y1", "y2", "/if_net_4/workspace_if_then"}));

  Workspace ws;
  run_plan(ws, plan_of("if_net_test", {net0, if_else_net, net_1, if_else_net_1, net_6, if_net_4}));
  EXPECT_EQ(fetch(ws, "first_res"), 1);
  EXPECT_EQ(fetch(ws, "second_res"), 2);
  EXPECT_EQ(fetch(ws, "y0"), 1000);
  EXPECT_EQ(fetch(ws, "y1"), 101);
  EXPECT_EQ(fetch(ws, "y2"), 108);
  const auto blobs = ws.blobs();
  EXPECT_EQ(std::count(blobs.begin(), blobs.end(), "local_blob"), 0);
  // Everything else first created inside a branch stayed there too, nested scopes included.
  for (const char* inner : {"c100", "gt", "eq", "c901", "c100_2", "/if_else_net_2/workspace_if_else"})
    EXPECT_FALSE(ws.has_blob(inner)) << inner;
}

// Ports net_builder_test.py TestNetBuilder.test_while_net, built as _RunWhileNet and
// _RunWhileCondition call add_while_op.
TEST(ControlOpsConformance, WhileNet) {
  // x = Const(0); y = Const(0)
  NetDef net0 = net("net", {konst("x", 0), konst("y", 0)});
  declare_inputs(net0);
  const Names scope = used_blob_names(net0);
  // with ops.Condition(): ops.Add([x, Const(1)], [x]); ops.LT([x, Const(7)])   (the LT output is the condition)
  NetDef cond = net("net_1", {konst("one", 1), make_op("Add", {"x", "one"}, {"x"}), konst("seven", 7),
                              make_op("LT", {"x", "seven"}, {"net_1/LT"})});
  declare_inputs(cond);
  // ops.Add([x, y], [y])
  NetDef body = net("net_2", {make_op("Add", {"x", "y"}, {"y"})});
  declare_inputs(body);
  NetDef while_net = net("/while_net");
  add_while_op(while_net, "net_1/LT", scope, body, cond);

  const OperatorDef& w = while_net.op.back();
  EXPECT_EQ(w.type, "While");
  EXPECT_EQ(w.input, (std::vector<std::string>{"net_1/LT", "x", "y", "/while_net/workspace_loop_body",
                                               "/while_net/workspace_loop_cond"}));
  EXPECT_EQ(w.output, (std::vector<std::string>{"y", "/while_net/workspace_loop_body", "net_1/LT", "x",
                                                "/while_net/workspace_loop_cond"}));

  Workspace ws;
  run_plan(ws, plan_of("while_net_test", {net0, while_net}));
  EXPECT_EQ(fetch(ws, "x"), 7);
  EXPECT_EQ(fetch(ws, "y"), 21);
  EXPECT_FALSE(ws.has_blob("one"));  // local to the condition's scope
  EXPECT_FALSE(ws.has_blob("seven"));
}

// The plan of test_while_net, run twice in one workspace: the second run re-creates the nets and
// starts from x = y = 0 again (nothing is left behind by the first run's scopes).
TEST(ControlOpsConformance, WhileNetPlanRunsTwice) {
  NetDef net0 = net("net", {konst("x", 0), konst("y", 0)});
  declare_inputs(net0);
  NetDef cond = pnet("net_1", {konst("one", 1), make_op("Add", {"x", "one"}, {"x"}), konst("seven", 7),
                               make_op("LT", {"x", "seven"}, {"c"})});
  NetDef while_net = net("/while_net");
  add_while_op(while_net, "c", used_blob_names(net0), pnet("net_2", {make_op("Add", {"x", "y"}, {"y"})}), cond);
  Workspace ws;
  const PlanDef plan = plan_of("while_net_test", {net0, while_net});
  for (int run = 0; run < 2; ++run) {
    run_plan(ws, plan);
    EXPECT_EQ(fetch(ws, "x"), 7);
    EXPECT_EQ(fetch(ws, "y"), 21);
  }
}

}  // namespace
}  // namespace moka
