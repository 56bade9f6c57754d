// Timeline tracing, the file half: start/stop, the counter sampler thread and the Chrome trace-event JSON writer
// over what core/trace.h recorded (docs/tracing.md).
#include "moka/exec/trace_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "moka/core/error.h"

namespace moka {

namespace {

// The trace being recorded: its options and its sampler thread.
struct TraceFile {
  std::mutex mu;  // options, running
  TraceOptions options;
  bool running = false;
  std::thread sampler;
  std::mutex sampler_mu;
  std::condition_variable sampler_cv;
  bool sampler_stop = false;
};

TraceFile& trace_file() {
  static TraceFile* t = new TraceFile();  // never destroyed: MOKA_TRACE's trace stops at exit
  return *t;
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

void sampler_loop(TraceFile& t, std::chrono::milliseconds period) {
  trace_set_thread_name("trace sampler");
  std::unique_lock lk(t.sampler_mu);
  while (!t.sampler_stop) {
    lk.unlock();
    try {
      trace_sample_counter_sources();
    } catch (...) {  // no memory for the samples: this round has none
    }
    lk.lock();
    t.sampler_cv.wait_for(lk, period, [&] { return t.sampler_stop; });
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
  TraceFile& t = trace_file();
  std::lock_guard lk(t.mu);
  if (t.running) throw InvalidInput(fmt::format("trace: a trace is already being recorded (to '{}')", t.options.path));
  if (!trace_begin_recording(options.level))
    throw InvalidInput("trace: a trace is already being recorded (by another recorder of this process)");
  t.options = std::move(options);
  t.running = true;
  {
    std::lock_guard slk(t.sampler_mu);
    t.sampler_stop = false;
  }
  t.sampler = std::thread([&t, period = t.options.sample_period] { sampler_loop(t, period); });
}

bool trace_running() noexcept {
  TraceFile& t = trace_file();
  std::lock_guard lk(t.mu);
  return t.running;
}

TraceSummary stop_trace() {
  TraceFile& t = trace_file();
  std::unique_lock lk(t.mu);
  if (!t.running) return {};
  {
    std::lock_guard slk(t.sampler_mu);
    t.sampler_stop = true;
  }
  t.sampler_cv.notify_all();
  if (t.sampler.joinable()) t.sampler.join();
  const TraceRecording recording = trace_end_recording();
  const TraceOptions options = std::move(t.options);
  t.options = {};
  t.running = false;
  lk.unlock();

  const int pid_base = options.process_index * 1000;
  const std::string process_label =
      options.process_label.empty() ? fmt::format("moka {}", ::getpid()) : options.process_label;
  TraceSummary summary;
  summary.path = options.path;
  std::string out;
  out.reserve(1 << 20);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"moka\",\"level\":";
  out += json_string(trace_level_name(recording.level));
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
  const auto track_of = [](const TraceThreadEvents& b, uint32_t lane) {
    return lane == 0 ? uint64_t{b.tid} : uint64_t{b.tid} * 1000 + lane;
  };
  for (const TraceThreadEvents& b : recording.threads) {
    const std::string thread_name = b.name.empty() ? fmt::format("thread {}", b.tid) : b.name;
    summary.dropped += b.dropped;
    for (const TraceEvent& e : b.events) {
      const double ts = static_cast<double>(e.ts_ns - recording.start_ns) / 1000.0;
      const int pid = pid_base + static_cast<int>(e.node);
      nodes_seen.insert(e.node);
      if (e.phase == 'C') {
        emit(fmt::format("{{\"name\":{},\"ph\":\"C\",\"ts\":{:.3f},\"pid\":{},\"args\":{{{}:{}}}}}",
                         json_string(trace_name_of(e.name)), ts, pid, json_string(trace_name_of(e.series)), e.value));
      } else {
        const uint64_t tid = track_of(b, e.lane);
        threads_seen.insert({e.node, tid});
        if (!thread_names.contains(tid))
          thread_names[tid] = e.lane == 0 ? thread_name : fmt::format("{} fiber {}", thread_name, e.lane);
        const std::string_view cat = trace_category_name(static_cast<TraceCategory>(e.category));
        if (e.phase == 'X')
          emit(fmt::format(
              "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{}}}",
              json_string(trace_name_of(e.name)), cat, ts, static_cast<double>(e.dur_ns) / 1000.0, pid, tid));
        else
          emit(
              fmt::format("{{\"name\":{},\"cat\":\"{}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":{:.3f},\"pid\":{},\"tid\":{}}}",
                          json_string(trace_name_of(e.name)), cat, ts, pid, tid));
      }
      ++summary.events;
    }
  }
  for (const uint32_t node : nodes_seen) {
    const std::string node_name = trace_node_name(node);
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

}  // namespace moka
