// The CLI's one logger: lines of a command's output by level (--quiet, --log-level), under one lock with the live
// progress line of moka job run (progress.h), so that the two never garble each other (docs/cli.md).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace moka_cli {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

/// "error", "warn", "info", "debug"; false for anything else.
bool parse_log_level(std::string_view text, LogLevel& level);
void set_log_level(LogLevel level);
LogLevel log_level();
/// Only rank 0 prints under a launcher (every rank has the same output).
void set_quiet_rank(bool quiet);
bool quiet_rank();

/// A line at `level` on stdout, when the level is enabled and this is not a quiet rank; flushed.
void log_line(LogLevel level, const std::string& line);
/// The command's result (the JSON of fetched blobs): printed at every level, on rank 0 only.
void result_line(const std::string& line);

/// While set, `clear` erases the live line before a log line is written and `redraw` writes it again after;
/// both run under the logger's lock (progress.cpp).
void set_live_line(std::function<void()> clear, std::function<void()> redraw);
/// Runs f under the logger's lock (the progress thread draws under it).
void with_output_lock(const std::function<void()>& f);

}  // namespace moka_cli
