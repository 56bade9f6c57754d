// DSL control blocks built from nested NetBuilders and stop blobs (Caffe2's `ops.loop`,
// `ops.stop_guard`, `ops.If` / `Elif` / `Else`): each body runs at once, as a child step.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "moka/builder/ops.h"

namespace moka::ops {

class Loop;
class StopGuard;
class RunIf;

namespace detail {
using LoopCount = std::variant<int64_t, BlobRef>;
Loop make_loop(const std::optional<LoopCount>& iters, const std::function<void(Loop&)>& body, const std::string& name);
StopGuard make_stop_guard(const std::function<void(StopGuard&)>& body, const BlobRef& has_stopped_blob,
                          const std::string& name);
RunIf make_if(const std::optional<BlobRef>& cond, const std::optional<BlobRef>& already_ran,
              const std::function<void()>& body, const std::string& name);

// Calls body with the block object when it takes one, else with nothing.
template <class Obj, class F>
std::function<void(Obj&)> body_of(F& body) {
  if constexpr (std::invocable<F&, Obj&>) {
    return [&body](Obj& obj) { body(obj); };
  } else {
    return [&body](Obj&) { body(); };
  }
}
}  // namespace detail

/// A body of ops::loop: `[&] { ... }` or `[&](ops::Loop& l) { ... l.iter() ... }`.
template <class F>
concept LoopBody = std::invocable<F&> || std::invocable<F&, Loop&>;
/// A body of ops::stop_guard: `[&] { ... }` or `[&](ops::StopGuard& g) { ... }`.
template <class F>
concept StopGuardBody = std::invocable<F&> || std::invocable<F&, StopGuard&>;

/// Optional arguments of ops::loop.
struct LoopOptions {
  std::string name{};  ///< relative name of the loop's builder (and step)
};

/// @brief A loop added by ops::loop (Caffe2's `_Loop`): a nested builder whose step repeats
/// until its stop blob is true.
///
/// With a count, the parent's current net gets `inc = Const(1)`, `iter = Const(0)` and (for a
/// number) `num_iters = Const(n)` — so the counter restarts whenever the parent reaches the
/// loop — and the body is framed by `stop_if(GE(iter, num_iters))` first and
/// `Add(iter, inc) -> iter` last. Without a count the body must call ops::stop_if / ops::stop.
///
/// @code
///   moka::ops::loop(10, [&](moka::ops::Loop& l) {
///     moka::ops::Add({total, l.iter()}, {total});   // iter() = 0..9
///   });
///   moka::ops::loop(n_blob, [&] { ... });           // n read at every check
///   moka::ops::loop([&] { moka::ops::stop_if(done); ... });
/// @endcode
/// Thread-safety: as NetBuilder.
class Loop {
 public:
  /// The int64 iteration counter blob; InvalidInput "This loop does not have a number of
  /// iterations." for a loop without a count.
  BlobRef iter() const;
  /// The blob holding the iteration count (nullopt without a count).
  const std::optional<BlobRef>& num_iters() const noexcept { return num_iters_; }
  NetBuilder& builder() noexcept { return builder_; }

 private:
  friend Loop detail::make_loop(const std::optional<detail::LoopCount>&, const std::function<void(Loop&)>&,
                                const std::string&);
  explicit Loop(NetBuilder builder) : builder_(std::move(builder)) {}

  NetBuilder builder_;
  std::optional<BlobRef> inc_, iter_, num_iters_;
};

/// @brief Adds a loop without a count: body repeats until an ops::stop_if inside fires.
/// Leaving the body without one is InvalidInput ("This NetBuilder (N) requires a stop
/// condition to be set with `stop` or `stop_if`").
template <LoopBody F>
Loop loop(F&& body, const LoopOptions& options = {}) {
  return detail::make_loop(std::nullopt, detail::body_of<Loop>(body), options.name);
}
/// @brief Adds a loop of iters iterations (0..iters-1; none when iters <= 0).
template <LoopBody F>
Loop loop(int64_t iters, F&& body, const LoopOptions& options = {}) {
  return detail::make_loop(detail::LoopCount(iters), detail::body_of<Loop>(body), options.name);
}
/// @brief Adds a loop whose count is the int64 scalar in blob iters, read at every check.
template <LoopBody F>
Loop loop(const BlobRef& iters, F&& body, const LoopOptions& options = {}) {
  return detail::make_loop(detail::LoopCount(iters), detail::body_of<Loop>(body), options.name);
}

/// Optional arguments of ops::stop_guard.
struct StopGuardOptions {
  BlobRef has_stopped_blob{};  ///< blob for has_stopped(); empty: an automatic name
  std::string name{};
};

/// @brief A block that a stop inside ends without ending anything around it (Caffe2's
/// `_StopGuard`), and tells whether it was ended that way.
///
/// The block first sets has_stopped to true and, as its last op, to false; a stop inside skips
/// the rest, leaving it true.
///
/// @code
///   auto g = moka::ops::stop_guard([&] { moka::ops::stop_if(moka::ops::LT({x, five})); });
///   moka::BlobRef stopped = g.has_stopped();   // true at run time iff x < 5
/// @endcode
/// Thread-safety: as NetBuilder.
class StopGuard {
 public:
  /// The bool blob; InvalidInput "Context not used yet." until the body has returned (e.g. when
  /// called inside the body).
  BlobRef has_stopped() const;
  NetBuilder& builder() noexcept { return builder_; }

 private:
  friend StopGuard detail::make_stop_guard(const std::function<void(StopGuard&)>&, const BlobRef&, const std::string&);
  StopGuard(NetBuilder builder, BlobRef stopped) : builder_(std::move(builder)), stopped_(std::move(stopped)) {}

  NetBuilder builder_;
  BlobRef stopped_;
  bool ran_ = false;
};

/// Adds a stop guard around body.
template <StopGuardBody F>
StopGuard stop_guard(F&& body, const StopGuardOptions& options = {}) {
  return detail::make_stop_guard(detail::body_of<StopGuard>(body), options.has_stopped_blob, options.name);
}

/// Optional arguments of ops::If, RunIf::Elif and RunIf::Else.
struct IfOptions {
  std::string name{};  ///< relative name; Elif/Else default to the If's
};

/// @brief A conditional block added by ops::If (Caffe2's `_RunIf`), with its Elif/Else chain.
///
/// `If(cond)` emits `else_blob = Not(cond)` and `already_ran = Const(false)` in the parent's
/// current net; the block starts with `stop_if(else_blob)` and `Const(true) -> already_ran`.
/// `Elif(c)` uses `Or(already_ran, Not(c))` as its else blob, `Else()` uses `already_ran`. A
/// stop inside a branch ends only that branch.
///
/// @code
///   moka::ops::If(moka::ops::GE({v, eighty}), [&] { moka::ops::Add({large, v}, {large}); })
///       .Elif(moka::ops::GE({v, fifty}), [&] { moka::ops::Add({small, v}, {small}); })
///       .Else([&] { moka::ops::Add({tiny, v}, {tiny}); });
/// @endcode
/// Errors (InvalidInput): Elif or Else after an Else ("Elif not allowed for an Else.",
/// "Else not allowed for an Else.").
/// Thread-safety: as NetBuilder.
class RunIf {
 public:
  /// Adds an Elif branch to the active builder (normally the one the If was added to).
  template <std::invocable F>
  RunIf Elif(const BlobRef& cond, F&& body, const IfOptions& options = {}) const {
    check_not_else("Elif");
    return detail::make_if(
        cond, already_ran_, [&body] { body(); }, branch_name(options));
  }
  /// Adds the Else branch.
  template <std::invocable F>
  RunIf Else(F&& body, const IfOptions& options = {}) const {
    check_not_else("Else");
    return detail::make_if(
        std::nullopt, already_ran_, [&body] { body(); }, branch_name(options));
  }

  bool is_else() const noexcept { return is_else_; }
  /// Set true by the branch that ran, shared by the whole If/Elif/Else chain.
  const BlobRef& already_ran() const noexcept { return already_ran_; }
  /// True when the branch must be skipped.
  const BlobRef& else_blob() const noexcept { return else_blob_; }
  NetBuilder& builder() noexcept { return builder_; }

 private:
  friend RunIf detail::make_if(const std::optional<BlobRef>&, const std::optional<BlobRef>&,
                               const std::function<void()>&, const std::string&);
  explicit RunIf(NetBuilder builder) : builder_(std::move(builder)) {}
  void check_not_else(const char* what) const;
  std::string branch_name(const IfOptions& options) const { return options.name.empty() ? name_ : options.name; }

  NetBuilder builder_;
  std::string name_;  // the relative name given to If
  BlobRef else_blob_, already_ran_;
  bool is_else_ = false;
};

/// Adds a block that runs body once if cond (a bool scalar) is true.
template <std::invocable F>
RunIf If(const BlobRef& cond, F&& body, const IfOptions& options = {}) {
  return detail::make_if(
      cond, std::nullopt, [&body] { body(); }, options.name);
}

}  // namespace moka::ops
