// Timeline tracing, the file half: starting and stopping a trace, the counter sampler thread, and the Chrome
// trace-event JSON that Perfetto and chrome://tracing open (docs/tracing.md). Spans are recorded by core/trace.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "moka/core/trace.h"

namespace moka {

/// Where a trace goes and what it records.
struct TraceOptions {
  std::string path{};                           ///< the JSON file written when the trace stops
  TraceLevel level = TraceLevel::steps;         ///< what is recorded
  std::string process_label{};                  ///< names the process track ("rank 1"); empty: "moka <pid>"
  int process_index = 0;                        ///< the trace's "pid" base: ranks of one job use their rank
  std::chrono::milliseconds sample_period{20};  ///< how often counters (queue depths, records) are sampled
};

/// What a trace recorded.
struct TraceSummary {
  std::string path;
  int64_t events = 0;
  int64_t dropped = 0;  ///< events not kept once a thread held its maximum (docs/tracing.md §3)
};

/// @brief Starts recording (InvalidInput when a trace is already being recorded, or the path is empty;
/// RuntimeError naming the path when its directory cannot be written). The file is written by stop_trace();
/// nothing is written before.
void start_trace(TraceOptions options);
/// @brief Stops recording and writes the file atomically (a temporary file, fsync, rename); returns what it
/// wrote. RuntimeError naming the path when it cannot be written. No-op summary when no trace is running.
TraceSummary stop_trace();
/// True while a trace is being recorded.
bool trace_running() noexcept;

/// @brief Starts a trace to $MOKA_TRACE (at $MOKA_TRACE_LEVEL, default steps) the first time it is called in a
/// process where that variable is set, and writes it when the process exits. Plan runs call it, so any program
/// that links moka can be traced without changing it. A bad level is reported on stderr and tracing stays off.
void trace_start_from_environment() noexcept;
/// @brief Tells trace_start_from_environment() that the program handles MOKA_TRACE itself (the CLI does, to
/// name one file per rank): it then does nothing.
void trace_environment_handled() noexcept;

/// @brief A trace for the life of a scope: starts it (unless options.path is empty) and stops it at the end.
/// @code
///   moka::ScopedTrace trace({.path = "run.trace.json"});
///   session.run(tg);
/// @endcode
class ScopedTrace {
 public:
  explicit ScopedTrace(TraceOptions options);
  ~ScopedTrace();
  /// Stops now and returns the summary (the destructor then does nothing).
  TraceSummary finish();
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
  bool active_ = false;
};

}  // namespace moka
