// DSL control blocks built from control operators (Caffe2's `ops.IfNet`, `ops.Else`, `ops.WhileNet`,
// `ops.Condition`): each block becomes one net holding an If or While operator with lexically scoped branches.
#pragma once

#include <concepts>
#include <functional>
#include <string>
#include <utility>

#include "moka/builder/ops.h"

namespace moka::ops {

namespace detail {
NetBuilder make_if_net(const BlobRef& cond, const std::function<void()>& body, const std::string& name);
NetBuilder make_else(const std::function<void()>& body, const std::string& name);
NetBuilder make_while_net(const std::function<void()>& body, const std::string& name);
BlobRef make_condition(const std::function<void()>& body, const std::string& name);
}  // namespace detail

/// Optional arguments of ops::IfNet, ops::Else, ops::WhileNet and ops::Condition.
struct ControlNetOptions {
  std::string name{};  ///< relative name of the block's builder (its nets are `<name>/if_net`, ...)
};

/// @brief Adds a conditional block run by an `If` operator (Caffe2's `ops.IfNet` / `_RunIfNet`).
///
/// body runs at once in a control-op builder (NetBuilderOptions::use_control_ops): it may add
/// operators, nets and other control-op blocks (IfNet/Else/WhileNet), but no loop, If, stop guard,
/// step or stop. When it returns, its nets are merged into the then-branch and a net
/// `<block>/if_net` is added: `CreateScope` + `If(cond, then_net = Do(branch))`. The branch runs
/// in a scope of its own: blobs that exist in the enclosing builder's lexical scope when the
/// block is made are read and written in place; blobs first created inside the branch are local
/// to it and gone afterwards. An empty body gives an empty then-branch. Returns the block's
/// builder (its one child is the generated net).
///
/// @code
///   moka::BlobRef y = moka::ops::Const(0);
///   moka::ops::IfNet(moka::ops::LT({x0, x1}), [&] {
///     moka::BlobRef local = moka::ops::Const(900);          // gone after the If
///     moka::ops::Add({moka::ops::Const(100), local}, {y});  // y = 1000, visible outside
///   });
///   moka::ops::Else([&] { moka::ops::Const(-1, {.blob_out = y}); });
/// @endcode
/// Errors (InvalidInput): outside a builder ("No active NetBuilder."); an empty condition; the
/// branch reads a blob that is neither created in it nor in scope ("Input blob X is undefined");
/// a non-control-op child ("Expected Net or NetBuilder with control ops ...") or a stop
/// ("Stop blobs are not used with control operators ...") inside.
/// Thread-safety: as NetBuilder.
template <std::invocable F>
NetBuilder IfNet(const BlobRef& cond, F&& body, const ControlNetOptions& options = {}) {
  return detail::make_if_net(
      cond, [&body] { body(); }, options.name);
}

/// @brief Adds the else-branch of the ops::IfNet just before it (Caffe2's `ops.Else` /
/// `_RunElseNet`): the IfNet's net is replaced by `<block>/if_else_net`, an `If` with both
/// branches. The branch's blobs are scoped as the then-branch's. An empty body leaves the IfNet
/// as it was. Returns the IfNet's builder.
///
/// Errors (InvalidInput): not immediately after an IfNet of the same builder, or a second Else
/// for one IfNet ("Invalid use of Else builder: ..."), and the errors of IfNet.
template <std::invocable F>
NetBuilder Else(F&& body, const ControlNetOptions& options = {}) {
  return detail::make_else([&body] { body(); }, options.name);
}

/// @brief Adds a loop run by a `While` operator (Caffe2's `ops.WhileNet` / `_RunWhileNet`).
///
/// body must start with ops::Condition, whose last operator's single output is the loop
/// condition; the rest of body is the loop body. When body returns a net `<block>/while_net` is
/// added: the condition runs before the first iteration and after every one, and the body runs
/// while it is true. Condition and body each run in a scope of their own (see ops::IfNet): only
/// blobs in the enclosing lexical scope (and the condition blob) are visible afterwards. Returns
/// the block's builder.
///
/// @code
///   moka::BlobRef x = moka::ops::Const(0), y = moka::ops::Const(0);
///   moka::ops::WhileNet([&] {
///     moka::ops::Condition([&] {
///       moka::ops::Add({x, moka::ops::Const(1)}, {x});
///       moka::ops::LT({x, moka::ops::Const(7)});
///     });
///     moka::ops::Add({x, y}, {y});   // afterwards x == 7, y == 21
///   });
/// @endcode
/// Errors (InvalidInput): no Condition ("Condition builder must be specified in While op"), and
/// the errors of IfNet.
/// Thread-safety: as NetBuilder.
template <std::invocable F>
NetBuilder WhileNet(F&& body, const ControlNetOptions& options = {}) {
  return detail::make_while_net([&body] { body(); }, options.name);
}

/// @brief The condition of the enclosing ops::WhileNet (Caffe2's `ops.Condition` /
/// `_RunWhileCondition`); returns the condition blob: the single output of body's last operator.
///
/// Errors (InvalidInput): not directly inside a WhileNet ("Use of Condition outside of
/// WhileNet"), a second one ("Multiple loop condition builders specified"), after body
/// operators ("Condition definition must be specified before the loop's body"), a body without
/// operators or whose last operator has not exactly one output ("Invalid condition net ..."),
/// and the errors of IfNet.
template <std::invocable F>
BlobRef Condition(F&& body, const ControlNetOptions& options = {}) {
  return detail::make_condition([&body] { body(); }, options.name);
}

}  // namespace moka::ops
