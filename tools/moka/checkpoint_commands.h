// `moka checkpoint ls|inspect|verify|blob DIR`: look inside a checkpoint directory without changing it
// (docs/cli.md, `moka checkpoint`; the reading itself is moka/job/checkpoint_inspect.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace moka_cli {

/// The subcommands and what their flags set.
struct CheckpointCommands {
  CLI::App* group = nullptr;
  CLI::App* ls = nullptr;
  CLI::App* inspect = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* blob = nullptr;
  std::string dir;
  std::string blob_name;
  std::optional<int64_t> epoch;
  std::string node;
  int64_t keep_last = 0;
  int64_t keep_every = 0;
  bool no_verify = false;
  bool json = false;
};

/// Adds `moka checkpoint ...` to app; `count` validates --epoch, --keep-last and --keep-every.
void add_checkpoint_commands(CLI::App& app, CheckpointCommands& c, const CLI::Validator& count);

/// Runs the chosen subcommand; its exit code (0, or 2 when a checked thing is bad). Errors about the
/// input (a missing directory, epoch, node or blob) are moka::InvalidInput (exit 2).
int run_checkpoint_command(const CheckpointCommands& c);

}  // namespace moka_cli
