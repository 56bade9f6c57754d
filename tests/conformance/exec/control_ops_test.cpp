// Conformance: ports of net_builder_test.py test_if_net and test_while_net (caffe2-tests.md §2.7, §2.8), written
// as the NetDefs Caffe2's control_ops_util.add_if_op / add_while_op produce (If/While + Do + CreateScope), run as plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moka/exec/control_ops.h"
#include "moka/moka.h"

namespace moka {
namespace {

using Names = std::set<std::string>;  // Python sets; sorted here so the generated nets are deterministic

// ---- what core.Net and control_ops_util do, on NetDefs ----

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

// Inputs read before any op of the net writes them (core.get_undefined_blobs of the SSA form), in first-use order.
std::vector<std::string> undefined_inputs(const NetDef& n) {
  std::vector<std::string> out;
  Names defined;
  for (const auto& op : n.op) {
    for (const auto& in : op.input)
      if (!defined.count(in) && std::find(out.begin(), out.end(), in) == out.end()) out.push_back(in);
    defined.insert(op.output.begin(), op.output.end());
  }
  return out;
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

Names used_blob_names(const NetDef& n) {
  Names s;
  for (const auto& op : n.op) {
    s.insert(op.input.begin(), op.input.end());
    s.insert(op.output.begin(), op.output.end());
  }
  return s;
}

Names operator|(Names a, const Names& b) {
  a.insert(b.begin(), b.end());
  return a;
}

std::vector<std::string> list(const Names& s) { return {s.begin(), s.end()}; }

// control_ops_util.get_external_blob_names
std::pair<Names, Names> external_blob_names(const NetDef& n, const Names& lexical_scope) {
  Names inputs;
  for (const auto& in : undefined_inputs(n)) {
    if (!lexical_scope.count(in)) throw InvalidInput("Input blob " + in + " is undefined");
    inputs.insert(in);
  }
  Names outputs;
  for (const auto& op : n.op)
    for (const auto& out : op.output)
      if (lexical_scope.count(out)) outputs.insert(out);
  return {inputs, outputs};
}

// NetBuilder.merge_nets: AppendNet in order, keep only external outputs in the outer scope.
NetDef merge_nets(std::vector<NetDef> nets, const Names& outer) {
  NetDef merged = nets.front();
  for (std::size_t i = 1; i < nets.size(); ++i) {
    merged.op.insert(merged.op.end(), nets[i].op.begin(), nets[i].op.end());
    for (const auto& e : nets[i].external_input)
      if (std::find(merged.external_input.begin(), merged.external_input.end(), e) == merged.external_input.end())
        merged.external_input.push_back(e);
    merged.external_output.insert(merged.external_output.end(), nets[i].external_output.begin(),
                                  nets[i].external_output.end());
  }
  std::vector<std::string> kept;
  for (const auto& o : merged.external_output)
    if (outer.count(o)) kept.push_back(o);
  merged.external_output = kept;
  return merged;
}

// The index of each outer name in inputs+outputs (Python list.index: the first occurrence).
std::vector<int64_t> outer_idx(const std::vector<std::string>& outer, const std::vector<std::string>& ins,
                               const std::vector<std::string>& outs) {
  std::vector<std::string> ordered = ins;
  ordered.insert(ordered.end(), outs.begin(), outs.end());
  std::vector<int64_t> idx;
  for (const auto& name : outer)
    idx.push_back(std::find(ordered.begin(), ordered.end(), name) - ordered.begin());
  return idx;
}

// A net holding one Do of `body` in scope blob `ws_blob` (do_then_net / do_else_net / do_loop_body_net ...).
NetDef do_net(const std::string& name, const NetDef& body, const Names& in_names, const Names& out_names,
              const std::string& ws_blob, bool copy_external_blobs) {
  std::vector<std::string> ins = list(in_names), outs = list(out_names);
  const std::vector<std::string> outer = list(in_names | out_names);
  std::vector<Argument> args{make_arg("net", body), make_arg("inner_blobs", outer),
                             make_arg("outer_blobs_idx", outer_idx(outer, ins, outs))};
  if (copy_external_blobs) args.push_back(make_arg("copy_external_blobs", true));
  ins.push_back(ws_blob);
  outs.push_back(ws_blob);
  NetDef d = net(name, {make_op("Do", ins, outs, std::move(args))});
  d.external_output = outs;
  return declare_inputs(d);
}

// control_ops_util.add_if_op
void add_if_op(NetDef& if_net, const std::string& cond, const Names& scope, const NetDef& then_net,
               const std::optional<NetDef>& else_net = std::nullopt) {
  auto [then_in, then_out] = external_blob_names(then_net, scope);
  Names else_in, else_out;
  if (else_net) std::tie(else_in, else_out) = external_blob_names(*else_net, scope);
  std::vector<std::string> if_inputs{cond};
  for (const auto& b : then_in | else_in) if_inputs.push_back(b);
  std::vector<std::string> if_outputs = list(then_out | else_out);

  const std::string then_ws = if_net.name + "/workspace_if_then";
  std::vector<Argument> if_args{make_arg("then_net", do_net("do_then_net", then_net, then_in, then_out, then_ws, false))};
  if_inputs.push_back(then_ws);
  if_outputs.push_back(then_ws);
  if_net.op.push_back(make_op("CreateScope", {}, {then_ws}));
  if (else_net) {
    const std::string else_ws = if_net.name + "/workspace_if_else";
    if_args.push_back(make_arg("else_net", do_net("do_else_net", *else_net, else_in, else_out, else_ws, false)));
    if_inputs.push_back(else_ws);
    if_outputs.push_back(else_ws);
    if_net.op.push_back(make_op("CreateScope", {}, {else_ws}));
  }
  if_net.op.push_back(make_op("If", if_inputs, if_outputs, std::move(if_args)));
  if_net.external_output.insert(if_net.external_output.end(), if_outputs.begin(), if_outputs.end());
  declare_inputs(if_net);
}

// control_ops_util.add_while_op
void add_while_op(NetDef& while_net, const std::string& cond, const Names& scope, const NetDef& body,
                  const std::optional<NetDef>& cond_body = std::nullopt) {
  auto [in_names, out_names] = external_blob_names(body, scope);
  in_names = in_names | out_names;  // the loop may not run at all
  std::vector<std::string> while_inputs{cond};
  for (const auto& b : in_names) while_inputs.push_back(b);
  std::vector<std::string> while_outputs = list(out_names);

  const std::string body_ws = while_net.name + "/workspace_loop_body";
  while_inputs.push_back(body_ws);
  while_outputs.push_back(body_ws);
  std::vector<Argument> args{make_arg("loop_net", do_net("do_loop_body_net", body, in_names, out_names, body_ws, true))};

  std::string cond_ws;
  if (cond_body) {
    auto [cond_in, cond_out] = external_blob_names(*cond_body, scope);
    bool writes_cond = false;
    for (const auto& op : cond_body->op)
      writes_cond |= std::find(op.output.begin(), op.output.end(), cond) != op.output.end();
    if (!writes_cond) throw InvalidInput("Condition net does not write into condition blob");
    cond_out.insert(cond);
    cond_ws = while_net.name + "/workspace_loop_cond";
    args.push_back(make_arg("cond_net", do_net("do_loop_condition_net", *cond_body, cond_in, cond_out, cond_ws, false)));
    for (const auto& b : cond_in)
      if (!in_names.count(b)) while_inputs.push_back(b);
    while_inputs.push_back(cond_ws);
    for (const auto& b : cond_out)
      if (!out_names.count(b)) while_outputs.push_back(b);
    while_outputs.push_back(cond_ws);
    if (!scope.count(cond)) while_net.op.push_back(bool_konst(cond, false));
  }
  while_net.op.push_back(make_op("CreateScope", {}, {body_ws}));
  if (!cond_ws.empty()) while_net.op.push_back(make_op("CreateScope", {}, {cond_ws}));
  while_net.op.push_back(make_op("While", while_inputs, while_outputs, std::move(args)));
  while_net.external_output.insert(while_net.external_output.end(), while_outputs.begin(), while_outputs.end());
  declare_inputs(while_net);
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

// Ports net_builder_test.py TestNetBuilder.test_if_net (caffe2-tests.md §2.7). Each `with ops.IfNet(...)`
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
  add_if_op(if_else_net, "true", scope, pnet("net_2", {konst("first_res", 1)}),
            pnet("net_3", {konst("first_res", 2)}));
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
  NetDef a = pnet("net_7", {konst("local_blob", 900), konst("c100", 100), make_op("Add", {"c100", "local_blob"}, {"y0"}),
                           make_op("GT", {"x1", "x2"}, {"gt"})});
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
  add_if_op(nested_if_2, "eq", inner_scope,
            pnet("net_10", {konst("y2", 7), make_op("Add", {"y1", "y2"}, {"y2"})}));
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

// Ports net_builder_test.py TestNetBuilder.test_while_net (caffe2-tests.md §2.8), built as _RunWhileNet and
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
  EXPECT_FALSE(ws.has_blob("one"));    // local to the condition's scope
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
