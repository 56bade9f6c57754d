// Timeline tracing: spans, instants and counters recorded per thread and written as Chrome trace-event JSON, which
// Perfetto and chrome://tracing open (docs/tracing.md). Off by default; one relaxed load when off.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moka {

/// How much a trace records. Each level adds to the one before.
enum class TraceLevel : int {
  off = 0,
  steps = 1,  ///< the default: tasks and steps, epochs, checkpoint save/commit/load, waits on queues and collectives
  nets = 2,   ///< + every run of a net (a pipe runs several per batch)
  ops = 3,    ///< + every operator
};

/// "off", "steps", "nets", "ops" (InvalidInput naming the text otherwise).
TraceLevel trace_level_from_name(std::string_view name);
std::string_view trace_level_name(TraceLevel level);

namespace detail {
extern std::atomic<int> g_trace_level;
int64_t trace_now_ns() noexcept;
void trace_complete(uint32_t name, uint8_t category, int64_t begin_ns, int64_t end_ns) noexcept;
}  // namespace detail

/// True when a trace is being recorded at `level` or more. One relaxed atomic load.
inline bool trace_enabled(TraceLevel level = TraceLevel::steps) noexcept {
  return detail::g_trace_level.load(std::memory_order_relaxed) >= static_cast<int>(level);
}

/// What a span is: the trace event's "cat".
enum class TraceCategory : uint8_t { task, step, net, op, epoch, checkpoint, wait, collective, job, other };
std::string_view trace_category_name(TraceCategory c);

/// @brief The id of a name in the trace's string table (the same name, the same id, for the process's lifetime).
/// Takes a lock: objects that are traced often look their name up once and keep the id.
uint32_t trace_name_id(std::string_view name);

/// @brief A span: from construction to destruction on this thread, recorded when tracing was on at `level`
/// when it began. Spans of one thread must nest (they do, as RAII objects); a span ends even when an exception
/// leaves its scope.
/// @code
///   { moka::TraceSpan span(moka::TraceCategory::checkpoint, "save epoch 3"); save(); }
/// @endcode
/// Thread-safety: a span belongs to the thread that made it.
class TraceSpan {
 public:
  TraceSpan(TraceCategory category, std::string_view name, TraceLevel level = TraceLevel::steps) noexcept {
    if (trace_enabled(level)) [[unlikely]]
      begin(category, trace_name_id_noexcept(name));
  }
  TraceSpan(TraceCategory category, uint32_t name_id, TraceLevel level = TraceLevel::steps) noexcept {
    if (trace_enabled(level)) [[unlikely]]
      begin(category, name_id);
  }
  ~TraceSpan() {
    if (begin_ns_ >= 0) [[unlikely]]
      detail::trace_complete(name_, category_, begin_ns_, detail::trace_now_ns());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  static uint32_t trace_name_id_noexcept(std::string_view name) noexcept;
  void begin(TraceCategory category, uint32_t name) noexcept {
    name_ = name;
    category_ = static_cast<uint8_t>(category);
    begin_ns_ = detail::trace_now_ns();
  }
  int64_t begin_ns_ = -1;
  uint32_t name_ = 0;
  uint8_t category_ = 0;
};

/// A counter sample (a "C" event): series `series` of counter `name` is `value` now, on this thread's node.
void trace_counter(std::string_view name, std::string_view series, double value) noexcept;
/// A moment (an "i" event) on this thread, such as "checkpoint committed".
void trace_instant(TraceCategory category, std::string_view name) noexcept;

/// Names this thread's track ("worker 3", "main"); kept for the thread's life, also across traces.
void trace_set_thread_name(std::string name);

/// @brief While alive, the spans this thread records belong to node `node` (a process track of its own in the
/// trace); restores the previous node when it ends. An empty name is the process's own track.
/// Thread-safety: affects this thread only.
class TraceNodeScope {
 public:
  explicit TraceNodeScope(std::string_view node) noexcept;
  explicit TraceNodeScope(uint32_t node_track) noexcept;
  ~TraceNodeScope();
  TraceNodeScope(const TraceNodeScope&) = delete;
  TraceNodeScope& operator=(const TraceNodeScope&) = delete;

 private:
  uint32_t previous_;
};
/// The node track of a node name (0 for the process itself), for TraceNodeScope(uint32_t).
uint32_t trace_node_track(std::string_view node);
/// The node track this thread records into now.
uint32_t trace_current_node_track() noexcept;
/// @brief Makes this thread's spans go to lane `lane` of its track (0: the thread's own; k: the k-th fiber of the
/// fibers it runs, a track of its own, so that fibers' spans, which interleave on one thread, each nest);
/// returns the previous lane. The fiber scheduler calls it around each turn.
uint32_t trace_set_lane(uint32_t lane) noexcept;

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

/// @brief A source of counter samples, polled by the trace's sampler thread every sample_period while a trace
/// runs (queues report their depth, pipes their records). Returns its samples through `emit`.
/// Thread-safety: sample() runs on the sampler thread, concurrently with everything else.
class TraceCounterSource {
 public:
  virtual ~TraceCounterSource() = default;
  struct Sample {
    std::string counter;
    std::string series;
    double value;
  };
  virtual void sample(std::vector<Sample>& out) = 0;
};
/// Registers a counter source until the returned handle is destroyed.
class TraceCounterRegistration {
 public:
  TraceCounterRegistration() = default;
  explicit TraceCounterRegistration(TraceCounterSource* source);
  ~TraceCounterRegistration();
  TraceCounterRegistration(TraceCounterRegistration&& other) noexcept;
  TraceCounterRegistration& operator=(TraceCounterRegistration&& other) noexcept;

 private:
  TraceCounterSource* source_ = nullptr;
};

}  // namespace moka
