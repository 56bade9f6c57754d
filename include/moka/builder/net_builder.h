// moka::NetBuilder (Caffe2's net_builder.NetBuilder): a tree of nets, steps and nested builders
// that becomes one ExecutionStep, plus the net-attribute protocol its setup/report blocks use.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/context.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"

namespace moka {

/// Attribute keys the DSL attaches to nets (Caffe2's Task.TASK_SETUP, Task.TASK_INSTANCE_SETUP,
/// Task.REPORT_STEP and TaskGroup.LOCAL_SETUP).
inline constexpr const char* kTaskSetup = "task_setup";
inline constexpr const char* kTaskInstanceSetup = "task_instance_setup";
inline constexpr const char* kReportStep = "report_step";
inline constexpr const char* kLocalSetup = "local_setup";

/// Optional arguments of NetBuilder (Caffe2's keyword arguments; the `_`-prefixed ones are
/// meant for Task and the DSL's own builders). Members have default initializers so designated
/// initializers may name any subset.
struct NetBuilderOptions {
  /// Relative name: the builder is called `<enclosing builder>/<name>` (either part may be empty).
  std::string name{};
  /// Caffe2's `_fullname`: the whole name, ignoring the enclosing builder. Excludes `name`.
  std::string fullname{};
  /// Caffe2's `_stop_blob_required`: leaving the body without a stop condition is an error.
  bool stop_blob_required = false;
  /// Caffe2's `_stop_blob`: use this blob as the stop blob instead of creating one.
  std::optional<BlobRef> stop_blob{};
  /// Caffe2's `initial_scope`: blobs added to the lexical scope inherited from the enclosing
  /// builder (the names control-op blocks inside may read and write in place).
  std::vector<BlobRef> initial_scope{};
  /// Caffe2's `_use_control_ops` (the builders of ops::IfNet, ops::Else, ops::WhileNet,
  /// ops::Condition): children may only be nets or other control-op builders, stop blobs are
  /// refused, and when the body returns the children are merged into one net. Excludes
  /// stop_blob_required and stop_blob.
  bool use_control_ops = false;
};

/// Blob names as a sorted set (Caffe2's Python sets of names, sorted so that generated nets are
/// deterministic): lexical scopes, the external blobs of control-op branches.
using BlobNameSet = std::set<std::string>;

class NetBuilder;

/// One child of a NetBuilder: a net, a nested builder or a step, in the order they run.
using NetBuilderChild = std::variant<Net, NetBuilder, ExecutionStep>;

namespace detail {
struct NetBuilderState;
}

/// @brief Hooks a specialised builder runs around its body (Caffe2's subclasses' `__enter__`
/// and `__exit__`): both run with the builder active; on_exit only when the body returned
/// normally, before the builder is frozen.
struct BuildHooks {
  std::function<void()> on_enter{};
  std::function<void()> on_exit{};
};

/// @brief Base of the data a specialised builder keeps with its NetBuilder (the fields of
/// Caffe2's NetBuilder subclasses), found again through NetBuilder::extension() — e.g. ops::Else
/// finds the ops::IfNet it follows among the enclosing builder's children.
/// Thread-safety: as NetBuilder.
class NetBuilderExtension {
 public:
  virtual ~NetBuilderExtension();
};

/// @brief Builds one step out of nets, steps and nested builders (Caffe2's `NetBuilder`).
///
/// A builder is a **handle** (copies share one builder; `==` compares identity). Its body — a
/// lambda given to the constructor or to build() — runs at once with the builder active on
/// this thread: `ops::` calls inside it append operators to the builder's *current net*
/// (created on demand, named `<builder name>`, `<builder name>_1`, …), and `ops::loop`,
/// `ops::If`, … add nested builders as children. When the body returns, the builder is frozen:
/// it refuses further changes ("This NetBuilder (N) has been built already.").
///
/// `to_execution_step(builder)` (or listing the builder where a step is expected) makes a step
/// named after the builder whose children are its nets and substeps; if a stop blob was created
/// (`ops::stop_if`, `ops::stop`) the step repeats until the blob is true (`should_stop_blob`),
/// otherwise it runs once.
///
/// @code
///   moka::BlobRef y;
///   moka::NetBuilder nb({.name = "count"}, [&] {
///     moka::BlobRef x = moka::ops::Const(5);
///     y = moka::ops::Const(0);
///     moka::ops::loop([&] {
///       moka::ops::stop_if(moka::ops::EQ({x, moka::ops::Const(0)}));
///       moka::ops::Add({x, moka::ops::Const(-1)}, {x});
///       moka::ops::Add({y, moka::ops::Const(1)}, {y});
///     });
///   });
///   moka::Plan plan("p");
///   plan.add_step(moka::to_execution_step(nb));
///   moka::Workspace ws;
///   moka::run_plan(ws, plan.proto());   // y == 5
/// @endcode
/// Thread-safety: a builder is built by one thread; the active builder is per thread, so
/// distinct builders may be built concurrently on different threads.
class NetBuilder {
 public:
  /// An unnamed builder (named like the enclosing builder, "" at top level).
  NetBuilder();
  /// A builder configured by options; its name is computed now, from the builder active now.
  /// InvalidInput "Cannot set both _fullname and name" when both are given.
  explicit NetBuilder(const NetBuilderOptions& options);
  /// Creates the builder and runs body inside it at once (see build()).
  template <class F>
  requires std::invocable<F&> NetBuilder(const NetBuilderOptions& options, F&& body) : NetBuilder(options) {
    build(std::forward<F>(body));
  }
  /// An unnamed builder whose body runs at once.
  template <class F>
  requires(std::invocable<F&> && !std::is_same_v<std::remove_cvref_t<F>, NetBuilder>) explicit NetBuilder(F&& body)
      : NetBuilder(NetBuilderOptions{}) {
    build(std::forward<F>(body));
  }

  /// @brief Runs body with this builder active (a Python `with builder:` block), then freezes
  /// the builder.
  ///
  /// After a normal return, a builder made with stop_blob_required must have a stop blob
  /// ("This NetBuilder (N) requires a stop condition to be set with `stop` or `stop_if`").
  /// A control-op builder first merges its children into one net (merge_nets of
  /// control_ops_util.h, keeping only the external outputs in its initial lexical scope).
  /// If body throws, the builder is frozen and the exception propagates. A builder that is
  /// already built refuses ("This NetBuilder (N) has been built already.").
  template <class F>
  requires std::invocable<F&> NetBuilder& build(F&& body) {
    run_body([&] { body(); }, BuildHooks{});
    return *this;
  }
  /// build() with hooks around the body: the extension point of specialised builders (loops,
  /// If, stop guards, setup blocks, IfNet/WhileNet).
  NetBuilder& build(const std::function<void()>& body, const BuildHooks& hooks) {
    run_body(body, hooks);
    return *this;
  }

  /// @brief The innermost builder active on this thread.
  ///
  /// None active: nullptr when !required, else InvalidInput
  /// "Context NetBuilder is required but none is active.".
  static NetBuilder* current(bool required = true) { return Context<NetBuilder>::current(required); }

  const std::string& name() const noexcept;

  /// @brief The net that ops are appended to, created (and added as a child) when there is
  /// none or when a name is given (Caffe2's `current_net(name)`).
  Net current_net(const std::optional<std::string>& name = std::nullopt);

  /// @brief Appends a child; a Net becomes the current net, anything else ends it (the next op
  /// goes to a new net). Adding the same Net twice runs it twice. A control-op builder accepts
  /// only nets and control-op builders (InvalidInput "Expected Net or NetBuilder with control
  /// ops ...").
  void add(NetBuilderChild child);

  /// @brief The stop blob, created on first use (Caffe2's `stop_blob()`).
  ///
  /// Created as `<current net>/stop_blob`, set false by `Const(false)` in the current net; if
  /// that net is not the first child, a net `stop_blob_init` that also sets it false is
  /// inserted as the first child, so that every run of the step starts un-stopped.
  /// A control-op builder refuses (InvalidInput "Stop blobs are not used with control operators
  /// ..."), and so does stop_if().
  BlobRef stop_blob();
  /// The stop blob if one exists, without creating it (Caffe2's `_stop_blob`).
  const std::optional<BlobRef>& existing_stop_blob() const noexcept;
  /// Whether leaving the body without a stop blob is an error.
  bool stop_blob_required() const noexcept;

  /// @brief `Or(stop_blob, blob) -> stop_blob` in the current net, then ends the current net, so
  /// the executor's check after every net sees the new value before the next op runs.
  void stop_if(const BlobRef& blob);

  /// Freezes this builder and its nested builders and returns the children (Caffe2's `get()`).
  const std::vector<NetBuilderChild>& get();
  /// Freezes this builder and its nested builders (the nets themselves stay mutable).
  void freeze();
  bool is_frozen() const noexcept;

  /// The children so far, without freezing (get() freezes).
  const std::vector<NetBuilderChild>& children() const noexcept;
  /// @brief Replaces the children (Caffe2's `_reset_children()` followed by assigning
  /// `_children`), even of a built builder: control-op blocks replace their body by the net that
  /// runs it, and ops::Else rewrites the IfNet it follows. The last child becomes the current net
  /// if it is a Net; the lexical scope goes back to the initial one.
  void reset_children(std::vector<NetBuilderChild> children = {});

  /// Whether this is a control-op builder (NetBuilderOptions::use_control_ops).
  bool use_control_ops() const noexcept;
  /// @brief The blob names visible to control-op blocks built inside this builder (Caffe2's
  /// `_lexical_scope`): the enclosing builder's scope when this one was made, the initial scope,
  /// and the names used by the nets (and the scopes of the control-op builders) added since.
  /// Brought up to date when a nested builder is made (which is when Caffe2's scope is read) and
  /// by update_lexical_scope(); children() reset by reset_children() leave the initial scope.
  const BlobNameSet& lexical_scope() const noexcept;
  /// Recomputes lexical_scope() from the children (Caffe2's `_update_lexical_scope()`).
  void update_lexical_scope();

  /// Attaches the data of a specialised builder (replacing any earlier one).
  void set_extension(std::shared_ptr<NetBuilderExtension> extension);
  /// The data attached by set_extension(), or nullptr.
  NetBuilderExtension* extension() const noexcept;

  friend bool operator==(const NetBuilder& a, const NetBuilder& b) noexcept { return a.state_ == b.state_; }

 private:
  void run_body(const std::function<void()>& body, const BuildHooks& hooks);
  void check_mutable() const;
  void check_no_control_ops(const char* what) const;

  std::shared_ptr<detail::NetBuilderState> state_;
};

/// @brief The step a builder stands for (Caffe2's `core.to_execution_step(builder)`): named
/// default_name or else the builder's name, with the builder's children (all nets: as the
/// step's nets; otherwise each child a substep) and `should_stop_blob` = the stop blob, if any.
/// Freezes the builder. Also what execution_step() and StepOrNet use for builders in lists.
ExecutionStep to_execution_step(NetBuilder& builder, const std::string& default_name = {});

/// @brief A net attribute that contributes setup and exit work when a Task or TaskGroup is
/// compiled (Caffe2's objects with `setup(init_net)` / `exit(exit_net)`, docs/tasks.md §3.4).
///
/// The compiler calls setup() with a shared init net and exit() with a shared exit net; an
/// attribute may append operators to them and/or return nets and steps to run. Each attribute is
/// used once per compilation: the compiler skips attributes whose setup_used() is true and marks
/// the ones it used. setup_target(), when not null, restricts the attribute to that target
/// (Caffe2's `_setup_target`).
/// Thread-safety: used by the one thread that compiles.
class SetupAttribute : public NetAttribute {
 public:
  /// Work to run before the target; may append ops to init_net.
  virtual std::vector<StepOrNet> setup(Net& init_net) = 0;
  /// Work to run after the target; may append ops to exit_net.
  virtual std::vector<StepOrNet> exit(Net& exit_net) = 0;
  /// @brief A node's LOCAL_SETUP (TaskGroup::tasks_by_node): `first` for the first node whose tasks use
  /// the attribute, which gets setup(); every later node gets what this returns (by default nothing).
  /// An object that lives on one node and is used from others (a Queue) connects them here.
  virtual std::vector<StepOrNet> setup_on_node(Net& init_net, const std::string& node, bool first) {
    (void)node;
    return first ? setup(init_net) : std::vector<StepOrNet>{};
  }

  bool setup_used() const noexcept { return setup_used_; }
  void set_setup_used(bool used = true) noexcept { setup_used_ = used; }
  const void* setup_target() const noexcept { return setup_target_; }
  void set_setup_target(const void* target) noexcept { setup_target_ = target; }

 private:
  bool setup_used_ = false;
  const void* setup_target_ = nullptr;
};

/// @brief The block of an `ops::task_init`/`task_exit`/`task_instance_*`/`local_*` call
/// (Caffe2's `_SetupBuilder`): a NetBuilder whose step is returned by setup() (Init) or by
/// exit() (Exit). Its ops are not children of the enclosing builder.
/// Thread-safety: as SetupAttribute.
class SetupBuilder final : public SetupAttribute {
 public:
  enum class Type { Init, Exit };
  SetupBuilder(Type type, NetBuilder builder) : type_(type), builder_(std::move(builder)) {}

  /// Init: `{to_execution_step(builder())}`; Exit: nothing.
  std::vector<StepOrNet> setup(Net& init_net) override;
  /// Exit: `{to_execution_step(builder())}`; Init: nothing.
  std::vector<StepOrNet> exit(Net& exit_net) override;

  Type type() const noexcept { return type_; }
  NetBuilder& builder() noexcept { return builder_; }

 private:
  Type type_;
  NetBuilder builder_;
};

/// @brief A periodic step attached to a net under kReportStep by `ops::task_reporter` (Caffe2
/// attached the ExecutionStep itself; `_report_step_used` is used()).
/// Thread-safety: used by the one thread that compiles.
class ReportStep final : public NetAttribute {
 public:
  explicit ReportStep(ExecutionStep step) : step_(std::move(step)) {}
  ExecutionStep& step() noexcept { return step_; }
  bool used() const noexcept { return used_; }
  void set_used(bool used = true) noexcept { used_ = used; }

 private:
  ExecutionStep step_;
  bool used_ = false;
};

}  // namespace moka
