// Control operators If, While, Do, CreateScope, HasScope (Caffe2 if_op, while_op, do_op, create_scope_op)
// and the WorkspaceStack scope object. They run nested SimpleNets, hence they live in the exec layer.
#include "moka/exec/control_ops.h"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "exec/fiber.h"
#include "moka/core/error.h"
#include "moka/exec/simple_net.h"
#include "moka/operators/registry.h"

namespace moka {

namespace detail {

// One child workspace of a Do operator's workspace, seeing only the forwarded blobs, with the nets
// instantiated in it (once each, keyed by the identity of their shared NetDef).
struct ScopeFrame {
  ScopeFrame(Workspace* parent_ws, Workspace::ForwardMap fwd)
      : parent(parent_ws), bindings(std::move(fwd)), ws(std::make_unique<Workspace>(parent_ws, bindings)) {}
  ~ScopeFrame() { nets.clear(); }  // operators point at the workspace's blobs: nets go first
  ScopeFrame(const ScopeFrame&) = delete;
  ScopeFrame& operator=(const ScopeFrame&) = delete;

  SimpleNet* net_for(const std::shared_ptr<const NetDef>& def) {
    for (auto& [d, n] : nets)
      if (d == def) return n.get();
    auto net = std::make_unique<SimpleNet>(*def, ws.get());
    nets.emplace_back(def, std::move(net));
    // Local blobs only come into being when operators bind their outputs, i.e. here.
    locals.clear();
    for (const auto& name : ws->local_blobs()) locals.push_back(ws->get_blob(name));
    return nets.back().second.get();
  }

  // Adds the forwarded names a reusing Do needs (Caffe2 reuseLastForwardWorkspace). A name the
  // frame already has for something else is an error: the two Do operators disagree.
  bool adopt(const Workspace::ForwardMap& more) {
    Workspace::ForwardMap missing;
    for (const auto& [inner, outer] : more) {
      auto it = bindings.find(inner);
      if (it != bindings.end()) {
        if (it->second != outer)
          throw InvalidInput(fmt::format(
              "Do: cannot reuse the scope's workspace: inner blob \"{}\" is bound to \"{}\" there, not \"{}\"", inner,
              it->second, outer));
      } else if (ws->get_blob(inner) != nullptr) {
        throw InvalidInput(
            fmt::format("Do: cannot reuse the scope's workspace: inner blob \"{}\" is a local blob there", inner));
      } else {
        missing.emplace(inner, outer);
      }
    }
    if (!missing.empty()) {
      ws->add_blob_mapping(parent, missing);
      bindings.insert(missing.begin(), missing.end());
    }
    return true;
  }

  // Empties every local blob, keeping the Blob objects the instantiated operators point at.
  void reset_locals() noexcept {
    for (Blob* b : locals) b->reset();
    dirty = false;
  }

  Workspace* const parent;
  Workspace::ForwardMap bindings;  // grows when a reusing Do adopts the frame
  std::unique_ptr<Workspace> ws;
  std::vector<std::pair<std::shared_ptr<const NetDef>, std::unique_ptr<SimpleNet>>> nets;
  std::vector<Blob*> locals;
  bool dirty = false;                 // locals may hold values of an earlier run
  std::atomic<bool> orphaned{false};  // the Do operator that created it is gone: never adopt it again
};

struct ScopeAccess {
  static std::shared_ptr<ScopeFrame> top(const WorkspaceStack& s) {
    std::lock_guard lk(s.mu_);
    return s.top_.lock();
  }
  static void set_top(WorkspaceStack& s, const std::shared_ptr<ScopeFrame>& f) {
    std::lock_guard lk(s.mu_);
    s.top_ = f;
  }
};

}  // namespace detail

WorkspaceStack::WorkspaceStack() = default;
WorkspaceStack::~WorkspaceStack() = default;

void WorkspaceStack::clear() {
  std::lock_guard lk(mu_);
  top_.reset();
}

bool WorkspaceStack::empty() const {
  std::lock_guard lk(mu_);
  return top_.expired();
}

std::shared_ptr<Workspace> WorkspaceStack::current_workspace() const {
  auto frame = detail::ScopeAccess::top(*this);
  if (!frame) return nullptr;
  Workspace* ws = frame->ws.get();
  return std::shared_ptr<Workspace>(std::move(frame), ws);  // aliasing: keeps the frame alive
}

namespace {

using detail::ScopeAccess;
using detail::ScopeFrame;

// The NetDef of a net argument; the schema has checked the form, this guards direct construction.
std::shared_ptr<const NetDef> net_arg(const OperatorBase& op, const char* name, bool required) {
  const Argument* a = op.args().find(name);
  if (a == nullptr || !a->n) {
    if (required) throw InvalidInput(fmt::format("{}: argument \"{}\" (a net) is required", op.type(), name));
    return nullptr;
  }
  return a->n;
}

// Input 0 of If and While: a bool tensor with exactly one element (shape [] or [1]).
bool read_condition(const OperatorBase& op) {
  const Blob& b = op.input_blob(0);
  const Tensor* t = b.tensor_or_null();
  if (t != nullptr && t->dtype() == DType::Bool && t->numel() == 1) return t->data<bool>()[0];
  std::string got;
  if (!b.is_initialized())
    got = "an empty blob";
  else if (t == nullptr)
    got = fmt::format("{} (not a tensor)", b.type_name());
  else if (!t->defined())
    got = "a tensor that was never filled";
  else
    got = t->describe();
  throw TypeError(fmt::format("{}: the condition (input 0, \"{}\") must be a bool tensor with one element, got {}",
                              op.type(), op.input_name(0), got));
}

// ---- If ----

class IfOp final : public OperatorBase {
 public:
  IfOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    then_net_ = std::make_unique<SimpleNet>(*net_arg(*this, "then_net", true), ws);
    if (auto else_def = net_arg(*this, "else_net", false)) else_net_ = std::make_unique<SimpleNet>(*else_def, ws);
  }

  bool run() override {
    if (read_condition(*this))
      then_net_->run();
    else if (else_net_)
      else_net_->run();
    return true;
  }

  void cancel() override {
    then_net_->cancel();
    if (else_net_) else_net_->cancel();
  }

 private:
  std::unique_ptr<SimpleNet> then_net_;
  std::unique_ptr<SimpleNet> else_net_;
};

// ---- While ----

class WhileOp final : public OperatorBase {
 public:
  WhileOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    loop_net_ = std::make_unique<SimpleNet>(*net_arg(*this, "loop_net", true), ws);
    if (auto cond_def = net_arg(*this, "cond_net", false)) cond_net_ = std::make_unique<SimpleNet>(*cond_def, ws);
  }

  bool run() override {
    // A cancel() that arrives while the loop runs ends it at the next iteration; it is forgotten
    // once this run is over, so a later run of the same net starts afresh.
    struct Forget {
      std::atomic<bool>& flag;
      ~Forget() { flag.store(false, std::memory_order_relaxed); }
    } forget{cancelled_};
    for (;;) {
      if (cancelled_.load(std::memory_order_relaxed))
        throw Cancelled(fmt::format("While: cancelled while looping over net \"{}\"", loop_net_->name()));
      if (cond_net_) cond_net_->run();
      if (!read_condition(*this)) return true;
      loop_net_->run();
      detail::preempt_point();  // in a fiber: a long loop still lets its siblings run (exec/fiber.h)
    }
  }

  void cancel() override {
    cancelled_.store(true, std::memory_order_relaxed);
    loop_net_->cancel();
    if (cond_net_) cond_net_->cancel();
  }

 private:
  std::unique_ptr<SimpleNet> loop_net_;
  std::unique_ptr<SimpleNet> cond_net_;
  std::atomic<bool> cancelled_{false};
};

// ---- CreateScope / HasScope ----

class CreateScopeOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    Blob& b = output_blob(0);
    if (b.is_type<WorkspaceStack>())
      b.get_checked_mutable<WorkspaceStack>().clear();
    else
      b.emplace<WorkspaceStack>();  // like Caffe2's Output<T>, replaces other contents
    return true;
  }
};

class HasScopeOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const bool has = !input_object<WorkspaceStack>(0).empty();
    output(0) = Tensor::scalar<bool>(has);
    return true;
  }
};

// ---- Do ----

class DoOp final : public OperatorBase {
 public:
  DoOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    net_def_ = net_arg(*this, "net", true);
    reuse_workspace_ = args().get_bool("reuse_workspace", false);
    if (reuse_workspace_ && args().get_bool("copy_external_blobs", false))
      throw InvalidInput("Do: Reuse workspace and copy external blobs simultaneously in Do op");
    const auto inner = args().get_strings("inner_blobs");
    const auto outer_idx = args().get_ints("outer_blobs_idx");
    if (inner.size() != outer_idx.size())
      throw InvalidInput(fmt::format(
          "Do: Invalid blob bindings: different inner/outer blobs lengths ({} inner_blobs, {} outer_blobs_idx)",
          inner.size(), outer_idx.size()));
    const std::vector<std::string> outer = outer_names();
    std::set<std::string> used;
    for (std::size_t k = 0; k < inner.size(); ++k) {
      if (bindings_.count(inner[k]))
        throw InvalidInput(fmt::format("Do: Invalid blob bindings: redefinition of inner blob \"{}\"", inner[k]));
      const int64_t idx = outer_idx[k];
      if (idx < 0 || idx >= static_cast<int64_t>(outer.size()))
        throw InvalidInput(fmt::format(
            "Do: Invalid blob bindings: outer blob index ({}, inner name: \"{}\") is out of bounds [0, {}] (the "
            "operator's inputs then outputs, without the scope blob)",
            idx, inner[k], static_cast<int64_t>(outer.size()) - 1));
      const std::string& name = outer[static_cast<std::size_t>(idx)];
      if (!used.insert(name).second)
        throw InvalidInput(fmt::format("Do: Invalid blob bindings: Reusage of outer name \"{}\"", name));
      bindings_[inner[k]] = name;
    }
    for (const auto& name : outer)
      if (!used.count(name))
        throw InvalidInput(fmt::format(
            "Do: Not all outer names are used in blob bindings: \"{}\" is not bound to an inner blob", name));
    own_ = std::make_shared<ScopeFrame>(ws, bindings_);
    active_frame_ = own_;
    // The net is instantiated now (Caffe2 waits for the first run), so a bad inner net fails
    // before anything runs, like every other net of the plan. With reuse_workspace it may read
    // locals of the workspace it will share, so it waits for its first run, as in Caffe2.
    if (!reuse_workspace_) active_net_ = own_->net_for(net_def_);
  }

  ~DoOp() override { own_->orphaned.store(true); }

  bool run() override {
    WorkspaceStack& stack = scope();
    std::shared_ptr<ScopeFrame> frame;
    if (reuse_workspace_) {
      auto top = ScopeAccess::top(stack);
      // Another Do's frame is adopted only while its creator lives (so its parent is alive and
      // the pointer comparison means identity); our forwarded names are added to it.
      if (top && (top == own_ || (!top->orphaned.load() && top->parent == workspace() && top->adopt(bindings_))))
        frame = std::move(top);
    }
    if (!frame) {
      frame = own_;
      if (frame->dirty) frame->reset_locals();  // a fresh scope: nothing of the previous run survives
    }
    SimpleNet* net = frame->net_for(net_def_);
    std::shared_ptr<ScopeFrame> previous;  // released outside the lock
    {
      std::lock_guard lk(mu_);
      previous = std::exchange(active_frame_, frame);
      active_net_ = net;
    }
    ScopeAccess::set_top(stack, frame);
    frame->dirty = true;
    net->run();
    return true;
  }

  void cancel() override {
    std::lock_guard lk(mu_);
    if (active_net_) active_net_->cancel();
  }

 private:
  // Inputs then outputs, each without the trailing scope blob (Caffe2 checkAndGetOuterNames).
  std::vector<std::string> outer_names() const {
    const auto& in = def().input;
    const auto& out = def().output;
    if (in.empty() || out.empty())
      throw InvalidInput("Do: the last input and the last output must be the scope blob (made by CreateScope)");
    if (in.back() != out.back())
      throw InvalidInput(
          fmt::format("Do: Expected same input/output workspace blob: the last input is \"{}\", the last output \"{}\"",
                      in.back(), out.back()));
    std::vector<std::string> names;
    std::set<std::string> seen_in(in.begin(), in.end() - 1);
    if (seen_in.size() != in.size() - 1) throw InvalidInput("Do: Duplicate input blobs");
    std::set<std::string> seen_out(out.begin(), out.end() - 1);
    if (seen_out.size() != out.size() - 1) throw InvalidInput("Do: Duplicate output blobs");
    names.insert(names.end(), in.begin(), in.end() - 1);
    names.insert(names.end(), out.begin(), out.end() - 1);
    return names;
  }

  WorkspaceStack& scope() {
    Blob& b = output_blob(output_size() - 1);
    if (b.is_type<WorkspaceStack>()) return b.get_checked_mutable<WorkspaceStack>();
    if (!b.is_initialized()) return b.emplace<WorkspaceStack>();  // Caffe2 tolerates a missing CreateScope
    throw TypeError(fmt::format("Do: the scope blob \"{}\" holds {}, expected a WorkspaceStack made by CreateScope",
                                output_name(output_size() - 1), b.type_name()));
  }

  std::shared_ptr<const NetDef> net_def_;
  Workspace::ForwardMap bindings_;
  bool reuse_workspace_ = false;
  std::shared_ptr<ScopeFrame> own_;
  std::mutex mu_;                             // guards active_frame_ and active_net_ against cancel()
  std::shared_ptr<ScopeFrame> active_frame_;  // keeps active_net_ alive
  SimpleNet* active_net_ = nullptr;           // the net of the current or last run
};

void register_all(OperatorRegistry& reg) {
  auto add = [&reg](OpSchema schema, OperatorFactory factory) {
    if (!reg.has(schema.type())) reg.add(std::move(schema), std::move(factory));
  };
  add(OpSchema("If")
          .inputs(1, OpSchema::kUnbounded)
          .outputs(0, OpSchema::kUnbounded)
          .allow_any_inplace()
          .required_arg("then_net", ArgType::Net, "net run when the condition is true")
          .arg("else_net", ArgType::Net, "net run when the condition is false (none: do nothing)")
          .doc("Runs then_net if input 0 (a bool tensor with one element) is true, else else_net. Both nets are "
               "instantiated once, when the If is, in the If's own workspace. The other inputs and the outputs "
               "only declare what the branches read and write. An error inside a branch names the If and the "
               "branch net; cancel() cancels both branches."),
      factory_of<IfOp>());
  add(OpSchema("While")
          .inputs(1, OpSchema::kUnbounded)
          .outputs(0, OpSchema::kUnbounded)
          .allow_any_inplace()
          .required_arg("loop_net", ArgType::Net, "the loop body")
          .arg("cond_net", ArgType::Net, "net computing the condition, run before the first and after every iteration")
          .doc("Runs cond_net (if given), then, while input 0 (a bool tensor with one element, read after every "
               "cond_net run) is true, loop_net followed by cond_net again. Both nets are instantiated once, in the "
               "While's own workspace. The other inputs and the outputs only declare data dependencies. cancel() "
               "cancels both nets and ends the loop at the next iteration with a Cancelled error."),
      factory_of<WhileOp>());
  add(OpSchema("Do")
          .inputs(1, OpSchema::kUnbounded)
          .outputs(1, OpSchema::kUnbounded)
          .allow_any_inplace()
          .required_arg("net", ArgType::Net, "the net to run in the scope")
          .arg("inner_blobs", ArgType::Strings, "names the net uses for the forwarded outer blobs", "[]")
          .arg("outer_blobs_idx", ArgType::Ints,
               "for each inner blob, the index of its outer blob among the inputs then outputs, scope blob excluded",
               "[]")
          .arg("saved_fwd_blobs", ArgType::Strings, "gradient Do only (not supported); accepted and ignored", "[]")
          .arg("reuse_workspace", ArgType::Bool,
               "run in the scope's current workspace (keeping its local blobs) when there is one", "0")
          .arg("copy_external_blobs", ArgType::Bool,
               "Caffe2 kept copies of the forwarded blobs for gradient Do ops; accepted, no effect in moka", "0")
          .doc("Runs `net` in a child workspace that sees only the forwarded blobs: inner_blobs[k] is the "
               "operator's input/output number outer_blobs_idx[k] (inputs first, then outputs, the scope blob "
               "excluded), and every outer blob must be bound. The last input and the last output must both be the "
               "scope blob (a WorkspaceStack made by CreateScope). Every other blob the net creates is local: "
               "invisible outside the Do and emptied before the next run (unless reuse_workspace). The net is "
               "instantiated once, when the Do is (at its first run with reuse_workspace). cancel() cancels it."),
      factory_of<DoOp>());
  add(OpSchema("CreateScope")
          .inputs(0)
          .outputs(1)
          .doc("Puts an empty WorkspaceStack (the scope a Do runs its net in) in the output blob, or clears the "
               "one already there."),
      factory_of<CreateScopeOp>());
  add(OpSchema("HasScope")
          .inputs(1)
          .outputs(1)
          .doc("Writes a bool scalar (shape []): true when a Do has run in the scope (input 0, a WorkspaceStack) "
               "since CreateScope."),
      factory_of<HasScopeOp>());
}

}  // namespace

void register_control_operators() {
  static std::once_flag once;
  std::call_once(once, [] { register_all(OperatorRegistry::global()); });
}

}  // namespace moka
