// ProgressLine: samples the pipes' batch counters (stat registry) and the live queues, and redraws one status line.
#include "progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "log.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/stats.h"

namespace moka_cli {

namespace {
constexpr auto kRedraw = std::chrono::milliseconds(250);
constexpr std::string_view kPipeMark = "/pipe/";
constexpr std::string_view kCountSuffix = "/count";

// "<node>/<name>" of a pipe's timer key "<node>/pipe/<name>/<input>/<output>/count".
std::string pipe_name(const std::string& key) {
  const std::size_t mark = key.find(kPipeMark);
  const std::size_t at = mark + kPipeMark.size();
  const std::size_t end = key.find('/', at);
  return key.substr(0, mark) + "/" + key.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// A queue's blob is "<queue>/handler" (Queue's naming): the queue's own name reads better.
std::string queue_label(const std::string& blob) {
  constexpr std::string_view kHandler = "/handler";
  if (blob.size() > kHandler.size() && blob.compare(blob.size() - kHandler.size(), kHandler.size(), kHandler) == 0)
    return blob.substr(0, blob.size() - kHandler.size());
  return blob;
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
  if (since >= 0.2) {  // pipe rates over the last sample period
    for (const auto& [key, value] : moka::StatRegistry::global().export_all(/*reset=*/false)) {
      if (key.find(kPipeMark) == std::string::npos || key.size() <= kCountSuffix.size() ||
          key.compare(key.size() - kCountSuffix.size(), kCountSuffix.size(), kCountSuffix) != 0)
        continue;
      const std::string name = pipe_name(key);
      auto [it, fresh] = last_counts_.try_emplace(key, value);
      rates_[name] = fresh || value < it->second ? 0.0 : static_cast<double>(value - it->second) / since;
      it->second = value;
    }
    last_sample_ = now;
  }
  std::string line = fmt::format("epoch {} | {:.1f} s", epoch_, std::chrono::duration<double>(now - start_).count());
  for (const auto& [name, rate] : rates_) line += fmt::format(" | {} {:.0f} batches/s", name, rate);
  std::vector<moka::QueueDepth> queues = moka::live_queue_depths();
  std::sort(queues.begin(), queues.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& q : queues) line += fmt::format(" | {} {}/{}", queue_label(q.name), q.depth, q.capacity);
  if (!last_checkpoint_.empty()) line += " | " + last_checkpoint_;
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col)
    line.resize(ws.ws_col - 1);  // one row: \r must bring the cursor back to its start
  return line;
}

void ProgressLine::loop() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, kRedraw, [this] { return stop_; });
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
