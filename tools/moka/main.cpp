// moka command-line tool: `moka run PLAN.json [--fetch a,b]`, `moka check PLAN.json`, `moka ops [TYPE]`,
// `moka job run JOB.json`, `moka plan show|dot FILE` (plan_commands.h), `moka checkpoint ls|inspect|verify|blob DIR`
// (checkpoint_commands.h).
// Exit codes: 0 success, 1 failure while running, 2 invalid input (bad JSON, plan, flags), 130 interrupted.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <variant>

#include <unistd.h>

#include "blob_json.h"
#include "checkpoint_commands.h"
#include "log.h"
#include "moka/defs/json.h"
#include "moka/exec/control_ops.h"
#include "moka/exec/register_operators.h"
#include "moka/job/run_job.h"
#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "plan_commands.h"
#include "progress.h"

namespace {

// Output keeps the --fetch order and prints each blob's fields as dtype, shape, data.
using moka_cli::blob_json;
using moka_cli::Json;

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
// The node whose blob `name` --fetch means: the one node of group that declares it as an output, else
// the one node that has it (`has(nodes)`: which of the nodes hold it; under mpirun a collective call).
std::string fetch_node(const moka::TaskGroupDef& group, const std::string& name,
                       const std::function<std::vector<std::string>(const std::vector<std::string>&)>& has,
                       bool shared = false) {
  std::vector<std::string> where, nodes;
  for (const auto& n : group.nodes) {
    if (std::find(n.outputs.begin(), n.outputs.end(), name) != n.outputs.end()) where.push_back(n.node);
    nodes.push_back(n.node);
  }
  if (where.empty()) where = has(nodes);
  if (where.empty())
    throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist on any node after the run", name));
  if (where.size() > 1 && !shared)
    throw moka::NotFound(
        fmt::format("--fetch: blob \"{}\" exists on several nodes ({})", name, fmt::join(where, ", ")));
  return where.front();
}

const moka::Blob* find_in_nodes(const moka::TaskGroupDef& group, const moka::NodeWorkspaces& nodes,
                                const std::string& name) {
  const std::string node = fetch_node(
      group, name,
      [&](const std::vector<std::string>& all) {
        std::vector<std::string> present;
        for (const auto& n : all)
          if (const moka::Workspace* ws = nodes.find(n); ws && ws->has_blob(name)) present.push_back(n);
        return present;
      },
      nodes.shared());
  const moka::Workspace* ws = nodes.find(node);
  const moka::Blob* blob = ws ? ws->get_blob(name) : nullptr;
  if (!blob) throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist on node \"{}\"", name, node));
  return blob;
}

// --fetch under mpirun: the blob from the rank that hosts its node (collective: every rank calls it).
moka::Blob fetch_across_ranks(const moka::TaskGroupDef& group, moka::MpiSession& session, const std::string& name) {
  const std::string node =
      fetch_node(group, name, [&](const std::vector<std::string>& all) { return session.nodes_with_blob(name, all); });
  moka::Blob blob;
  blob.get_mutable<moka::Tensor>() = session.fetch(node, name);
  return blob;
}

// After a run failed, a worker stuck in an operator that ignored cancellation may still be
// running; leave without static destructors so it cannot touch destroyed globals.
int exit_now(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

// The check of an integer count flag (--keep-last, --keep-every): the whole value a decimal integer
// from 0 to INT64_MAX, else a message that says so and quotes the value (CLI11's NonNegativeNumber
// printed its range as a 300-digit number).
CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc() && stop == end && v >= 0) return {};
        if (ec == std::errc::result_out_of_range && stop == end && text[0] != '-')
          return fmt::format("expected an integer from 0 to {}, got {}", std::numeric_limits<int64_t>::max(), text);
        if ((ec == std::errc() || ec == std::errc::result_out_of_range) && stop == end)
          return fmt::format("expected an integer >= 0, got {}", text);
        return fmt::format("expected an integer >= 0, got \"{}\"", one_line(text));
      },
      "N");
}

// --fibers / --threads (exclusive: CLI11 checks); neither: Concurrency::automatic.
moka::Concurrency concurrency_of(bool fibers, bool threads) {
  return fibers ? moka::Concurrency::fibers : threads ? moka::Concurrency::threads : moka::Concurrency::automatic;
}

// Under mpirun (or srun) only rank 0 prints: results, and error lines (every rank has the same error).
bool g_quiet_rank = false;

// One line of a command's output on stdout (only rank 0's under mpirun), flushed: at info level, through the
// one logger (log.h), which keeps it clear of the progress line.
void say(const std::string& line) { moka_cli::log_line(moka_cli::LogLevel::info, line); }
void warn(const std::string& line) { moka_cli::log_line(moka_cli::LogLevel::warn, line); }

// The rank and size an MPI launcher gave this process (from its environment; 0 and 1 without one).
int launcher_env(std::initializer_list<const char*> vars, int fallback) {
  for (const char* var : vars)
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return fallback;
}
// --trace FILE / --trace-level LEVEL of moka run and moka job run, or MOKA_TRACE / MOKA_TRACE_LEVEL when the
// flags are not given (docs/tracing.md). Under a launcher each rank writes a file of its own: FILE with
// ".rank<r>" before its extension.
struct TraceArgs {
  std::string path;
  std::string level;
};

int launcher_rank();

moka::TraceOptions trace_options(TraceArgs args, bool under_launcher) {
  if (args.path.empty())
    if (const char* env = std::getenv("MOKA_TRACE")) args.path = env;
  if (args.level.empty())
    if (const char* env = std::getenv("MOKA_TRACE_LEVEL")) args.level = env;
  moka::TraceOptions o;
  if (args.path.empty()) {
    o.level = moka::TraceLevel::off;
    return o;
  }
  o.level = args.level.empty() ? moka::TraceLevel::steps : moka::trace_level_from_name(args.level);
  o.path = args.path;
  if (under_launcher) {
    const int rank = launcher_rank();
    const std::filesystem::path p(args.path);
    o.path = (p.parent_path() / (p.stem().string() + ".rank" + std::to_string(rank) + p.extension().string())).string();
    o.process_label = "rank " + std::to_string(rank);
    o.process_index = rank;
  }
  return o;
}

int launcher_rank() { return launcher_env({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0); }

// `moka run` under an MPI launcher: each node of the TaskGroup (a plan is node "local") runs on its rank
// (docs/distributed.md); --fetch names a blob of any node, fetched from the rank that hosts it.
int cmd_run_mpi(const moka::RunnableDef& doc, const std::vector<std::string>& fetch, const moka::RunOptions& options) {
  moka::TaskGroupDef group;
  if (const auto* plan = std::get_if<moka::PlanDef>(&doc)) {
    moka::check_plan(*plan);
    group.nodes.push_back({.node = "local", .plan = *plan, .outputs = {}});
  } else {
    group = std::get<moka::TaskGroupDef>(doc);
  }
  moka::MpiSessionOptions session_options;
  session_options.run = options;
  moka::MpiSession session(session_options);
  // A run cancelled on any rank (each gets the signal from mpirun) throws Cancelled on every rank.
  bool interrupted = false;
  try {
    session.run(group);
  } catch (const moka::Cancelled&) {
    interrupted = true;
  } catch (const moka::Error&) {
    if (!options.cancel->cancelled()) throw;
  }
  if (interrupted || options.cancel->cancelled()) {
    if (!g_quiet_rank) std::cerr << "moka: interrupted\n";
    std::cout.flush();
    std::cerr.flush();
    moka::finalize_mpi();
    std::_Exit(130);
  }
  Json out = Json::object();
  for (const auto& name : fetch) out[name] = blob_json(fetch_across_ranks(group, session, name));
  if (!g_quiet_rank) std::cout << out.dump() << "\n";
  return 0;
}

int cmd_run(const std::string& path, const std::vector<std::string>& fetch_lists, double exception_timeout_s,
            bool shared_workspace, moka::Concurrency concurrency) {
  const std::vector<std::string> fetch = split_names(fetch_lists);
  const moka::RunnableDef doc = moka::load_runnable_file(path);
  moka::RunOptions options;
  options.cancel = std::make_shared<moka::CancelToken>();
  options.exception_timeout = std::chrono::milliseconds(static_cast<int64_t>(exception_timeout_s * 1000));
  options.concurrency = concurrency;
  // SIGINT/SIGTERM cancel the run: steps stop at their next net, blocked operators wake up.
  moka::SignalCancellation on_signal(options.cancel);
  if (moka::launched_by_mpi()) return cmd_run_mpi(doc, fetch, options);

  moka::Workspace plan_ws;
  moka::NodeWorkspaces nodes(shared_workspace);
  std::function<const moka::Blob*(const std::string&)> lookup;
  try {
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
  } catch (const moka::Error&) {
    // An operator that noticed the cancellation (While, a queue) throws; the run was interrupted.
    if (!options.cancel->cancelled()) throw;
  }
  if (options.cancel->cancelled()) {
    std::cerr << "moka: interrupted\n";
    return exit_now(130);
  }
  Json out = Json::object();
  for (const auto& name : fetch) out[name] = blob_json(*lookup(name));
  std::cout << out.dump() << "\n";
  return 0;
}

// Options of `moka job run` as parsed from the command line.
struct JobRunArgs {
  std::string path;
  std::string checkpoint_dir;
  std::string db_type;  // empty: the resumed checkpoint's, minidb from scratch
  std::string resume;   // "", "latest" or an epoch number
  bool start_over = false;
  bool accept_changed_job = false;
  int64_t keep_last = 0;
  int64_t keep_every = 0;
  bool background_save = false;
  bool tolerate_save_failures = false;
  bool no_checkpoints = false;
  std::vector<std::string> fetch;
  double exception_timeout_s = 60;
  bool fibers = false;
  bool threads = false;
  bool progress = true;   // --no-progress: no live status line even on a terminal
  bool quiet = false;     // --quiet: only the result and errors
  std::string log_level;  // --log-level error|warn|info|debug (default info)
};

int cmd_job_run(const JobRunArgs& args) {
  const std::vector<std::string> fetch = split_names(args.fetch);
  const moka::JobDef job = moka::load_job_file(args.path);
  moka::JobRunOptions options;
  options.checkpoint_dir = args.checkpoint_dir;
  options.db_type = args.db_type;
  if (args.resume == "latest") {
    options.resume_latest = true;
  } else if (!args.resume.empty()) {
    int64_t epoch = -1;
    auto [end, ec] = std::from_chars(args.resume.data(), args.resume.data() + args.resume.size(), epoch);
    if (ec != std::errc() || end != args.resume.data() + args.resume.size() || epoch < 0)
      throw moka::InvalidInput(
          fmt::format("--resume: expected \"latest\" or an epoch number >= 0, got \"{}\"", args.resume));
    options.resume_from_epoch = epoch;
  }
  options.retention = {.keep_last = args.keep_last, .keep_every = args.keep_every};
  options.existing = args.start_over ? moka::ExistingCheckpoints::discard : moka::ExistingCheckpoints::refuse;
  options.accept_changed_job = args.accept_changed_job;
  options.background_save = args.background_save;
  options.tolerate_save_failures = args.tolerate_save_failures;
  options.run.cancel = std::make_shared<moka::CancelToken>();
  options.run.exception_timeout = std::chrono::milliseconds(static_cast<int64_t>(args.exception_timeout_s * 1000));
  options.run.concurrency = concurrency_of(args.fibers, args.threads);
  // On a terminal, a live status line on stderr (epoch, time, pipe rates, queue depths, last checkpoint).
  moka_cli::ProgressLine progress(args.progress && !g_quiet_rank && moka_cli::log_level() >= moka_cli::LogLevel::info &&
                                  ::isatty(STDERR_FILENO) == 1);
  options.on_epoch = [&progress](const moka::EpochReport& r) {
    progress.epoch_done(r.epoch, r.stop, r.checkpointed ? r.checkpoint_bytes : 0, r.checkpoint_seconds);
    std::string line =
        r.epoch == 0 ? std::string("epoch 0 (init)") : fmt::format("epoch {}: {:.3f} s", r.epoch, r.seconds);
    if (r.checkpointed) {
      line += fmt::format(", checkpoint {} in {:.3f} s{}", moka_cli::byte_size(r.checkpoint_bytes),
                          r.checkpoint_seconds, r.background ? " (snapshot; written in the background)" : "");
    }
    if (r.stop) line += ", stop";
    say(line);
  };
  // A background save, once it has been written and committed (or has failed, tolerated: its error
  // is printed at the end with the others).
  options.on_checkpoint_written = [](const moka::CheckpointWritten& w) {
    if (w.ok)
      say(fmt::format("epoch {}: checkpoint written in {:.3f} s (background)", w.epoch, w.write_seconds));
    else
      say(fmt::format("epoch {}: checkpoint not written (background; failure tolerated)", w.epoch));
  };
  // The resume choice, reported before anything loads: which epoch, which newer ones were skipped and why.
  bool resume_chosen = false;
  options.on_resume = [&](const moka::ResumeChoice& choice) {
    resume_chosen = true;
    for (const auto& [epoch, why] : choice.skipped)
      warn(fmt::format("skipping checkpoint epoch {}: {}", epoch, one_line(why)));
    if (choice.epoch)
      say(fmt::format("resuming from epoch {}", *choice.epoch));
    else
      say(fmt::format("no committed checkpoint in {}: starting from scratch", options.checkpoint_dir));
  };
  // SIGINT/SIGTERM cancel the job: the epoch in flight stops, blocked operators wake up.
  moka::SignalCancellation on_signal(options.run.cancel);

  // Under mpirun each node runs on its rank (docs/distributed.md); without, every node in this process.
  std::shared_ptr<moka::NodeWorkspaces> nodes;
  std::unique_ptr<moka::MpiSession> mpi;
  std::unique_ptr<moka::Session> local;
  if (moka::launched_by_mpi()) {
    moka::MpiSessionOptions session_options;
    session_options.run = options.run;
    mpi = std::make_unique<moka::MpiSession>(session_options);
  } else {
    nodes = std::make_shared<moka::NodeWorkspaces>();
    moka::LocalSessionOptions session_options;
    session_options.run = options.run;
    local = std::make_unique<moka::LocalSession>(nodes, session_options);
  }
  moka::Session& session = mpi ? static_cast<moka::Session&>(*mpi) : *local;
  moka::JobRunResult result;
  try {
    result = moka::run_job(job, session, options);
  } catch (const moka::Cancelled&) {
    if (!g_quiet_rank) std::cerr << "moka: interrupted\n";
    if (mpi) {
      std::cout.flush();
      moka::finalize_mpi();
      std::_Exit(130);
    }
    return 130;
  } catch (const moka::NotFound& e) {
    // Only the resume epoch can be missing before the job starts: a bad --resume.
    if (options.resume_from_epoch && !resume_chosen)
      throw moka::InvalidInput(fmt::format("--resume {}: {}", *options.resume_from_epoch, e.what()));
    throw;
  }
  for (const auto& e : result.save_errors) warn("checkpoint save failed (tolerated): " + one_line(e));
  if (!result.removed_temporaries.empty())
    say(fmt::format("removed {} temporary file(s) an interrupted run left in {}", result.removed_temporaries.size(),
                    options.checkpoint_dir));
  // Which of `of` hold blob `name` (under mpirun: collective, each rank answers for its nodes).
  auto holding = [&](const std::string& name, const std::vector<std::string>& of) {
    if (mpi) return mpi->nodes_with_blob(name, of);
    std::vector<std::string> present;
    for (const auto& n : of)
      if (const moka::Workspace* ws = nodes->find(n); ws && ws->has_blob(name)) present.push_back(n);
    return present;
  };
  auto value_of = [&](const std::string& node, const std::string& name) {
    if (mpi) {
      moka::Blob blob;
      blob.get_mutable<moka::Tensor>() = mpi->fetch(node, name);
      return blob_json(blob);
    }
    return blob_json(*nodes->find(node)->get_blob(name));
  };
  Json out = Json::object();
  for (const moka::TaskGroupDef* g : {&job.download_group, &job.exit_group}) {
    for (const auto& n : g->nodes) {
      for (const auto& name : n.outputs) {
        if (holding(name, {n.node}).empty()) continue;
        out[out.contains(name) ? n.node + ":" + name : name] = value_of(n.node, name);
      }
    }
  }
  // --fetch looks at every node of the job once (a node usually appears in several groups).
  moka::TaskGroupDef everything{.name = job.name, .nodes = {}};
  for (const moka::TaskGroupDef* g : {&job.init_group, &job.epoch_group, &job.download_group, &job.exit_group}) {
    for (const auto& n : g->nodes) {
      auto it = std::find_if(everything.nodes.begin(), everything.nodes.end(),
                             [&](const moka::NodePlanDef& e) { return e.node == n.node; });
      if (it == everything.nodes.end()) {
        moka::NodePlanDef entry;
        entry.node = n.node;
        it = everything.nodes.insert(everything.nodes.end(), std::move(entry));
      }
      it->outputs.insert(it->outputs.end(), n.outputs.begin(), n.outputs.end());
    }
  }
  for (const auto& name : fetch) {
    const std::string node = fetch_node(everything, name, [&](const auto& of) { return holding(name, of); });
    if (holding(name, {node}).empty())
      throw moka::NotFound(fmt::format("--fetch: blob \"{}\" does not exist on node \"{}\"", name, node));
    out[name] = value_of(node, name);
  }
  say(fmt::format("finished after epoch {}", result.last_epoch));
  moka_cli::result_line(out.dump());
  return 0;
}

// "1 stop condition", "2 stop conditions".
std::string count_of(std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

// The summary `moka check` prints for a valid job: its groups that have nodes, its distinct nodes,
// stop conditions and checkpointed nodes.
std::string job_summary(const moka::JobDef& job) {
  std::size_t groups = 0;
  std::vector<std::string> nodes;
  for (const moka::TaskGroupDef* g : {&job.init_group, &job.epoch_group, &job.download_group, &job.exit_group}) {
    if (!g->nodes.empty()) ++groups;
    for (const auto& n : g->nodes)
      if (std::find(nodes.begin(), nodes.end(), n.node) == nodes.end()) nodes.push_back(n.node);
  }
  return fmt::format("job, {} with nodes, {}, {}, {} checkpointed", count_of(groups, "group"),
                     count_of(nodes.size(), "node"), count_of(job.stop_conditions.size(), "stop condition"),
                     count_of(job.checkpoint_nodes().size(), "node"));
}

int cmd_check(const std::string& path) {
  const moka::DocumentDef doc = moka::load_document_file(path);
  if (const auto* plan = std::get_if<moka::PlanDef>(&doc)) {
    moka::check_plan(*plan);
    std::cout << fmt::format("{}: ok ({} nets, {} top-level steps)\n", path, plan->network.size(),
                             plan->execution_step.size());
  } else if (const auto* group = std::get_if<moka::TaskGroupDef>(&doc)) {
    moka::check_task_group(*group);
    std::cout << fmt::format("{}: ok (task group, {} nodes)\n", path, group->nodes.size());
  } else {
    const auto& job = std::get<moka::JobDef>(doc);
    moka::check_job(job);
    std::cout << fmt::format("{}: ok ({})\n", path, job_summary(job));
  }
  return 0;
}

int cmd_ops(const std::string& type) {
  moka::register_all_operators();  // Save, Load, If, While, ... live above the operators layer
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
  app.footer(fmt::format(
      "Usage of the subcommands (moka SUBCOMMAND --help describes each):\n"
      "  moka run PLAN.json [--fetch NAME,...] [--exception-timeout SECONDS] [--shared-workspace]\n"
      "           [--fibers | --threads] [--trace FILE [--trace-level steps|nets|ops]]\n"
      "  moka check FILE.json            (a plan, a TaskGroup or a job)\n"
      "  moka ops [TYPE]\n"
      "  moka job run JOB.json (--checkpoint-dir DIR | --no-checkpoints)\n"
      "               [--db-type minidb|leveldb|lmdb] [--resume latest|N] [--start-over] [--accept-changed-job]\n"
      "               [--keep-last N [--keep-every K]] [--background-save] [--tolerate-save-failures]\n"
      "               [--fetch NAME,...] [--exception-timeout SECONDS] [--fibers | --threads]\n"
      "               [--trace FILE [--trace-level steps|nets|ops]] [--quiet | --log-level LEVEL] [--no-progress]\n"
      "  moka plan show FILE.json [--no-operators]\n"
      "  moka plan dot FILE.json [--svg OUT.svg]\n"
      "  moka checkpoint ls DIR [--keep-last N [--keep-every K]] [--no-verify] [--json]\n"
      "  moka checkpoint inspect DIR [--epoch N] [--node NAME] [--json]\n"
      "  moka checkpoint verify DIR\n"
      "  moka checkpoint blob DIR NAME [--epoch N] [--node NAME]\n"
      "  moka --help | moka SUBCOMMAND --help | moka --version\n"
      "Plan, TaskGroup and job files are read up to {} MiB.\n"
      "Exit codes: 0 success, 1 failure while running, 2 invalid input (bad JSON, plan or flags), "
      "130 interrupted. Errors are one line on stderr. See docs/cli.md.",
      moka::kMaxDefinitionFileBytes >> 20));

  auto* run = app.add_subcommand("run",
                                 "Run a plan (JSON, see docs/plan-format.md) in a fresh workspace and print "
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
  bool fibers = false;
  bool threads = false;
  CLI::Option* run_fibers =
      run->add_flag("--fibers", fibers,
                    "Run concurrent substeps as fibers taking turns on one thread where every operator allows it "
                    "(default: so where this process can use only one CPU, else each on a worker thread; "
                    "docs/sessions.md)");
  run->add_flag("--threads", threads, "Run concurrent substeps each on a worker thread, even on one CPU")
      ->excludes(run_fibers);
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

  TraceArgs trace_args;
  const auto add_trace_options = [&trace_args](CLI::App* cmd) {
    cmd->add_option("--trace", trace_args.path,
                    "Write a timeline of the run (Chrome trace JSON, opens in Perfetto) to FILE; default $MOKA_TRACE");
    cmd->add_option("--trace-level", trace_args.level,
                    "What the trace records: steps (default), nets, ops; default $MOKA_TRACE_LEVEL")
        ->check(CLI::IsMember({"off", "steps", "nets", "ops"}));
  };
  add_trace_options(run);

  auto* job = app.add_subcommand("job", "Jobs: epochs with checkpoints (see docs/jobs.md)");
  job->require_subcommand(1);
  auto* job_run = job->add_subcommand(
      "run",
      "Run a job (JSON, see docs/job-format.md), checkpointing every epoch; print one line per epoch "
      "and the job's outputs as one JSON object");
  JobRunArgs job_args;
  job_run->add_option("job", job_args.path, "Job JSON file")->required();
  // An empty value (an unset shell variable) must not pass for no option: an empty --checkpoint-dir
  // would run the job without checkpoints, an empty --resume from scratch over the committed epochs.
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "TEXT");
  CLI::Option* checkpoint_dir =
      job_run->add_option("--checkpoint-dir", job_args.checkpoint_dir, "Directory of checkpoints and manifests")
          ->check(non_empty);
  CLI::Option* no_checkpoints = job_run->add_flag(
      "--no-checkpoints", job_args.no_checkpoints,
      "Run without checkpoints (instead of --checkpoint-dir; what a job across several MPI ranks needs for now)");
  job_run
      ->add_option("--db-type", job_args.db_type,
                   "Checkpoint DB backend: minidb, leveldb or lmdb (default: the resumed checkpoint's own, "
                   "recorded in its manifest; minidb from scratch). A resume with another one is refused")
      ->check(CLI::IsMember({"minidb", "leveldb", "lmdb"}, CLI::ignore_case));
  job_run->add_flag("--start-over", job_args.start_over,
                    "Delete the committed checkpoints of the directory and run from scratch (without it, a run from "
                    "scratch over committed checkpoints, or a --resume latest that finds none that verifies, is "
                    "refused)");
  job_run->add_flag("--accept-changed-job", job_args.accept_changed_job,
                    "Resume even though the checkpoint was written by a job with another definition");
  job_run
      ->add_option("--resume", job_args.resume,
                   "\"latest\": the newest committed epoch that verifies (from scratch when there is none); "
                   "N: exactly epoch N")
      ->check(non_empty);
  CLI::Option* keep_last =
      job_run->add_option("--keep-last", job_args.keep_last, "Keep only the newest N committed checkpoints (0: all)")
          ->check(non_negative_integer());
  // Alone it would keep everything (it only adds epochs to what --keep-last keeps): refused.
  job_run->add_option("--keep-every", job_args.keep_every, "With --keep-last, also keep every epoch divisible by K")
      ->check(non_negative_integer())
      ->needs(keep_last);
  job_run->add_flag("--background-save", job_args.background_save,
                    "Snapshot blobs at the epoch boundary and write them while the next epoch runs");
  job_run->add_flag("--tolerate-save-failures", job_args.tolerate_save_failures,
                    "Log a failed checkpoint save and go on (Caffe2's behaviour) instead of failing the job");
  job_run->add_option("--fetch", job_args.fetch, "More blob names to print at the end, comma-separated");
  job_run
      ->add_option("--exception-timeout", job_args.exception_timeout_s,
                   "Seconds to wait for concurrent workers to stop after an error (default 60)")
      ->check(seconds);
  for (const char* flag : {"--checkpoint-dir", "--db-type", "--start-over", "--accept-changed-job", "--resume",
                           "--keep-last", "--keep-every", "--background-save", "--tolerate-save-failures"})
    no_checkpoints->excludes(job_run->get_option(flag));
  CLI::Option* job_fibers =
      job_run->add_flag("--fibers", job_args.fibers,
                        "Run each node's tasks as fibers taking turns on one thread where every operator allows it "
                        "(default: so where this process can use only one CPU, else each on a worker thread; "
                        "docs/sessions.md)");
  job_run->add_flag("--quiet", job_args.quiet, "Print only the result (the JSON of outputs) and errors");
  job_run->add_option("--log-level", job_args.log_level, "What to print: error, warn, info (default: epochs), debug")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  job_run->add_flag(
      "--no-progress", [&job_args](int64_t) { job_args.progress = false; },
      "No live status line on a terminal (one line per epoch only)");
  job_run->add_flag("--threads", job_args.threads, "Run each node's tasks on worker threads, even on one CPU")
      ->excludes(job_fibers);
  add_trace_options(job_run);
  job_run->footer(
      "Output: one line per epoch (epoch, seconds, checkpoint size and seconds), then \"finished after epoch N\" "
      "and one JSON object with the outputs of download_group and exit_group and the --fetch blobs.\n"
      "Exit codes: 0 success, 1 failure while running, 2 invalid input (bad job, flags, or a checkpoint "
      "that does not verify), 130 interrupted (SIGINT/SIGTERM; the epoch in flight is not checkpointed).");

  auto* check = app.add_subcommand(
      "check", "Validate a plan, a TaskGroup or a job without running it (exit 0 if valid, 2 if not)");
  std::string check_path;
  check
      ->add_option("file", check_path,
                   "Plan, TaskGroup or job JSON file (docs/plan-format.md, docs/job-format.md); told apart by "
                   "their fields")
      ->required();
  check->footer(
      "Output: one line on stdout, \"FILE: ok (8 nets, 3 top-level steps)\", \"FILE: ok (task group, 2 nodes)\" "
      "or \"FILE: ok (job, ...)\". A job's node plans, stop conditions and nodes_to_checkpoint are checked.\n"
      "Exit codes: 0 valid, 2 invalid (one line on stderr naming the problem).");

  auto* ops = app.add_subcommand("ops", "List every registered operator with its schema");
  std::string op_type;
  ops->add_option("type", op_type, "Show only this operator type");

  moka_cli::CheckpointCommands checkpoint;
  moka_cli::add_checkpoint_commands(app, checkpoint, non_negative_integer());
  moka_cli::PlanCommands plan;
  moka_cli::add_plan_commands(app, plan);

  // CLI11 reports an unknown first word as "A subcommand is required"; name it instead.
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && first != "run" && first != "check" && first != "ops" && first != "job" &&
      first != "checkpoint" && first != "plan") {
    std::cerr << "moka: unknown subcommand \"" << one_line(argv[1])
              << "\" (expected run, check, ops, job, plan or checkpoint; see moka --help)\n";
    return 2;
  }

  if (first == "job" && argc > 2 && argv[2][0] != '-' && std::string_view(argv[2]) != "run") {
    std::cerr << "moka: unknown job subcommand \"" << one_line(argv[2]) << "\" (expected run; see moka job --help)\n";
    return 2;
  }

  if (first == "plan" && argc > 2 && argv[2][0] != '-' && std::string_view(argv[2]) != "show" &&
      std::string_view(argv[2]) != "dot") {
    std::cerr << "moka: unknown plan subcommand \"" << one_line(argv[2])
              << "\" (expected show or dot; see moka plan --help)\n";
    return 2;
  }
  if (first == "checkpoint" && argc > 2 && argv[2][0] != '-') {
    const std::string_view sub = argv[2];
    if (sub != "ls" && sub != "inspect" && sub != "verify" && sub != "blob") {
      std::cerr << "moka: unknown checkpoint subcommand \"" << one_line(argv[2])
                << "\" (expected ls, inspect, verify or blob; see moka checkpoint --help)\n";
      return 2;
    }
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

  g_quiet_rank = launcher_rank() != 0;
  moka_cli::set_quiet_rank(g_quiet_rank);
  if (*job_run) {
    moka_cli::LogLevel level = moka_cli::LogLevel::info;
    if (!job_args.log_level.empty()) moka_cli::parse_log_level(job_args.log_level, level);
    if (job_args.quiet) level = moka_cli::LogLevel::error;
    moka_cli::set_log_level(level);
  }
  if (*job_run && !*checkpoint_dir && !*no_checkpoints) {
    if (!g_quiet_rank)
      std::cerr << "moka: --checkpoint-dir is required (or --no-checkpoints to run without) (see moka --help)\n";
    return 2;
  }
  try {
    // Written when the command returns, or while an error unwinds to the handlers below.
    moka::trace_environment_handled();  // MOKA_TRACE is read here, to name one file per rank
    std::optional<moka::ScopedTrace> trace;
    if (*run || *job_run) {
      moka::TraceOptions options = trace_options(trace_args, moka::launched_by_mpi());
      if (options.level != moka::TraceLevel::off) {
        moka::trace_set_thread_name("main");
        trace.emplace(std::move(options));
      }
    }
    if (*run || *job_run) {
      const int code =
          *run ? cmd_run(run_path, fetch, exception_timeout, shared_workspace, concurrency_of(fibers, threads))
               : cmd_job_run(job_args);
      if (trace) (void)trace->finish();  // a trace that cannot be written fails the command
      return code;
    }
    if (*check) return cmd_check(check_path);
    if (*ops) return cmd_ops(op_type);
    if (*checkpoint.group) return moka_cli::run_checkpoint_command(checkpoint);
    if (*plan.group) return moka_cli::run_plan_command(plan);
  } catch (const moka::InvalidInput& e) {
    if (!g_quiet_rank) std::cerr << "moka: invalid input: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    if (!g_quiet_rank) std::cerr << "moka: error: " << one_line(e.what()) << "\n";
    if (moka::launched_by_mpi()) moka::finalize_mpi();  // every rank has the same error and gets here
    return exit_now(1);
  } catch (...) {
    std::cerr << "moka: error: unknown exception\n";
    return exit_now(1);
  }
  return 0;
}
