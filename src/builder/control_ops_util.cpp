// Caffe2's control_ops_util (add_if_op, add_while_op, get_external_blob_names) and NetBuilder.merge_nets, on
// NetDefs and Nets: the If/While/Do/CreateScope definitions that ops::IfNet and ops::WhileNet generate.
#include "moka/builder/control_ops_util.h"

#include <algorithm>
#include <functional>
#include <unordered_set>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/exec/control_ops.h"
#include "moka/exec/register_operators.h"

namespace moka {

namespace {

std::vector<std::string> listed(const BlobNameSet& s) { return {s.begin(), s.end()}; }

BlobNameSet joined(BlobNameSet a, const BlobNameSet& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// The operators add_if_op / add_while_op append, and the external outputs they declare; applied
// to a Net (schema-checked) or to a bare NetDef.
struct ControlOps {
  std::vector<OperatorDef> ops;
  std::vector<std::string> external_outputs;
};

// Gives a fresh `<net>/<suffix>` name for a scope blob (Caffe2's if_net.NextScopedBlob).
using ScopedName = std::function<std::string(const std::string& suffix)>;

// A net holding one Do of body in scope blob ws_blob (Caffe2's do_then_net / do_else_net / do_loop_body_net /
// do_loop_condition_net): inputs + [ws] -> outputs + [ws], each outer name bound to its first position.
NetDef do_net(const std::string& name, const NetDef& body, const BlobNameSet& in_names, const BlobNameSet& out_names,
              const std::string& ws_blob, bool copy_external_blobs) {
  std::vector<std::string> ins = listed(in_names), outs = listed(out_names);
  std::vector<std::string> ordered = ins;
  ordered.insert(ordered.end(), outs.begin(), outs.end());
  const std::vector<std::string> outer = listed(joined(in_names, out_names));
  std::vector<int64_t> outer_idx;
  outer_idx.reserve(outer.size());
  for (const auto& n : outer) outer_idx.push_back(std::find(ordered.begin(), ordered.end(), n) - ordered.begin());
  std::vector<Argument> args{make_arg("net", body), make_arg("inner_blobs", outer),
                             make_arg("outer_blobs_idx", std::move(outer_idx))};
  if (copy_external_blobs) args.push_back(make_arg("copy_external_blobs", true));
  ins.push_back(ws_blob);
  outs.push_back(ws_blob);
  NetDef d;
  d.name = name;
  d.external_input = ins;
  d.external_output = outs;
  d.op.push_back(make_op("Do", std::move(ins), std::move(outs), std::move(args)));
  return d;
}

ControlOps if_ops(const std::string& cond_blob, const BlobNameSet& lexical_scope, const NetDef& then_net,
                  const std::optional<NetDef>& else_net, const ScopedName& scoped_name) {
  if (cond_blob.empty()) throw InvalidInput("add_if_op: the condition blob is empty");
  const ExternalBlobNames then_blobs = get_external_blob_names(then_net, lexical_scope);
  ExternalBlobNames else_blobs;
  if (else_net) else_blobs = get_external_blob_names(*else_net, lexical_scope);

  std::vector<std::string> if_inputs{cond_blob};
  for (const auto& b : joined(then_blobs.inputs, else_blobs.inputs)) if_inputs.push_back(b);
  std::vector<std::string> if_outputs = listed(joined(then_blobs.outputs, else_blobs.outputs));

  ControlOps out;
  const std::string then_ws = scoped_name("workspace_if_then");
  std::vector<Argument> if_args{
      make_arg("then_net", do_net("do_then_net", then_net, then_blobs.inputs, then_blobs.outputs, then_ws, false))};
  if_inputs.push_back(then_ws);
  if_outputs.push_back(then_ws);
  out.ops.push_back(make_op("CreateScope", {}, {then_ws}));
  if (else_net) {
    const std::string else_ws = scoped_name("workspace_if_else");
    if_args.push_back(
        make_arg("else_net", do_net("do_else_net", *else_net, else_blobs.inputs, else_blobs.outputs, else_ws, false)));
    if_inputs.push_back(else_ws);
    if_outputs.push_back(else_ws);
    out.ops.push_back(make_op("CreateScope", {}, {else_ws}));
  }
  out.external_outputs = if_outputs;
  out.ops.push_back(make_op("If", std::move(if_inputs), std::move(if_outputs), std::move(if_args)));
  return out;
}

ControlOps while_ops(const std::string& cond_blob, const BlobNameSet& lexical_scope, const NetDef& body,
                     const std::optional<NetDef>& cond_body, const ScopedName& scoped_name) {
  if (cond_blob.empty()) throw InvalidInput("add_while_op: the condition blob is empty");
  ExternalBlobNames loop = get_external_blob_names(body, lexical_scope);
  // The loop may not run at all: what it writes must exist before it, like what it reads.
  loop.inputs = joined(loop.inputs, loop.outputs);

  std::vector<std::string> while_inputs{cond_blob};
  for (const auto& b : loop.inputs) while_inputs.push_back(b);
  std::vector<std::string> while_outputs = listed(loop.outputs);

  ControlOps out;
  const std::string body_ws = scoped_name("workspace_loop_body");
  while_inputs.push_back(body_ws);
  while_outputs.push_back(body_ws);
  std::vector<Argument> args{
      make_arg("loop_net", do_net("do_loop_body_net", body, loop.inputs, loop.outputs, body_ws, true))};

  std::string cond_ws;
  if (cond_body) {
    ExternalBlobNames cond = get_external_blob_names(*cond_body, lexical_scope);
    const bool writes_cond = std::any_of(cond_body->op.begin(), cond_body->op.end(), [&](const OperatorDef& op) {
      return std::find(op.output.begin(), op.output.end(), cond_blob) != op.output.end();
    });
    if (!writes_cond)
      throw InvalidInput(fmt::format("Condition net does not write into condition blob \"{}\" (condition net \"{}\")",
                                     cond_blob, cond_body->name));
    cond.outputs.insert(cond_blob);
    cond_ws = scoped_name("workspace_loop_cond");
    args.push_back(
        make_arg("cond_net", do_net("do_loop_condition_net", *cond_body, cond.inputs, cond.outputs, cond_ws, false)));
    for (const auto& b : cond.inputs)
      if (!loop.inputs.count(b)) while_inputs.push_back(b);
    while_inputs.push_back(cond_ws);
    for (const auto& b : cond.outputs)
      if (!loop.outputs.count(b)) while_outputs.push_back(b);
    while_outputs.push_back(cond_ws);
    if (!lexical_scope.count(cond_blob))
      out.ops.push_back(make_op("ConstantFill", {}, {cond_blob},
                                {make_arg("dtype", static_cast<int64_t>(DType::Bool)), make_arg("value", int64_t{0})}));
  }
  out.ops.push_back(make_op("CreateScope", {}, {body_ws}));
  if (!cond_ws.empty()) out.ops.push_back(make_op("CreateScope", {}, {cond_ws}));
  out.external_outputs = while_outputs;
  out.ops.push_back(make_op("While", std::move(while_inputs), std::move(while_outputs), std::move(args)));
  return out;
}

// The scope-blob names of a NetDef: `<net>/<suffix>`, `_2`, `_3`, ... when already used there.
ScopedName def_scoped_name(const NetDef& net) {
  return [&net](const std::string& suffix) {
    const BlobNameSet used = used_blob_names(net);
    const std::string base = net.name + "/" + suffix;
    std::string name = base;
    for (int k = 2; used.count(name); ++k) name = fmt::format("{}_{}", base, k);
    return name;
  };
}

void append_to(NetDef& net, ControlOps ops) {
  std::unordered_set<std::string> defined(net.external_input.begin(), net.external_input.end());
  for (const auto& op : net.op) defined.insert(op.output.begin(), op.output.end());
  for (auto& op : ops.ops) {
    for (const auto& in : op.input) {
      if (defined.insert(in).second) net.external_input.push_back(in);
    }
    defined.insert(op.output.begin(), op.output.end());
    net.op.push_back(std::move(op));
  }
  net.external_output.insert(net.external_output.end(), ops.external_outputs.begin(), ops.external_outputs.end());
}

void append_to(Net& net, ControlOps ops) {
  register_all_operators();  // Net::op checks every operator against its registered schema
  for (auto& op : ops.ops) {
    std::vector<BlobRef> ins(op.input.begin(), op.input.end());
    std::vector<BlobRef> outs(op.output.begin(), op.output.end());
    std::vector<Arg> args(std::make_move_iterator(op.arg.begin()), std::make_move_iterator(op.arg.end()));
    net.op(op.type, std::move(ins), Outputs(std::move(outs)), std::move(args));
  }
  for (const auto& o : ops.external_outputs) net.add_external_output(o);
}

}  // namespace

BlobNameSet used_blob_names(const NetDef& net) {
  BlobNameSet s;
  for (const auto& op : net.op) {
    s.insert(op.input.begin(), op.input.end());
    s.insert(op.output.begin(), op.output.end());
  }
  s.insert(net.external_input.begin(), net.external_input.end());
  s.insert(net.external_output.begin(), net.external_output.end());
  return s;
}

std::vector<std::string> undefined_inputs(const NetDef& net) {
  std::vector<std::string> out;
  std::unordered_set<std::string> defined, seen;
  for (const auto& op : net.op) {
    for (const auto& in : op.input)
      if (!defined.count(in) && seen.insert(in).second) out.push_back(in);
    defined.insert(op.output.begin(), op.output.end());
  }
  return out;
}

ExternalBlobNames get_external_blob_names(const NetDef& net, const BlobNameSet& lexical_scope) {
  ExternalBlobNames r;
  for (const auto& in : undefined_inputs(net)) {
    if (!lexical_scope.count(in))
      throw InvalidInput(fmt::format(
          "Input blob {} is undefined (net \"{}\" reads it before writing it, and it is not in the scope around "
          "the control operator)",
          in, net.name));
    r.inputs.insert(in);
  }
  for (const auto& op : net.op)
    for (const auto& out : op.output)
      if (lexical_scope.count(out)) r.outputs.insert(out);
  return r;
}

void add_if_op(Net& if_net, const BlobRef& cond_blob, const BlobNameSet& lexical_scope, const NetDef& then_net,
               const std::optional<NetDef>& else_net) {
  append_to(if_net, if_ops(cond_blob.name(), lexical_scope, then_net, else_net,
                           [&](const std::string& suffix) { return if_net.next_name(suffix).name(); }));
}

void add_if_op(NetDef& if_net, const std::string& cond_blob, const BlobNameSet& lexical_scope, const NetDef& then_net,
               const std::optional<NetDef>& else_net) {
  append_to(if_net, if_ops(cond_blob, lexical_scope, then_net, else_net, def_scoped_name(if_net)));
}

void add_while_op(Net& while_net, const BlobRef& cond_blob, const BlobNameSet& lexical_scope,
                  const NetDef& loop_body_net, const std::optional<NetDef>& condition_body_net) {
  append_to(while_net, while_ops(cond_blob.name(), lexical_scope, loop_body_net, condition_body_net,
                                 [&](const std::string& suffix) { return while_net.next_name(suffix).name(); }));
}

void add_while_op(NetDef& while_net, const std::string& cond_blob, const BlobNameSet& lexical_scope,
                  const NetDef& loop_body_net, const std::optional<NetDef>& condition_body_net) {
  append_to(while_net,
            while_ops(cond_blob, lexical_scope, loop_body_net, condition_body_net, def_scoped_name(while_net)));
}

NetDef merge_nets(const std::vector<NetDef>& nets, const BlobNameSet& outer_blob_names) {
  if (nets.empty()) throw InvalidInput("merge_nets: no nets to merge");
  NetDef merged = nets.front();
  // What the merged net declares or computes so far, and its external outputs, kept up to date
  // net by net (rebuilding them for every net made merging n nets quadratic).
  std::unordered_set<std::string> known(merged.external_input.begin(), merged.external_input.end());
  for (const auto& op : merged.op) known.insert(op.output.begin(), op.output.end());
  std::unordered_set<std::string> outputs(merged.external_output.begin(), merged.external_output.end());
  for (std::size_t i = 1; i < nets.size(); ++i) {
    // Net.AppendNet: external inputs the merged net neither declares nor computes, then the ops.
    for (const auto& e : nets[i].external_input)
      if (known.insert(e).second) merged.external_input.push_back(e);
    for (const auto& o : nets[i].external_output)
      if (outputs.insert(o).second) merged.external_output.push_back(o);
    merged.op.insert(merged.op.end(), nets[i].op.begin(), nets[i].op.end());
    for (const auto& op : nets[i].op) known.insert(op.output.begin(), op.output.end());
  }
  // A blob written by a nested block is its external output; here it may be purely local.
  std::erase_if(merged.external_output, [&](const std::string& o) { return !outer_blob_names.count(o); });
  return merged;
}

std::optional<Net> merge_nets(const std::vector<NetBuilderChild>& children, const BlobNameSet& outer_blob_names) {
  if (children.empty()) return std::nullopt;
  std::vector<NetDef> defs;
  defs.reserve(children.size());
  for (const auto& child : children) {
    if (std::holds_alternative<ExecutionStep>(child))
      throw InvalidInput(
          "merge_nets: an ExecutionStep cannot be merged into a control-op net (expected a Net or a "
          "NetBuilder with control ops)");
    if (const NetBuilder* nb = std::get_if<NetBuilder>(&child)) {
      NetBuilder b = *nb;
      if (!b.use_control_ops())
        throw InvalidInput(
            fmt::format("Merging of NetBuilder supported only for control ops (NetBuilder ({}))", b.name()));
      const auto& nets = b.get();
      if (nets.size() != 1 || !std::holds_alternative<Net>(nets.front()))
        throw InvalidInput(
            fmt::format("Invalid control op net builder ({}): expected exactly one net, it has {} "
                        "children",
                        b.name(), nets.size()));
      defs.push_back(std::get<Net>(nets.front()).proto());
      continue;
    }
    const Net& n = std::get<Net>(child);
    for (const char* key : {kTaskSetup, kTaskInstanceSetup, kLocalSetup, kReportStep}) {
      if (!n.get_attributes(key).empty())
        throw InvalidInput(fmt::format(
            "Net \"{}\" carries a {} block (ops::task_init/task_exit/task_instance_*/local_*/task_reporter), which "
            "cannot be used inside a control-op block (IfNet/Else/WhileNet/Condition): its nets are merged into "
            "one operator's net",
            n.name(), key));
    }
    defs.push_back(n.proto());
  }
  return Net::from_proto(merge_nets(defs, outer_blob_names), /*unique_name=*/false);
}

}  // namespace moka
