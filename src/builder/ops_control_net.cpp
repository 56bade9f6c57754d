// The DSL's control-op blocks: ops::IfNet, ops::Else, ops::WhileNet and ops::Condition (Caffe2's _RunIfNet,
// _RunElseNet, _RunWhileNet and _RunWhileCondition), built on control-op NetBuilders and control_ops_util.
#include "moka/builder/ops_control_net.h"

#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "moka/builder/control_ops_util.h"
#include "moka/core/error.h"

namespace moka::ops {

namespace {

// What an IfNet block keeps for the Else that may follow it (_RunIfNet's fields).
struct IfNetData final : NetBuilderExtension {
  BlobRef cond;
  std::optional<Net> then_net;  // set once the then-branch is built
  bool has_else = false;
};

// What a WhileNet block learns from its Condition (_RunWhileNet._cond_builder).
struct WhileNetData final : NetBuilderExtension {
  bool has_condition = false;
  std::optional<BlobRef> cond_blob;
  std::optional<Net> cond_net;
};

// Takes a finished block's children and merges them into one net over the block's initial scope
// (Caffe2: `_children = self._children; self._reset_children(); merge_nets(_children, self._lexical_scope)`).
std::optional<Net> take_merged_children(NetBuilder& block) {
  std::vector<NetBuilderChild> children = block.children();
  block.reset_children();
  return merge_nets(children, block.lexical_scope());
}

}  // namespace

namespace detail {

NetBuilder make_if_net(const BlobRef& cond, const std::function<void()>& body, const std::string& name) {
  NetBuilder& parent = active_builder("IfNet");
  if (cond.empty())
    throw InvalidInput("Conditional blob is not specified for an If net (ops::IfNet got an empty BlobRef)");
  NetBuilder block({.name = name, .use_control_ops = true});
  auto data = std::make_shared<IfNetData>();
  data->cond = cond;
  block.set_extension(data);
  parent.add(block);
  block.build(body, BuildHooks{.on_exit = [&] {
                std::optional<Net> then_net = take_merged_children(block);
                if (!then_net) then_net = Net("empty_then_net");
                Net if_net("if_net");
                add_if_op(if_net, cond, block.lexical_scope(), then_net->proto());
                data->then_net = then_net;
                block.reset_children({if_net});
              }});
  return block;
}

NetBuilder make_else(const std::function<void()>& body, const std::string& name) {
  NetBuilder& parent = active_builder("Else");
  std::optional<NetBuilder> if_block;
  IfNetData* data = nullptr;
  if (!parent.children().empty()) {
    if (const NetBuilder* last = std::get_if<NetBuilder>(&parent.children().back())) {
      data = dynamic_cast<IfNetData*>(last->extension());
      if (data) if_block = *last;
    }
  }
  if (!data)
    throw InvalidInput(
        fmt::format("Invalid use of Else builder: ops::Else must immediately follow an ops::IfNet in the same builder "
                    "(NetBuilder ({}))",
                    parent.name()));
  if (!data->then_net)
    throw InvalidInput(
        fmt::format("Invalid use of Else builder: the ops::IfNet before it ({}) did not complete", if_block->name()));
  if (data->has_else)
    throw InvalidInput(fmt::format(
        "Invalid use of Else builder: the ops::IfNet before it ({}) already has an ops::Else", if_block->name()));
  data->has_else = true;
  // Not a child of parent: it rewrites the IfNet block instead (the parent's last child stays the IfNet).
  NetBuilder block({.name = name, .use_control_ops = true});
  block.build(body, BuildHooks{.on_exit = [&] {
                std::optional<Net> else_net = take_merged_children(block);
                if (!else_net) return;  // an empty Else keeps the then-only If
                Net if_else_net("if_else_net");
                add_if_op(if_else_net, data->cond, block.lexical_scope(), data->then_net->proto(), else_net->proto());
                if_block->reset_children({if_else_net});
              }});
  return *if_block;
}

NetBuilder make_while_net(const std::function<void()>& body, const std::string& name) {
  NetBuilder& parent = active_builder("WhileNet");
  NetBuilder block({.name = name, .use_control_ops = true});
  auto data = std::make_shared<WhileNetData>();
  block.set_extension(data);
  parent.add(block);
  block.build(body, BuildHooks{.on_exit = [&] {
                if (!data->cond_net)
                  throw InvalidInput(
                      fmt::format("Condition builder must be specified in While op (ops::WhileNet ({}) needs "
                                  "ops::Condition as the first thing in its body)",
                                  block.name()));
                std::optional<Net> loop_body = take_merged_children(block);
                if (!loop_body) loop_body = Net("empty_loop_body_net");
                Net while_net("while_net");
                add_while_op(while_net, *data->cond_blob, block.lexical_scope(), loop_body->proto(),
                             data->cond_net->proto());
                block.reset_children({while_net});
              }});
  return block;
}

BlobRef make_condition(const std::function<void()>& body, const std::string& name) {
  NetBuilder* parent = NetBuilder::current(false);
  WhileNetData* data = parent ? dynamic_cast<WhileNetData*>(parent->extension()) : nullptr;
  if (!data)
    throw InvalidInput(
        "Use of Condition outside of WhileNet (ops::Condition must be called directly inside an ops::WhileNet body)");
  if (data->has_condition)
    throw InvalidInput(
        fmt::format("Multiple loop condition builders specified (ops::WhileNet ({}) already has an ops::Condition)",
                    parent->name()));
  if (!parent->children().empty())
    throw InvalidInput(fmt::format(
        "Condition definition must be specified before the loop's body (ops::WhileNet ({}) already has body "
        "operators)",
        parent->name()));
  data->has_condition = true;
  // Not a child of the WhileNet: the While operator runs it.
  NetBuilder block({.name = name, .use_control_ops = true});
  block.build(body, BuildHooks{.on_exit = [&] {
                std::optional<Net> cond_net = take_merged_children(block);
                if (!cond_net)
                  throw InvalidInput("Invalid loop condition specified: the ops::Condition body added no operators");
                const NetDef& def = cond_net->proto();
                if (def.op.empty())
                  throw InvalidInput(fmt::format("Invalid condition net \"{}\": it has no operators", def.name));
                const OperatorDef& last = def.op.back();
                if (last.output.size() != 1)
                  throw InvalidInput(
                      fmt::format("Invalid condition net \"{}\": its last operator ({}) must have exactly one "
                                  "output, the condition blob; it has {}",
                                  def.name, last.type, last.output.size()));
                data->cond_blob = BlobRef(last.output.front());
                data->cond_net = cond_net;
                block.reset_children({*cond_net});
              }});
  return *data->cond_blob;
}

}  // namespace detail

}  // namespace moka::ops
