// moka command-line tool: `moka run PLAN.json [--fetch a,b]`, `moka check PLAN.json`, `moka ops [TYPE]`.
// Exit codes: 0 success, 1 failure while running, 2 invalid input (bad JSON, plan, flags), 130 interrupted.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "moka/moka.h"

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) { g_interrupted.store(true); }

nlohmann::json number_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

nlohmann::json blob_json(const moka::Blob& blob) {
  const moka::Tensor* t = blob.tensor_or_null();
  if (!t || !t->defined()) {
    return nlohmann::json{{"type", blob.is_initialized() ? std::string(blob.type_name()) : "nothing"}};
  }
  nlohmann::json data = nlohmann::json::array();
  moka::visit_dtype(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (const auto& v : t->values<T>()) {
      if constexpr (std::is_floating_point_v<T>) {
        data.push_back(number_json(static_cast<double>(v)));
      } else if constexpr (std::is_same_v<T, bool>) {
        data.push_back(static_cast<bool>(v));
      } else if constexpr (std::is_same_v<T, std::string>) {
        data.push_back(v);
      } else {
        data.push_back(static_cast<int64_t>(v));
      }
    }
  });
  return nlohmann::json{{"dtype", std::string(moka::dtype_name(t->dtype()))}, {"shape", t->shape()}, {"data", data}};
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

int cmd_run(const std::string& path, const std::vector<std::string>& fetch_lists, double exception_timeout_s) {
  const std::vector<std::string> fetch = split_names(fetch_lists);
  moka::PlanDef plan = moka::load_plan_file(path);
  moka::check_plan(plan);
  moka::Workspace ws;
  moka::RunOptions options;
  options.should_continue = [] { return !g_interrupted.load(std::memory_order_relaxed); };
  options.exception_timeout = std::chrono::milliseconds(static_cast<int64_t>(exception_timeout_s * 1000));
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  moka::run_plan(ws, plan, options);
  if (g_interrupted.load()) {
    std::cerr << "moka: interrupted\n";
    return 130;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& name : fetch) {
    const moka::Blob* b = ws.get_blob(name);
    if (!b) throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist after the run", name));
    out[name] = blob_json(*b);
  }
  std::cout << out.dump() << "\n";
  return 0;
}

int cmd_check(const std::string& path) {
  moka::PlanDef plan = moka::load_plan_file(path);
  moka::check_plan(plan);
  std::cout << fmt::format("{}: ok ({} nets, {} top-level steps)\n", path, plan.network.size(),
                           plan.execution_step.size());
  return 0;
}

int cmd_ops(const std::string& type) {
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moka: a runtime for dataflow jobs (Caffe2's task/job layer in C++)", "moka"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "moka 0.1.0");

  auto* run = app.add_subcommand("run", "Run a plan (JSON, see docs/plan-format.md) in a fresh workspace and print "
                                        "the fetched blobs as one JSON object");
  std::string run_path;
  std::vector<std::string> fetch;
  double exception_timeout = 60;
  run->add_option("plan", run_path, "Plan JSON file")->required();
  run->add_option("--fetch", fetch, "Blob names to print after the run, comma-separated (repeatable)");
  run->add_option("--exception-timeout", exception_timeout,
                  "Seconds to wait for concurrent workers to stop after an error (default 60)")
      ->check(CLI::NonNegativeNumber);

  auto* check = app.add_subcommand("check", "Validate a plan without running it (exit 0 if valid, 2 if not)");
  std::string check_path;
  check->add_option("plan", check_path, "Plan JSON file")->required();

  auto* ops = app.add_subcommand("ops", "List every registered operator with its schema");
  std::string op_type;
  ops->add_option("type", op_type, "Show only this operator type");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "moka: " << e.what() << " (see moka --help)\n";
    return 2;
  }

  try {
    if (*run) return cmd_run(run_path, fetch, exception_timeout);
    if (*check) return cmd_check(check_path);
    if (*ops) return cmd_ops(op_type);
  } catch (const moka::InvalidInput& e) {
    std::cerr << "moka: invalid input: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "moka: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
