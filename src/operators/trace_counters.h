// Internal: the operators layer's counters in timeline traces — the depth of every live BlobsQueue and the batches per
// second of every pipe (its timer's count in the stat registry), sampled by the trace's sampler (docs/tracing.md §2).
#pragma once

namespace moka {
class BlobsQueue;
namespace detail {
/// Registers the operators layer's counter source with the trace (once per process).
void register_trace_counters();
/// A queue exists / goes away; its depth is sampled in between. Thread-safety: any thread.
void trace_queue_created(const BlobsQueue* queue);
void trace_queue_destroyed(const BlobsQueue* queue) noexcept;
}  // namespace detail
}  // namespace moka
