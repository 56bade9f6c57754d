// ProgressLine: samples the pipes' batch counters (stat registry) and the live queues, and redraws one status line.
#include "progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "log.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/stats.h"

namespace moka_cli {

namespace {
constexpr auto kRedraw = std::chrono::milliseconds(250);

// $MOKA_PROGRESS_INTERVAL_MS (1 to 60000) when set, else four times a second; a bad value is named and ignored.
std::chrono::milliseconds redraw_interval() {
  const char* text = std::getenv("MOKA_PROGRESS_INTERVAL_MS");
  if (text == nullptr || *text == '\0') return kRedraw;
  int64_t ms = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, ms);
  if (ec != std::errc() || ptr != end || ms < 1 || ms > 60000) {
    log_line(LogLevel::warn,
             fmt::format("MOKA_PROGRESS_INTERVAL_MS=\"{}\" is not a number of milliseconds from 1 to 60000; "
                         "the status line is redrawn every {} ms",
                         text, kRedraw.count()));
    return kRedraw;
  }
  return std::chrono::milliseconds(ms);
}
}  // namespace

std::string byte_size(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  for (; v >= 1024 && u + 1 < std::size(units); ++u) v /= 1024;
  return fmt::format("{:.1f} {}", v, units[u]);
}

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  interval_ = redraw_interval();
  set_live_line(
      [this] {
        if (drawn_) std::fputs("\r\033[K", stderr);
      },
      [this] {
        if (drawn_) std::fputs(("\r" + status()).c_str(), stderr), std::fflush(stderr);
      });
  thread_ = std::thread([this] { loop(); });
}

ProgressLine::~ProgressLine() {
  if (!enabled_) return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  with_output_lock([this] {
    if (drawn_) std::fputs("\r\033[K", stderr), std::fflush(stderr);
    drawn_ = false;
  });
  set_live_line({}, {});
}

void ProgressLine::epoch_done(int64_t epoch, bool stop, uint64_t checkpoint_bytes, double checkpoint_seconds) {
  std::lock_guard lk(mu_);
  epoch_ = stop ? epoch : epoch + 1;
  if (checkpoint_bytes > 0)
    last_checkpoint_ =
        fmt::format("checkpoint {} {} in {:.2f} s", epoch, byte_size(checkpoint_bytes), checkpoint_seconds);
}

std::string ProgressLine::status() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lk(mu_);
  const double since = std::chrono::duration<double>(now - last_sample_).count();
  // Pipe rates over the last sample period: 0.2 s, or the redraw interval when that is shorter.
  if (since >= std::min(0.2, std::chrono::duration<double>(interval_).count())) {
    for (const moka::PipeCounts& p : moka::pipe_counts(moka::StatRegistry::global().export_all(/*reset=*/false))) {
      const int64_t count = p.counts_records ? p.records : p.batches;
      auto [it, fresh] = last_counts_.try_emplace(p.pipe, count);
      rates_[p.label] = {fresh || count < it->second ? 0.0 : static_cast<double>(count - it->second) / since,
                         p.counts_records ? "records/s" : "batches/s"};
      it->second = count;
    }
    last_sample_ = now;
  }
  std::string line = fmt::format("epoch {} | {:.1f} s", epoch_, std::chrono::duration<double>(now - start_).count());
  for (const auto& [name, rate] : rates_) line += fmt::format(" | {} {:.0f} {}", name, rate.per_second, rate.unit);
  std::vector<moka::QueueStats> queues = moka::live_queue_stats();
  std::sort(queues.begin(), queues.end(), [](const auto& a, const auto& b) { return a.label < b.label; });
  for (const auto& q : queues) line += fmt::format(" | {} {}/{}", q.label, q.depth, q.capacity);
  if (!last_checkpoint_.empty()) line += " | " + last_checkpoint_;
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col)
    line.resize(ws.ws_col - 1);  // one row: \r must bring the cursor back to its start
  return line;
}

void ProgressLine::loop() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, interval_, [this] { return stop_; });
    if (stop_) break;
    lk.unlock();
    const std::string line = status();
    with_output_lock([&] {
      std::fputs(("\r\033[K" + line).c_str(), stderr);
      std::fflush(stderr);
      drawn_ = true;
    });
    lk.lock();
  }
}

}  // namespace moka_cli
