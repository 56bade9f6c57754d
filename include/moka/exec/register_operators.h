// register_all_operators: registers the operator families of the layers above ops (storage's Save/Load/DBExists,
// exec's control operators) in OperatorRegistry::global(); run_operator_once, which sees every operator.
#pragma once

namespace moka {

class Workspace;
struct OperatorDef;

/// @brief Registers every operator family that the ops layer cannot reach: the storage layer's Save, Load
/// and DBExists (register_storage_operators) and exec's If, While, Do, CreateScope, HasScope
/// (register_control_operators). The built-in families of the ops layer register themselves on first use of
/// the registry. Idempotent and thread-safe; SimpleNet's constructor, check_plan and the builder's Net::op
/// call it, so any net or plan can use every operator. Call it yourself before listing or looking up
/// schemas in OperatorRegistry::global() directly.
void register_all_operators();

/// @brief Constructs and runs one operator in ws (Caffe2's RunOperatorOnce); any registered type, those of
/// register_all_operators() included. RuntimeError when the operator's run returns false.
void run_operator_once(Workspace& ws, const OperatorDef& def);

}  // namespace moka
