// The CLI's logger: levels, the rank that prints, and the lock shared with the live progress line.
#include "log.h"

#include <atomic>
#include <iostream>
#include <mutex>

namespace moka_cli {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
std::atomic<bool> g_quiet_rank{false};
std::mutex g_mu;
std::function<void()> g_clear, g_redraw;  // under g_mu

void write_locked(const std::string& line) {
  if (g_clear) g_clear();
  std::cout << line << std::endl;
  if (g_redraw) g_redraw();
}
}  // namespace

bool parse_log_level(std::string_view text, LogLevel& level) {
  if (text == "error") return level = LogLevel::error, true;
  if (text == "warn") return level = LogLevel::warn, true;
  if (text == "info") return level = LogLevel::info, true;
  if (text == "debug") return level = LogLevel::debug, true;
  return false;
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_quiet_rank(bool quiet) { g_quiet_rank.store(quiet); }
bool quiet_rank() { return g_quiet_rank.load(); }

void log_line(LogLevel level, const std::string& line) {
  if (g_quiet_rank.load() || static_cast<int>(level) > g_level.load()) return;
  std::lock_guard lk(g_mu);
  write_locked(line);
}

void result_line(const std::string& line) {
  if (g_quiet_rank.load()) return;
  std::lock_guard lk(g_mu);
  write_locked(line);
}

void set_live_line(std::function<void()> clear, std::function<void()> redraw) {
  std::lock_guard lk(g_mu);
  g_clear = std::move(clear);
  g_redraw = std::move(redraw);
}

void with_output_lock(const std::function<void()>& f) {
  std::lock_guard lk(g_mu);
  f();
}

}  // namespace moka_cli
