// Timeline tracing, the recording half: per-thread event buffers, the string tables and the counter sources.
#include "moka/core/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "moka/core/error.h"

namespace moka {

namespace detail {
std::atomic<int> g_trace_level{0};
}  // namespace detail

namespace {

constexpr std::size_t kMaxEventsPerThread = std::size_t{1} << 20;  // 1 Mi events (40 MiB) per thread and trace

struct ThreadBuffer {
  std::mutex mu;
  std::vector<TraceEvent> events;
  int64_t dropped = 0;
  uint32_t tid = 0;
  std::string name;
  bool exited = false;
};

// Names and node tracks: ids that stay the same for the process's life.
struct StringTable {
  std::mutex mu;
  std::unordered_map<std::string, uint32_t> ids;
  std::deque<std::string> names;
  uint32_t id(std::string_view s) {
    std::lock_guard lk(mu);
    auto it = ids.find(std::string(s));
    if (it != ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(names.size());
    names.emplace_back(s);
    ids.emplace(names.back(), id);
    return id;
  }
  std::string name(uint32_t id) {
    std::lock_guard lk(mu);
    return id < names.size() ? names[id] : std::string();
  }
};

struct Registry {
  std::mutex mu;  // buffers, sources, level, start_ns
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  uint32_t next_tid = 1;
  StringTable names;
  StringTable nodes;  // node track 0 is the process itself (the empty name)
  std::set<TraceCounterSource*> sources;
  TraceLevel level = TraceLevel::off;  // off: not recording
  int64_t start_ns = 0;

  Registry() { (void)nodes.id(""); }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record during static teardown
  return *r;
}

// The thread's buffer; registered on first use and marked exited when the thread ends.
struct ThreadSlot {
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadSlot() {
    if (!buffer) return;
    std::lock_guard lk(buffer->mu);
    buffer->exited = true;
  }
  ThreadBuffer& get() {
    if (!buffer) [[unlikely]] {
      auto b = std::make_shared<ThreadBuffer>();
      Registry& r = registry();
      std::lock_guard lk(r.mu);
      b->tid = r.next_tid++;
      r.buffers.push_back(b);
      buffer = std::move(b);
    }
    return *buffer;
  }
};

thread_local ThreadSlot tl_slot;
thread_local uint32_t tl_node = 0;
thread_local uint32_t tl_lane = 0;

void record(const TraceEvent& e) noexcept {
  ThreadBuffer& b = tl_slot.get();
  std::lock_guard lk(b.mu);
  if (b.events.size() >= kMaxEventsPerThread) {
    ++b.dropped;
    return;
  }
  try {
    b.events.push_back(e);
  } catch (...) {
    ++b.dropped;
  }
}

}  // namespace

namespace detail {

int64_t trace_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void trace_complete(uint32_t name, uint8_t category, int64_t begin_ns, int64_t end_ns) noexcept {
  record(TraceEvent{begin_ns, end_ns - begin_ns, 0.0, name, 0, tl_node, tl_lane, category, 'X'});
}

}  // namespace detail

TraceLevel trace_level_from_name(std::string_view name) {
  if (name == "off") return TraceLevel::off;
  if (name == "steps" || name == "default") return TraceLevel::steps;
  if (name == "nets") return TraceLevel::nets;
  if (name == "ops") return TraceLevel::ops;
  throw InvalidInput(fmt::format("unknown trace level \"{}\" (off, steps, nets or ops)", name));
}

std::string_view trace_level_name(TraceLevel level) {
  switch (level) {
    case TraceLevel::off:
      return "off";
    case TraceLevel::steps:
      return "steps";
    case TraceLevel::nets:
      return "nets";
    case TraceLevel::ops:
      return "ops";
  }
  return "?";
}

std::string_view trace_category_name(TraceCategory c) {
  switch (c) {
    case TraceCategory::step:
      return "step";
    case TraceCategory::net:
      return "net";
    case TraceCategory::op:
      return "op";
    case TraceCategory::epoch:
      return "epoch";
    case TraceCategory::checkpoint:
      return "checkpoint";
    case TraceCategory::wait:
      return "wait";
    case TraceCategory::collective:
      return "collective";
    case TraceCategory::job:
      return "job";
    case TraceCategory::other:
      return "other";
  }
  return "other";
}

uint32_t trace_name_id(std::string_view name) { return registry().names.id(name); }

uint32_t TraceSpan::trace_name_id_noexcept(std::string_view name) noexcept {
  try {
    return trace_name_id(name);
  } catch (...) {
    return 0;
  }
}

void trace_counter(std::string_view name, std::string_view series, double value) noexcept {
  if (!trace_enabled()) return;
  try {
    Registry& r = registry();
    record(TraceEvent{detail::trace_now_ns(), 0, value, r.names.id(name), r.names.id(series), tl_node, 0,
                      static_cast<uint8_t>(TraceCategory::other), 'C'});
  } catch (...) {
  }
}

void trace_instant(TraceCategory category, std::string_view name) noexcept {
  if (!trace_enabled()) return;
  try {
    record(TraceEvent{detail::trace_now_ns(), 0, 0.0, registry().names.id(name), 0, tl_node, tl_lane,
                      static_cast<uint8_t>(category), 'i'});
  } catch (...) {
  }
}

void trace_set_thread_name(std::string name) {
  ThreadBuffer& b = tl_slot.get();
  std::lock_guard lk(b.mu);
  b.name = std::move(name);
}

uint32_t trace_node_track(std::string_view node) { return registry().nodes.id(node); }
uint32_t trace_current_node_track() noexcept { return tl_node; }

uint32_t trace_set_lane(uint32_t lane) noexcept { return std::exchange(tl_lane, lane); }

TraceNodeScope::TraceNodeScope(std::string_view node) noexcept : previous_(tl_node) {
  try {
    tl_node = trace_node_track(node);
  } catch (...) {
  }
}
TraceNodeScope::TraceNodeScope(uint32_t node_track) noexcept : previous_(tl_node) { tl_node = node_track; }
TraceNodeScope::~TraceNodeScope() { tl_node = previous_; }

bool trace_begin_recording(TraceLevel level) {
  if (level == TraceLevel::off) throw InvalidInput("trace: recording at level off records nothing");
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  if (r.level != TraceLevel::off) return false;
  // Threads that ended since the last recording leave; the others start empty.
  std::erase_if(r.buffers, [](const std::shared_ptr<ThreadBuffer>& b) {
    std::lock_guard blk(b->mu);
    b->events.clear();
    b->dropped = 0;
    return b->exited;
  });
  r.level = level;
  r.start_ns = detail::trace_now_ns();
  detail::g_trace_level.store(static_cast<int>(level), std::memory_order_relaxed);
  return true;
}

TraceRecording trace_end_recording() {
  Registry& r = registry();
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  TraceRecording recording;
  {
    std::lock_guard lk(r.mu);
    if (r.level == TraceLevel::off) return recording;
    detail::g_trace_level.store(0, std::memory_order_relaxed);
    recording.level = std::exchange(r.level, TraceLevel::off);
    recording.start_ns = r.start_ns;
    buffers = r.buffers;
  }
  recording.threads.reserve(buffers.size());
  for (const auto& b : buffers) {
    std::lock_guard lk(b->mu);
    recording.threads.push_back(TraceThreadEvents{b->tid, b->name, std::move(b->events), b->dropped});
    b->events = {};
    b->dropped = 0;
  }
  return recording;
}

bool trace_recording() noexcept {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.level != TraceLevel::off;
}

void trace_sample_counter_sources() {
  std::vector<TraceCounterSource::Sample> samples;
  {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    for (TraceCounterSource* s : r.sources) {
      try {
        s->sample(samples);
      } catch (...) {  // a source that fails loses its samples, never the trace
      }
    }
  }
  for (const auto& s : samples) trace_counter(s.counter, s.series, s.value);
}

std::string trace_name_of(uint32_t name_id) { return registry().names.name(name_id); }
std::string trace_node_name(uint32_t node_track) { return registry().nodes.name(node_track); }

TraceCounterRegistration::TraceCounterRegistration(TraceCounterSource* source) : source_(source) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.sources.insert(source_);
}

TraceCounterRegistration::~TraceCounterRegistration() {
  if (source_ == nullptr) return;
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.sources.erase(source_);
}

TraceCounterRegistration::TraceCounterRegistration(TraceCounterRegistration&& other) noexcept
    : source_(std::exchange(other.source_, nullptr)) {}

TraceCounterRegistration& TraceCounterRegistration::operator=(TraceCounterRegistration&& other) noexcept {
  if (this != &other) {
    TraceCounterRegistration gone(std::move(*this));
    source_ = std::exchange(other.source_, nullptr);
  }
  return *this;
}

}  // namespace moka
