// Caffe2's control_ops_util (add_if_op, add_while_op, get_external_blob_names) and
// NetBuilder.merge_nets: the definitions behind ops::IfNet / ops::WhileNet, on NetDefs and Nets.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/defs/operator_def.h"

namespace moka {

/// @brief The blob names a net uses (Caffe2's `Net.UsedBlobNames()`): its operators' inputs and
/// outputs and its external inputs and outputs.
BlobNameSet used_blob_names(const NetDef& net);

/// @brief The blobs a net reads before any of its operators writes them (Caffe2's
/// `core.get_undefined_blobs(core.get_ssa(net))`), in order of first use.
std::vector<std::string> undefined_inputs(const NetDef& net);

/// What a control-op branch reads from and writes to the scope around it.
struct ExternalBlobNames {
  BlobNameSet inputs;   ///< read before written: must exist outside
  BlobNameSet outputs;  ///< written, and visible outside (in the lexical scope)
};

/// @brief Caffe2's `get_external_blob_names(net, lexical_scope)`: the net's undefined inputs
/// (each must be in lexical_scope, else InvalidInput "Input blob X is undefined") and the
/// outputs of its operators whose names are in lexical_scope.
ExternalBlobNames get_external_blob_names(const NetDef& net, const BlobNameSet& lexical_scope);

/// @brief Caffe2's `add_if_op`: appends to if_net `CreateScope` for each branch and
/// `If([cond, inputs..., scopes...], [outputs..., scopes...], then_net=Do(then), else_net=Do(else))`,
/// and declares the If's outputs as external outputs of if_net.
///
/// Blobs of a branch whose names are in lexical_scope (and blobs it reads first) are the outer
/// blobs, read and written in place; every other blob of the branch lives in the branch's scope
/// (blob `<if_net>/workspace_if_then` or `_else`) and is gone afterwards. Names are listed in
/// sorted order, so the result is deterministic.
///
/// @code
///   moka::Net if_net("if_net");
///   moka::add_if_op(if_net, cond, {"x", "y"}, then_net.proto(), else_net.proto());
/// @endcode
/// Errors (InvalidInput): a branch reads a blob not in lexical_scope ("Input blob X is
/// undefined"); an empty condition.
void add_if_op(Net& if_net, const BlobRef& cond_blob, const BlobNameSet& lexical_scope, const NetDef& then_net,
               const std::optional<NetDef>& else_net = std::nullopt);
/// add_if_op on a bare NetDef (no schema checks; inputs not defined earlier in if_net become its
/// external inputs, as core.Net would make them).
void add_if_op(NetDef& if_net, const std::string& cond_blob, const BlobNameSet& lexical_scope, const NetDef& then_net,
               const std::optional<NetDef>& else_net = std::nullopt);

/// @brief Caffe2's `add_while_op`: appends to while_net the scopes and
/// `While([cond, ...], [...], loop_net=Do(body, copy_external_blobs), cond_net=Do(condition))`.
///
/// The body's outer blobs are inputs as well as outputs (the loop may not run). With a
/// condition net — run before the first iteration and after each one — it must write cond_blob
/// (InvalidInput "Condition net does not write into condition blob"); cond_blob is then an
/// output, initialised to false first when it is not in lexical_scope.
void add_while_op(Net& while_net, const BlobRef& cond_blob, const BlobNameSet& lexical_scope,
                  const NetDef& loop_body_net, const std::optional<NetDef>& condition_body_net = std::nullopt);
/// add_while_op on a bare NetDef (as add_if_op's NetDef overload).
void add_while_op(NetDef& while_net, const std::string& cond_blob, const BlobNameSet& lexical_scope,
                  const NetDef& loop_body_net, const std::optional<NetDef>& condition_body_net = std::nullopt);

/// @brief Caffe2's `NetBuilder.merge_nets` on definitions: the first net with the others'
/// operators appended in order (Net.AppendNet: their external inputs not yet defined are added,
/// external outputs joined), then only the external outputs in outer_blob_names kept.
/// InvalidInput when nets is empty.
NetDef merge_nets(const std::vector<NetDef>& nets, const BlobNameSet& outer_blob_names);

/// @brief Caffe2's `NetBuilder.merge_nets` on a builder's children: nets, and control-op
/// builders (frozen here) that each hold exactly one net. nullopt when there are no children.
///
/// The result is a new Net with the first net's name (the children are not changed). Errors
/// (InvalidInput): an ExecutionStep or a builder that is not a control-op builder ("Merging of
/// NetBuilder supported only for control ops"), a control-op builder without exactly one net
/// ("Invalid control op net builder"), and a net carrying setup or report blocks
/// (ops::task_init, ops::task_reporter, ...), whose work a merged net cannot carry.
std::optional<Net> merge_nets(const std::vector<NetBuilderChild>& children, const BlobNameSet& outer_blob_names);

}  // namespace moka
