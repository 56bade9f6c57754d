// moka::ExecutionStep (Caffe2's Python core.ExecutionStep) and the execution_step() /
// to_execution_step() helpers that build steps from nets, steps and lists of both.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/net.h"
#include "moka/defs/plan_def.h"

namespace moka {

namespace detail {
struct StepState;
}

class Plan;

/// @brief Builds one execution step: either nets or substeps, plus iteration settings.
///
/// ExecutionStep is a **handle**: copies refer to the same step and `==` compares identity. A
/// step that has been added to a plan or to another step is *used*: every mutator except
/// run_every_millis() then throws InvalidInput "Cannot mutate a step that has already been
/// added to a plan/step.". The step remembers the Net objects it uses (its *net dict*, by name,
/// in insertion order, including those of its substeps and its report net); two different
/// Net objects with the same name are refused ("Different nets with same name: X").
///
/// @code
///   moka::Net net("count");
///   net.op("Add", {"x", "one"}, {"x"});
///   moka::ExecutionStep loop("loop");
///   loop.add_net(net).set_iter(10);
///   moka::ExecutionStep outer("outer");
///   outer.add_substep(loop).set_concurrent_substeps(false);
///   moka::ExecutionStepDef def = outer.proto();
/// @endcode
/// Thread-safety: a step is built by one thread at a time; automatic step names are
/// thread-safe.
class ExecutionStep {
 public:
  /// A step called name; an empty name gets the next free automatic name (`step`, `step_1`, …,
  /// unique in the process). Explicit names are kept as given, even when repeated.
  explicit ExecutionStep(std::string name = {});
  /// Caffe2's `ExecutionStep(name, nets, num_iter)`: adds each net once (a net listed twice is
  /// listed once here, unlike add_net) and sets num_iter when given.
  ExecutionStep(std::string name, const std::vector<Net>& nets, std::optional<int64_t> num_iter = {});

  const std::string& name() const noexcept;

  ExecutionStep& set_iter(int64_t num_iter);
  ExecutionStep& set_create_workspace(bool create_workspace = true);
  ExecutionStep& set_num_concurrent_instances(int32_t n);
  ExecutionStep& set_only_once(bool only_once = true);
  /// moka's (decision 69): count each execution under "<key>/runs" and its wall time under "<key>/busy_ns" in the
  /// stat registry. InvalidInput when key is empty. Tasks set it on their step ("<node>/task/<name>").
  ExecutionStep& set_stats_key(std::string key);
  /// InvalidInput when blob is empty ("expects BlobReference here, ...").
  ExecutionStep& set_should_stop_blob(const BlobRef& blob);
  /// Deprecated in Caffe2 (use run_every_millis on a substep): runs report_net every
  /// report_interval seconds while the step runs. Adds the net to the net dict only.
  ExecutionStep& set_report_net(const Net& report_net, int32_t report_interval);
  /// InvalidInput "Cannot have both network and substeps." when the step has nets.
  ExecutionStep& set_concurrent_substeps(bool concurrent_substeps = true);
  /// Runs this step every ms milliseconds while its siblings run, and once more after they
  /// finish. Allowed on a used step (Caffe2's RunEveryMillis does not check either); since a
  /// parent composes its definition from its substeps when asked, the change is seen by the
  /// parent's proto() and by plans that call proto() afterwards.
  ExecutionStep& run_every_millis(int64_t ms);

  /// Marks substep used. A substep with neither nets nor substeps is dropped silently;
  /// otherwise it is appended and its nets join this step's net dict. InvalidInput when this
  /// step has nets ("Cannot have both network and substeps.") or is used.
  ExecutionStep& add_substep(const ExecutionStep& substep);
  /// Appends net's name to `network` every time (a net added twice runs twice) and adds the net
  /// to the net dict. InvalidInput when this step has substeps, is used, or knows a different
  /// net of the same name.
  ExecutionStep& add_net(const Net& net);

  bool has_nets() const noexcept;
  bool has_substeps() const noexcept;
  bool is_used() const noexcept;
  /// The net dict: every net this step and its substeps use, in insertion order.
  std::vector<Net> nets() const;
  /// The net called name from the net dict; NotFound otherwise.
  Net get_net(const std::string& name) const;
  std::vector<ExecutionStep> substeps() const;

  /// The attributes under key of every net in the net dict, net by net in insertion order.
  std::vector<std::shared_ptr<NetAttribute>> get_all_attributes(const std::string& key) const;

  /// The definition, composed now from this step's settings and its substeps' proto().
  ExecutionStepDef proto() const;

  friend bool operator==(const ExecutionStep& a, const ExecutionStep& b) noexcept { return a.state_ == b.state_; }
  /// An identity that expires when the last handle to this step is gone (a session keys its
  /// compiled runnables by it, and drops them once nobody can run them again).
  std::weak_ptr<const void> identity() const noexcept { return state_; }

 private:
  friend class Plan;
  void check_mutable() const;
  void mark_used() const noexcept;
  void add_to_net_dict(const Net& net);

  std::shared_ptr<detail::StepState> state_;
};

/// @brief One element of a list given to execution_step(): a step, a net, or anything
/// convertible to a step.
///
/// "Anything convertible" is a type T with a `to_execution_step(T&, const std::string&
/// default_name)` found by argument-dependent lookup (NetBuilder provides one). It is converted
/// when execution_step() reaches it, not before, so automatic step names are handed out in the
/// order Caffe2 hands them out. The object is copied in; handles share state, as they should.
/// Thread-safety: a value type.
class StepOrNet {
 public:
  StepOrNet(ExecutionStep step) : v_(std::move(step)) {}  // NOLINT(google-explicit-constructor)
  StepOrNet(Net net) : v_(std::move(net)) {}              // NOLINT(google-explicit-constructor)
  template <class T>
  requires(!std::is_same_v<std::remove_cvref_t<T>, ExecutionStep> && !std::is_same_v<std::remove_cvref_t<T>, Net> &&
           !std::is_same_v<std::remove_cvref_t<T>, StepOrNet> && std::is_copy_constructible_v<std::remove_cvref_t<T>> &&
           requires(std::remove_cvref_t<T> & x, const std::string& n) {
             { to_execution_step(x, n) } -> std::same_as<ExecutionStep>;
           }) StepOrNet(T&& x)  // NOLINT(google-explicit-constructor)
      : v_(Converter([obj = std::remove_cvref_t<T>(std::forward<T>(x))](const std::string& n) mutable {
          return to_execution_step(obj, n);
        })) {}

  const Net* net() const { return std::get_if<Net>(&v_); }
  const ExecutionStep* step() const { return std::get_if<ExecutionStep>(&v_); }
  /// The step: a step as is, a net as to_execution_step(net, default_name), anything else
  /// through its converter.
  ExecutionStep to_step(const std::string& default_name = {}) const;

 private:
  using Converter = std::function<ExecutionStep(const std::string&)>;
  std::variant<ExecutionStep, Net, Converter> v_;
};

/// @brief What execution_step() builds from (Caffe2's `steps_or_nets`): nothing, one step, one
/// net, or a list.
///
/// A list whose elements are all nets adds them as the step's nets; any other list makes each
/// element a substep (a net in a mixed list becomes its own one-iteration substep).
/// Thread-safety: a value type.
class StepsOrNets {
 public:
  StepsOrNets() = default;
  StepsOrNets(ExecutionStep step) : one_(std::move(step)) {}  // NOLINT(google-explicit-constructor)
  StepsOrNets(Net net) : one_(std::move(net)) {}              // NOLINT(google-explicit-constructor)
  StepsOrNets(std::initializer_list<StepOrNet> items) : list_(items) {}
  StepsOrNets(std::vector<StepOrNet> items) : list_(std::move(items)) {}                       // NOLINT
  StepsOrNets(const std::vector<Net>& nets) : list_(nets.begin(), nets.end()) {}               // NOLINT
  StepsOrNets(const std::vector<ExecutionStep>& steps) : list_(steps.begin(), steps.end()) {}  // NOLINT

  /// The single step or net, when one was given (not a list).
  const std::optional<StepOrNet>& single() const noexcept { return one_; }
  const std::vector<StepOrNet>& list() const noexcept { return list_; }
  bool empty() const noexcept { return !one_ && list_.empty(); }

 private:
  std::optional<StepOrNet> one_;
  std::vector<StepOrNet> list_;
};

/// Optional arguments of execution_step() (Caffe2's keyword arguments). Members have default
/// initializers so designated initializers may name any subset without warnings.
struct StepOptions {
  std::optional<int64_t> num_iter{};         ///< with should_stop_blob: InvalidInput; both unset: 1
  std::optional<Net> report_net{};           ///< deprecated; needs report_interval
  std::optional<int32_t> report_interval{};  ///< seconds
  std::optional<bool> concurrent_substeps{};
  std::optional<BlobRef> should_stop_blob{};
  std::optional<bool> only_once{};
  std::optional<int32_t> num_concurrent_instances{};
  bool create_workspace = false;  ///< set only when true
  int64_t run_every_ms = 0;       ///< set only when non-zero
};

/// @brief Caffe2's `core.execution_step`: a new step named default_name (automatic when
/// empty), its options applied, then steps_or_nets added.
///
/// @code
///   auto s = moka::execution_step("train", {init_net, train_net}, {.num_iter = 100});
///   auto w = moka::execution_step("workers", {producer, consumer}, {.concurrent_substeps = true});
///   auto l = moka::execution_step("loop", net, {.should_stop_blob = stop});
/// @endcode
/// Errors (InvalidInput): "Cannot set both should_stop_blob and num_iter.", report_net without
/// report_interval, and every error of the mutators used.
ExecutionStep execution_step(const std::string& default_name, const StepsOrNets& steps_or_nets = {},
                             const StepOptions& options = {});

/// @brief Caffe2's `to_execution_step`: a single step is returned as is; anything else becomes
/// `execution_step(default_name, x)` (a net gets an automatic name `step`, `step_1`, … when
/// default_name is empty).
ExecutionStep to_execution_step(const StepsOrNets& x, const std::string& default_name = {});

}  // namespace moka
