// `moka plan show FILE` and `moka plan dot FILE [--svg OUT]`: a plan, TaskGroup or job drawn as an outline or a
// Graphviz graph (docs/cli.md, `moka plan`; the drawing itself is moka/defs/plan_render.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace moka_cli {

/// The subcommands and what their flags set.
struct PlanCommands {
  CLI::App* group = nullptr;
  CLI::App* show = nullptr;
  CLI::App* dot = nullptr;
  std::string path;
  bool no_operators = false;
  std::string svg;
};

/// Adds `moka plan ...` to app.
void add_plan_commands(CLI::App& app, PlanCommands& c);

/// Runs the chosen subcommand: 0, or throws (moka::InvalidInput for a bad file: exit 2; moka::RuntimeError when
/// Graphviz's `dot` is missing or fails: exit 1).
int run_plan_command(const PlanCommands& c);

}  // namespace moka_cli
