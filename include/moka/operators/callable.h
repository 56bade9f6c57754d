// Callable operators: a user's C++ callable on the operator's input and output blobs (Caffe2's ops.Python).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

#include "moka/core/blob.h"
#include "moka/operators/schema.h"

namespace moka {

/// The function an operator instance calls on every run.
using CallableFn = std::function<void(std::span<Blob* const> inputs, std::span<Blob* const> outputs)>;
/// Makes a CallableFn; called once per operator construction (once per net instantiation —
/// once per workspace or task instance), like Caffe2's Python-op builder.
using CallableBuilder = std::function<CallableFn()>;

/// Op type used for anonymous callables; its `token` argument names a registered builder.
inline constexpr const char* kCallableOpType = "Callable";

/// Registers an operator type whose body is a callable. Thread-safe.
void register_callable_operator(OpSchema schema, CallableBuilder builder);

/// Registers an anonymous builder and returns its token: an OperatorDef of type "Callable" with
/// argument `token` = the returned value runs it. Tokens are valid only in this process, so such
/// plans cannot be serialised. Thread-safe.
int64_t register_callable(CallableBuilder builder);

/// @brief Inside a CallableFn: waits `duration`, or less when the running operator is cancelled
/// (its net or step was cancelled: an error elsewhere, a session's CancelToken, Ctrl-C).
///
/// Returns true after the full wait, false when it ended early by cancellation; the caller then
/// stops (throws Cancelled, typically). A callable that waits must use this rather than
/// `std::this_thread::sleep_for`, which no cancellation can end. Called outside a callable
/// operator's run it simply sleeps. A cancel is forgotten once that run is over, so a later run
/// of the same net waits again. Thread-safety: called on the operator's own thread.
bool callable_sleep_for(std::chrono::nanoseconds duration);

}  // namespace moka
