// `moka plan show|dot` (tools/moka/plan_commands.h). `--svg` pipes the DOT text into Graphviz's `dot -Tsvg`
// (Debian's graphviz), started with posix_spawnp; without it the command fails naming the package.
#include "plan_commands.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <variant>
#include <vector>

#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/defs/plan_render.h"

extern char** environ;

namespace moka_cli {

namespace {

// Runs `dot -Tsvg -o out` with `text` on its stdin; RuntimeError naming what failed.
void write_svg(const std::string& text, const std::string& out) {
  int fds[2];
  if (::pipe(fds) != 0) throw moka::RuntimeError(fmt::format("pipe failed: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<std::string> args = {"dot", "-Tsvg", "-o", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    throw moka::RuntimeError(
        fmt::format("--svg: cannot start Graphviz's dot ({}); install it with apt-get install "
                    "graphviz, or print DOT without --svg",
                    std::strerror(rc)));
  }
  // dot exiting early must not kill us with SIGPIPE: the write fails with EPIPE and the exit status says why.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t n = ::write(fds[1], rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fds[1]);
  ::sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw moka::RuntimeError(fmt::format("--svg: dot -Tsvg -o {} failed (exit status {})", out,
                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1));
}

}  // namespace

void add_plan_commands(CLI::App& app, PlanCommands& c) {
  c.group = app.add_subcommand("plan", "Draw a plan, a TaskGroup or a job (see docs/plan-format.md)");
  c.group->require_subcommand(1);
  c.show = c.group->add_subcommand("show", "Print an indented outline: groups, nodes, steps, nets and operators");
  c.dot = c.group->add_subcommand("dot", "Print a Graphviz DOT graph of the steps, substeps and nets");
  for (CLI::App* sub : {c.show, c.dot}) sub->add_option("file", c.path, "Plan, TaskGroup or job JSON file")->required();
  c.show->add_flag("--no-operators", c.no_operators, "Leave out the operators of each net (counts only)");
  c.dot->add_option("--svg", c.svg, "Write an SVG file through Graphviz's dot instead of printing DOT");
  for (CLI::App* sub : {c.show, c.dot})
    sub->footer("Exit codes: 0, 2 the file is not a valid plan, TaskGroup or job document, 1 --svg failed.");
}

int run_plan_command(const PlanCommands& c) {
  const moka::DocumentDef doc = moka::load_document_file(c.path);
  if (*c.show) {
    std::cout << std::visit([&](const auto& d) { return moka::plan_outline(d, !c.no_operators); }, doc);
    return 0;
  }
  const std::string dot = std::visit([](const auto& d) { return moka::plan_dot(d); }, doc);
  if (c.svg.empty()) {
    std::cout << dot;
  } else {
    write_svg(dot, c.svg);
  }
  return 0;
}

}  // namespace moka_cli
