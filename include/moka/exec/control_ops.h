// Caffe2's control operators If, While, Do, CreateScope and HasScope, and WorkspaceStack: the scope
// object CreateScope puts in a blob and Do runs its nets in (Caffe2 control_ops_util / do_op / if_op).
#pragma once

#include <memory>
#include <mutex>

#include "moka/core/workspace.h"

namespace moka {

namespace detail {
struct ScopeFrame;
struct ScopeAccess;
}  // namespace detail

/// @brief The scope object held by a CreateScope output blob (Caffe2's detail::WorkspaceStack).
///
/// A `Do` operator runs its net in a child workspace of its own workspace that sees only the
/// blobs it forwards (`inner_blobs` → the operator's inputs/outputs); every other blob the net
/// creates lives in that child and is invisible outside the Do — the lexical scoping of Caffe2's
/// IfNet/WhileNet. The scope remembers the child workspace the last Do ran in, so that a Do with
/// `reuse_workspace` can run in it again; CreateScope forgets it (clear()).
///
/// moka differs from Caffe2 here on purpose: Caffe2 pushes a new workspace on the stack at every
/// Do run and never pops it outside gradients, so a Do inside a While loop allocates a workspace
/// per iteration until the next CreateScope. In moka each Do owns one child workspace and its
/// instantiated net, reused run after run with its local blobs emptied first (fresh locals, no
/// growth, no re-instantiation). A Do with `reuse_workspace` runs in the workspace the scope
/// currently holds (when it belongs to the same parent workspace), adding its forwarded names to
/// it. Gradient Do operators (and so `copy_external_blobs`, `saved_fwd_blobs`) have no effect.
///
/// @code
///   Workspace ws;
///   run_operator_once(ws, make_op("CreateScope", {}, {"scope"}));
///   ws.blob("scope").get<WorkspaceStack>().empty();   // true until a Do runs in it
/// @endcode
/// Thread-safety: every method may be called concurrently. Running two Do operators on the same
/// scope at the same time is as unsafe as two operators writing the same blob.
class WorkspaceStack {
 public:
  WorkspaceStack();
  ~WorkspaceStack();
  WorkspaceStack(const WorkspaceStack&) = delete;
  WorkspaceStack& operator=(const WorkspaceStack&) = delete;

  /// Forgets the current workspace: the next Do starts from fresh local blobs (what CreateScope does).
  void clear();
  /// True when no Do has run in this scope since it was created or cleared (Caffe2 HasScope is !empty()).
  bool empty() const;
  /// The child workspace the last Do ran its net in, or null when empty() or when that Do operator
  /// (which owns the child workspace) has been destroyed. For inspection: its local blobs are the
  /// Do's local blobs. The pointer keeps the child alive, not its parent: drop it before that.
  std::shared_ptr<Workspace> current_workspace() const;

 private:
  friend struct detail::ScopeAccess;
  mutable std::mutex mu_;
  std::weak_ptr<detail::ScopeFrame> top_;
};

/// @brief Registers If, While, Do, CreateScope and HasScope with the global operator registry.
///
/// Idempotent and thread-safe (std::call_once). SimpleNet's constructor and check_plan call it,
/// so any net or plan can use the control operators; call it yourself before looking them up in
/// OperatorRegistry::global() directly (e.g. to list schemas).
void register_control_operators();

}  // namespace moka
