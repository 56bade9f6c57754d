// Timeline tracing: per-thread event buffers, the string table, the counter sampler and the Chrome trace-event writer.
#include "moka/core/trace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "moka/core/error.h"

namespace moka {

namespace detail {
std::atomic<int> g_trace_level{0};
}  // namespace detail

namespace {

constexpr std::size_t kMaxEventsPerThread = std::size_t{1} << 20;  // 1 Mi events (40 MiB) per thread and trace

struct Event {
  int64_t ts_ns;
  int64_t dur_ns;  // complete events; counters: unused
  double value;    // counters
  uint32_t name;
  uint32_t series;  // counters: the series' name id
  uint32_t node;
  uint32_t lane;  // 0: the thread itself; k > 0: the k-th fiber of the fiber group running on it
  uint8_t category;
  char phase;  // 'X' complete, 'i' instant, 'C' counter
};

struct ThreadBuffer {
  std::mutex mu;
  std::vector<Event> events;
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
  std::mutex mu;  // buffers, sources, options, running
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  uint32_t next_tid = 1;
  StringTable names;
  StringTable nodes;  // node track 0 is the process itself (the empty name)
  std::set<TraceCounterSource*> sources;
  TraceOptions options;
  bool running = false;
  int64_t start_ns = 0;
  std::thread sampler;
  std::mutex sampler_mu;
  std::condition_variable sampler_cv;
  bool sampler_stop = false;

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

void record(const Event& e) noexcept {
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

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out.push_back(ch);
    }
  }
  out.push_back('"');
  return out;
}

void sampler_loop(Registry& r) {
  trace_set_thread_name("trace sampler");
  std::vector<TraceCounterSource::Sample> samples;
  std::unique_lock lk(r.sampler_mu);
  while (!r.sampler_stop) {
    lk.unlock();
    samples.clear();
    {
      std::lock_guard reg(r.mu);
      for (TraceCounterSource* s : r.sources) {
        try {
          s->sample(samples);
        } catch (...) {  // a source that fails loses its samples, never the trace
        }
      }
    }
    for (const auto& s : samples) trace_counter(s.counter, s.series, s.value);
    lk.lock();
    r.sampler_cv.wait_for(lk, r.options.sample_period, [&] { return r.sampler_stop; });
  }
}

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RuntimeError(fmt::format("trace: writing '{}' failed: {}", path, std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

namespace detail {

int64_t trace_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void trace_complete(uint32_t name, uint8_t category, int64_t begin_ns, int64_t end_ns) noexcept {
  record(Event{begin_ns, end_ns - begin_ns, 0.0, name, 0, tl_node, tl_lane, category, 'X'});
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
    case TraceCategory::task:
      return "task";
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
    record(Event{detail::trace_now_ns(), 0, value, r.names.id(name), r.names.id(series), tl_node, 0,
                 static_cast<uint8_t>(TraceCategory::other), 'C'});
  } catch (...) {
  }
}

void trace_instant(TraceCategory category, std::string_view name) noexcept {
  if (!trace_enabled()) return;
  try {
    record(Event{detail::trace_now_ns(), 0, 0.0, registry().names.id(name), 0, tl_node, tl_lane,
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

void start_trace(TraceOptions options) {
  if (options.path.empty()) throw InvalidInput("trace: the path of the trace file must not be empty");
  if (options.level == TraceLevel::off) return;
  {  // a trace that could not be written is found now, not after the run
    std::string parent = std::filesystem::path(options.path).parent_path().string();
    if (parent.empty()) parent = ".";
    if (::access(parent.c_str(), W_OK) != 0)
      throw RuntimeError(
          fmt::format("trace: cannot write '{}': directory '{}': {}", options.path, parent, std::strerror(errno)));
  }
  if (options.sample_period <= std::chrono::milliseconds(0)) options.sample_period = std::chrono::milliseconds(20);
  Registry& r = registry();
  {
    std::lock_guard lk(r.mu);
    if (r.running)
      throw InvalidInput(fmt::format("trace: a trace is already being recorded (to '{}')", r.options.path));
    // Threads that ended since the last trace leave; the others start empty.
    std::erase_if(r.buffers, [](const std::shared_ptr<ThreadBuffer>& b) {
      std::lock_guard blk(b->mu);
      b->events.clear();
      b->dropped = 0;
      return b->exited;
    });
    r.options = std::move(options);
    r.running = true;
    r.start_ns = detail::trace_now_ns();
    detail::g_trace_level.store(static_cast<int>(r.options.level), std::memory_order_relaxed);
  }
  {
    std::lock_guard lk(r.sampler_mu);
    r.sampler_stop = false;
  }
  r.sampler = std::thread([&r] { sampler_loop(r); });
}

bool trace_running() noexcept {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.running;
}

TraceSummary stop_trace() {
  Registry& r = registry();
  {
    std::lock_guard lk(r.mu);
    if (!r.running) return {};
    detail::g_trace_level.store(0, std::memory_order_relaxed);
  }
  {
    std::lock_guard lk(r.sampler_mu);
    r.sampler_stop = true;
  }
  r.sampler_cv.notify_all();
  if (r.sampler.joinable()) r.sampler.join();

  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  TraceOptions options;
  int64_t start_ns = 0;
  {
    std::lock_guard lk(r.mu);
    buffers = r.buffers;
    options = r.options;
    start_ns = r.start_ns;
    r.running = false;
  }
  const int pid_base = options.process_index * 1000;
  const std::string process_label =
      options.process_label.empty() ? fmt::format("moka {}", ::getpid()) : options.process_label;
  TraceSummary summary;
  summary.path = options.path;
  std::string out;
  out.reserve(1 << 20);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"moka\",\"level\":";
  out += json_string(trace_level_name(options.level));
  out += ",\"process\":" + json_string(process_label) + "},\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  std::set<uint32_t> nodes_seen{0};
  std::set<std::pair<uint32_t, uint64_t>> threads_seen;  // (node, tid)
  std::map<uint64_t, std::string> thread_names;
  // A thread's own track is its tid; the fibers it runs get tracks of their own, tid * 1000 + lane.
  const auto track_of = [](const ThreadBuffer& b, uint32_t lane) {
    return lane == 0 ? uint64_t{b.tid} : uint64_t{b.tid} * 1000 + lane;
  };
  for (const auto& b : buffers) {
    std::lock_guard lk(b->mu);
    const std::string thread_name = b->name.empty() ? fmt::format("thread {}", b->tid) : b->name;
    summary.dropped += b->dropped;
    for (const Event& e : b->events) {
      const double ts = static_cast<double>(e.ts_ns - start_ns) / 1000.0;
      const int pid = pid_base + static_cast<int>(e.node);
      nodes_seen.insert(e.node);
      if (e.phase == 'C') {
        emit(fmt::format("{{\"name\":{},\"ph\":\"C\",\"ts\":{:.3f},\"pid\":{},\"args\":{{{}:{}}}}}",
                         json_string(r.names.name(e.name)), ts, pid, json_string(r.names.name(e.series)), e.value));
      } else {
        const uint64_t tid = track_of(*b, e.lane);
        threads_seen.insert({e.node, tid});
        if (!thread_names.contains(tid))
          thread_names[tid] = e.lane == 0 ? thread_name : fmt::format("{} fiber {}", thread_name, e.lane);
        const std::string_view cat = trace_category_name(static_cast<TraceCategory>(e.category));
        if (e.phase == 'X')
          emit(fmt::format(
              "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{}}}",
              json_string(r.names.name(e.name)), cat, ts, static_cast<double>(e.dur_ns) / 1000.0, pid, tid));
        else
          emit(
              fmt::format("{{\"name\":{},\"cat\":\"{}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{:.3f},\"pid\":{},\"tid\":{}}}",
                          json_string(r.names.name(e.name)), cat, ts, pid, tid));
      }
      ++summary.events;
    }
  }
  for (const uint32_t node : nodes_seen) {
    const std::string node_name = r.nodes.name(node);
    const std::string label = node == 0 ? process_label : fmt::format("node {} ({})", node_name, process_label);
    emit(fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}",
                     pid_base + static_cast<int>(node), json_string(label)));
    emit(fmt::format("{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}",
                     pid_base + static_cast<int>(node), pid_base + static_cast<int>(node)));
  }
  for (const auto& [node, tid] : threads_seen)
    emit(fmt::format("{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                     pid_base + static_cast<int>(node), tid, json_string(thread_names[tid])));
  out += "\n]}\n";

  const std::string tmp = options.path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError(fmt::format("trace: cannot write '{}': {}", options.path, std::strerror(errno)));
  try {
    write_all(fd, out, options.path);
    if (::fsync(fd) != 0) throw RuntimeError(fmt::format("trace: fsync of '{}' failed: {}", tmp, std::strerror(errno)));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), options.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw RuntimeError(fmt::format("trace: cannot rename '{}' to '{}': {}", tmp, options.path, std::strerror(err)));
  }
  return summary;
}

namespace {
std::atomic<bool> g_environment_handled{false};
std::once_flag g_environment_once;
}  // namespace

void trace_environment_handled() noexcept { g_environment_handled.store(true); }

void trace_start_from_environment() noexcept {
  if (g_environment_handled.load(std::memory_order_relaxed)) return;
  std::call_once(g_environment_once, [] {
    if (g_environment_handled.load()) return;
    const char* path = std::getenv("MOKA_TRACE");
    if (path == nullptr || *path == '\0') return;
    try {
      TraceOptions options;
      options.path = path;
      if (const char* level = std::getenv("MOKA_TRACE_LEVEL")) options.level = trace_level_from_name(level);
      if (options.level == TraceLevel::off) return;
      start_trace(std::move(options));
      std::atexit([] {
        try {
          (void)stop_trace();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "moka: MOKA_TRACE: %s\n", e.what());
        }
      });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moka: MOKA_TRACE: %s (not tracing)\n", e.what());
    }
  });
}

ScopedTrace::ScopedTrace(TraceOptions options) {
  if (options.path.empty() || options.level == TraceLevel::off) return;
  start_trace(std::move(options));
  active_ = true;
}

ScopedTrace::~ScopedTrace() {
  if (!active_) return;
  try {
    (void)stop_trace();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moka: %s\n", e.what());
  }
}

TraceSummary ScopedTrace::finish() {
  if (!active_) return {};
  active_ = false;
  return stop_trace();
}

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
