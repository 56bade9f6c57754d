// moka command-line tool: `moka run PLAN.json [--fetch a,b]`, `moka check PLAN.json`, `moka ops [TYPE]`.
// Exit codes: 0 success, 1 failure while running, 2 invalid input (bad JSON, plan, flags), 130 interrupted.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <variant>
#include <atomic>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string_view>
#include <nlohmann/json.hpp>

#include "moka/exec/control_ops.h"
#include "moka/moka.h"

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) { g_interrupted.store(true); }

// Output keeps the --fetch order and prints each blob's fields as dtype, shape, data.
using Json = nlohmann::ordered_json;

// Longest --exception-timeout accepted: larger values would overflow the millisecond count.
constexpr double kMaxExceptionTimeoutS = 1e9;

// Error messages go to stderr as exactly one line, even when they quote a name holding a newline.
std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else {
      out += ch;
    }
  }
  return out;
}

// JSON has no literal for non-finite numbers; they print as the strings the plan format reads.
// A float32 prints in its shortest form ("0.1", not 0.10000000149011612), which reads back as the
// same float32.
template <typename T>
Json number_json(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if constexpr (std::is_same_v<T, float>) return std::strtod(fmt::format("{}", v).c_str(), nullptr);
  return static_cast<double>(v);
}

Json blob_json(const moka::Blob& blob) {
  const moka::Tensor* t = blob.tensor_or_null();
  if (!t || !t->defined()) {
    return Json{{"type", blob.is_initialized() ? std::string(blob.type_name()) : "nothing"}};
  }
  Json data = Json::array();
  moka::visit_dtype(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (const auto& v : t->values<T>()) {
      if constexpr (std::is_floating_point_v<T>) {
        data.push_back(number_json(v));
      } else if constexpr (std::is_same_v<T, bool>) {
        data.push_back(static_cast<bool>(v));
      } else if constexpr (std::is_same_v<T, std::string>) {
        data.push_back(v);
      } else {
        data.push_back(static_cast<int64_t>(v));
      }
    }
  });
  return Json{{"dtype", std::string(moka::dtype_name(t->dtype()))}, {"shape", t->shape()}, {"data", data}};
}

std::vector<std::string> split_names(const std::vector<std::string>& lists) {
  std::vector<std::string> out;
  for (const auto& list : lists) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string name = list.substr(start, comma - start);
      if (name.empty()) throw moka::InvalidInput(fmt::format("--fetch: empty blob name in \"{}\"", list));
      out.push_back(std::move(name));
      start = comma + 1;
    }
  }
  return out;
}

// The blob a --fetch name means in a TaskGroup run: a declared output of exactly one node, else a
// blob present on exactly one node.
const moka::Blob* find_in_nodes(const moka::TaskGroupDef& group, const moka::NodeWorkspaces& nodes,
                                const std::string& name) {
  std::vector<std::string> declared, present;
  for (const auto& n : group.nodes) {
    if (std::find(n.outputs.begin(), n.outputs.end(), name) != n.outputs.end()) declared.push_back(n.node);
    if (const moka::Workspace* ws = nodes.find(n.node); ws && ws->has_blob(name)) present.push_back(n.node);
  }
  const std::vector<std::string>& where = declared.empty() ? present : declared;
  if (where.empty()) throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist on any node after the run", name));
  if (where.size() > 1 && !nodes.shared())
    throw moka::NotFound(fmt::format("--fetch: blob \"{}\" exists on several nodes ({})", name, fmt::join(where, ", ")));
  return nodes.find(where.front())->get_blob(name);
}

int cmd_run(const std::string& path, const std::vector<std::string>& fetch_lists, double exception_timeout_s,
            bool shared_workspace) {
  const std::vector<std::string> fetch = split_names(fetch_lists);
  const moka::RunnableDef doc = moka::load_runnable_file(path);
  moka::RunOptions options;
  options.should_continue = [] { return !g_interrupted.load(std::memory_order_relaxed); };
  options.exception_timeout = std::chrono::milliseconds(static_cast<int64_t>(exception_timeout_s * 1000));
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  moka::Workspace plan_ws;
  moka::NodeWorkspaces nodes(shared_workspace);
  std::function<const moka::Blob*(const std::string&)> lookup;
  if (const auto* plan = std::get_if<moka::PlanDef>(&doc)) {
    moka::check_plan(*plan);
    moka::run_plan(plan_ws, *plan, options);
    lookup = [&](const std::string& name) -> const moka::Blob* {
      const moka::Blob* b = plan_ws.get_blob(name);
      if (!b) throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist after the run", name));
      return b;
    };
  } else {
    const auto& group = std::get<moka::TaskGroupDef>(doc);
    moka::run_task_group(group, nodes, options);
    lookup = [&](const std::string& name) { return find_in_nodes(group, nodes, name); };
  }
  if (g_interrupted.load()) {
    std::cerr << "moka: interrupted\n";
    return 130;
  }
  Json out = Json::object();
  for (const auto& name : fetch) out[name] = blob_json(*lookup(name));
  std::cout << out.dump() << "\n";
  return 0;
}

int cmd_check(const std::string& path) {
  const moka::RunnableDef doc = moka::load_runnable_file(path);
  if (const auto* plan = std::get_if<moka::PlanDef>(&doc)) {
    moka::check_plan(*plan);
    std::cout << fmt::format("{}: ok ({} nets, {} top-level steps)\n", path, plan->network.size(),
                             plan->execution_step.size());
    return 0;
  }
  const auto& group = std::get<moka::TaskGroupDef>(doc);
  for (const auto& n : group.nodes) {
    try {
      moka::check_plan(n.plan);
    } catch (moka::Error& e) {
      e.add_context(fmt::format("node \"{}\"", n.node));
      throw;
    }
  }
  std::cout << fmt::format("{}: ok (task group, {} nodes)\n", path, group.nodes.size());
  return 0;
}

int cmd_ops(const std::string& type) {
  moka::register_control_operators();  // If, While, Do, ... live in the exec layer
  const auto& reg = moka::OperatorRegistry::global();
  if (!type.empty()) {
    const moka::OpSchema* s = reg.schema(type);
    if (!s) throw moka::InvalidInput(fmt::format("unknown operator type \"{}\"", type));
    std::cout << s->describe();
    return 0;
  }
  for (const auto& t : reg.types()) std::cout << reg.schema(t)->describe() << "\n";
  return 0;
}

// After a run failed, a worker stuck in an operator that ignored cancellation may still be
// running; leave without static destructors so it cannot touch destroyed globals.
int exit_now(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moka: a runtime for dataflow jobs (Caffe2's task/job layer in C++)", "moka"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "moka 0.1.0");
  app.footer(
      "Usage of the subcommands (moka SUBCOMMAND --help describes each):\n"
      "  moka run PLAN.json [--fetch NAME,...] [--exception-timeout SECONDS] [--shared-workspace]\n"
      "  moka check PLAN.json\n"
      "  moka ops [TYPE]\n"
      "Exit codes: 0 success, 1 failure while running, 2 invalid input (bad JSON, plan or flags), "
      "130 interrupted. Errors are one line on stderr. See docs/cli.md.");

  auto* run = app.add_subcommand("run", "Run a plan (JSON, see docs/plan-format.md) in a fresh workspace and print "
                                        "the fetched blobs as one JSON object");
  std::string run_path;
  std::vector<std::string> fetch;
  double exception_timeout = 60;
  run->add_option("plan", run_path, "Plan JSON file")->required();
  run->add_option("--fetch", fetch, "Blob names to print after the run, comma-separated (repeatable)");
  bool shared_workspace = false;
  run->add_flag("--shared-workspace", shared_workspace,
                "For a task group: run every node in one workspace, as Caffe2's LocalSession did "
                "(default: each node its own workspace)");
  // NaN and values too large for a millisecond count would make the conversion undefined.
  const CLI::Validator seconds(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v >= 0 && v <= kMaxExceptionTimeoutS))
          return fmt::format("expected a number of seconds from 0 to {:g}, got \"{}\"", kMaxExceptionTimeoutS, text);
        return {};
      },
      "SECONDS");
  run->add_option("--exception-timeout", exception_timeout,
                  "Seconds to wait for concurrent workers to stop after an error (default 60)")
      ->check(seconds);
  run->footer(
      "Output: one JSON object on stdout, one key per fetched blob in --fetch order: "
      "{\"y\": {\"dtype\": \"int64\", \"shape\": [], \"data\": [5]}}; NaN and infinities print as "
      "\"NaN\", \"Infinity\", \"-Infinity\"; a blob that holds no tensor prints as {\"type\": NAME}.\n"
      "Exit codes: 0 success, 1 failure while running (a --fetch name missing after the run included), "
      "2 invalid input, 130 interrupted (SIGINT/SIGTERM).");

  auto* check = app.add_subcommand("check", "Validate a plan without running it (exit 0 if valid, 2 if not)");
  std::string check_path;
  check->add_option("plan", check_path, "Plan JSON file")->required();

  auto* ops = app.add_subcommand("ops", "List every registered operator with its schema");
  std::string op_type;
  ops->add_option("type", op_type, "Show only this operator type");

  // CLI11 reports an unknown first word as "A subcommand is required"; name it instead.
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && first != "run" && first != "check" && first != "ops") {
    std::cerr << "moka: unknown subcommand \"" << one_line(argv[1]) << "\" (expected run, check or ops; see moka --help)\n";
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "moka: " << one_line(e.what()) << " (see moka --help)\n";
    return 2;
  }

  try {
    if (*run) return cmd_run(run_path, fetch, exception_timeout, shared_workspace);
    if (*check) return cmd_check(check_path);
    if (*ops) return cmd_ops(op_type);
  } catch (const moka::InvalidInput& e) {
    std::cerr << "moka: invalid input: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "moka: error: " << one_line(e.what()) << "\n";
    return exit_now(1);
  } catch (...) {
    std::cerr << "moka: error: unknown exception\n";
    return exit_now(1);
  }
  return 0;
}
