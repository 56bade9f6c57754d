// The NetBuilder DSL (Caffe2's `net_builder.ops`): free functions in moka::ops that act on the
// NetBuilder active on this thread. This header holds the core (op, Const, net, stop, call) and
// includes the typed operator helpers, the control blocks (step-based and control-op based) and the
// setup/report blocks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/operators/callable.h"

namespace moka::ops {

/// @brief The input blobs of an operator added through the DSL: a braced list, a vector, or a
/// single blob (Caffe2's `ops.Not(cond)` takes one blob as well as a list).
///
/// @code
///   moka::ops::Add({a, b});              // a list
///   moka::ops::Not(cond);                // one blob
///   moka::ops::CreateCounter({}, {"c"}); // no inputs
/// @endcode
/// Thread-safety: a value type.
class Inputs {
 public:
  Inputs() = default;
  Inputs(std::initializer_list<BlobRef> blobs) : blobs_(blobs) {}
  Inputs(std::vector<BlobRef> blobs) : blobs_(std::move(blobs)) {}  // NOLINT(google-explicit-constructor)
  Inputs(BlobRef blob) : blobs_{std::move(blob)} {}                 // NOLINT(google-explicit-constructor)
  Inputs(const char* name) : blobs_{BlobRef(name)} {}               // NOLINT(google-explicit-constructor)
  Inputs(std::string name) : blobs_{BlobRef(std::move(name))} {}    // NOLINT(google-explicit-constructor)

  const std::vector<BlobRef>& blobs() const& noexcept { return blobs_; }
  std::vector<BlobRef>&& blobs() && noexcept { return std::move(blobs_); }

 private:
  std::vector<BlobRef> blobs_;
};

namespace detail {
/// The active builder; InvalidInput "No active NetBuilder. (ops::<what> ...)" when none.
NetBuilder& active_builder(std::string_view what);
}  // namespace detail

/// @brief Adds any registered operator to the current net of the active builder (Caffe2's
/// `ops.<Type>(inputs, outputs, **args)`); returns its outputs.
///
/// @code
///   moka::ops::op("Add", {a, b}, {c});
///   moka::BlobRef s = moka::ops::op("MyUserOp", {a}, {}, {{"scale", 2.0}});
/// @endcode
/// Errors (InvalidInput): "No active NetBuilder." outside a builder body, and Net::op's.
BlobRefs op(const std::string& type, Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});

/// @brief A constant in the current net (Caffe2's `ops.Const`; see Net::Const for the types).
///
/// @code
///   moka::BlobRef five = moka::ops::Const(5);                      // 0-d int64
///   moka::ops::Const(true, {.blob_out = y});                       // 0-d bool written to y
///   moka::ops::Const(3, {.blob_out = "n", .dtype = moka::DType::Int32});
/// @endcode
BlobRef Const(const ConstValue& value, const ConstOptions& options = {});

/// Optional arguments of ops::net(NetOptions).
struct NetOptions {
  std::string name{};  ///< non-empty: start a new current net with this name
};

/// The current net of the active builder (created when there is none).
Net net();
/// The current net, or with options.name a new current net called `<builder>/<name>`.
Net net(const NetOptions& options);
/// @brief Adds a user's net as the next child and makes it the current net: later `ops::`
/// calls append to it. Adding the same net twice runs it twice. Returns n.
Net net(const Net& n);
/// Adds a step as the next child (the next op starts a new net). Returns step.
ExecutionStep net(const ExecutionStep& step);

/// @brief Ends the active builder's step after the current net (`stop_if(Const(true))`).
void stop();
/// @brief Ends the active builder's step after the current net once blob (a bool scalar) is
/// true (NetBuilder::stop_if). Inside ops::loop this leaves the loop; inside ops::If or
/// ops::stop_guard it ends only that block.
void stop_if(const BlobRef& blob);

/// @brief A callable operator (Caffe2's `ops.Python(f)(inputs, outputs)`): fn runs on every
/// run of the operator with its input and output blobs. Every instance of the net (every
/// workspace, every task instance) calls the same fn, so it must be thread-safe. The plan can
/// only run in this process (the operator refers to fn by a process-local token).
///
/// @code
///   std::atomic<int> calls{0};
///   moka::ops::call([&](std::span<moka::Blob* const>, std::span<moka::Blob* const>) { ++calls; });
/// @endcode
BlobRefs call(CallableFn fn, Inputs inputs = {}, Outputs outputs = 0, std::vector<Arg> args = {});
/// @brief A callable operator made by builder each time the operator is constructed (once per
/// net instantiation: per workspace, per task instance), like Caffe2's Python-op builder tuple.
BlobRefs call(CallableBuilder builder, Inputs inputs = {}, Outputs outputs = 0, std::vector<Arg> args = {});

}  // namespace moka::ops

#include "moka/builder/control_ops_util.h"
#include "moka/builder/ops_builtin.h"
#include "moka/builder/ops_control.h"
#include "moka/builder/ops_control_net.h"
#include "moka/builder/ops_setup.h"
