// Timeline tracing, the recording half: spans, instants and counters recorded per thread into memory (docs/tracing.md).
// Off by default; one relaxed load when off. Starting, sampling and writing a trace file is exec's (exec/trace_file.h).
#pragma once

#include <atomic>
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
enum class TraceCategory : uint8_t { step, net, op, epoch, checkpoint, wait, collective, job, other };
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

/// @brief A source of counter samples, polled by the trace's sampler thread every sample_period while a trace
/// runs (queues report their depth, pipes their records). Returns its samples through `out`.
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

/// One recorded event, as a trace writer reads it.
struct TraceEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;   ///< complete events; counters: unused
  double value = 0;     ///< counters
  uint32_t name = 0;    ///< trace_name_of
  uint32_t series = 0;  ///< counters: the series' name id
  uint32_t node = 0;    ///< trace_node_name; 0: the process itself
  uint32_t lane = 0;    ///< 0: the thread itself; k > 0: the k-th fiber of the fiber group running on it
  uint8_t category = 0;
  char phase = 'X';  ///< 'X' complete, 'i' instant, 'C' counter
};
/// What one thread recorded.
struct TraceThreadEvents {
  uint32_t tid = 0;
  std::string name{};  ///< trace_set_thread_name; empty when never named
  std::vector<TraceEvent> events{};
  int64_t dropped = 0;  ///< events not kept once the thread held its maximum (docs/tracing.md §3)
};
/// What every thread recorded between trace_begin_recording and trace_end_recording.
struct TraceRecording {
  TraceLevel level = TraceLevel::off;
  int64_t start_ns = 0;
  std::vector<TraceThreadEvents> threads{};
};

/// @brief Starts recording at `level` (more than off): every thread's buffer starts empty. False, changing
/// nothing, when a recording is already running. The trace writer (exec/trace_file.h) calls it.
bool trace_begin_recording(TraceLevel level);
/// Stops recording and hands over what was recorded (empty when nothing was recording).
TraceRecording trace_end_recording();
/// True between trace_begin_recording and trace_end_recording.
bool trace_recording() noexcept;
/// @brief Polls every registered counter source once and records its samples as counters on this thread (a
/// source that throws loses its samples, never the trace). The trace writer's sampler thread calls it.
void trace_sample_counter_sources();
/// The name of a name id (trace_name_id) or of a node track (trace_node_track).
std::string trace_name_of(uint32_t name_id);
std::string trace_node_name(uint32_t node_track);

}  // namespace moka
