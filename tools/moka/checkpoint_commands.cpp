// `moka checkpoint ls|inspect|verify|blob` (tools/moka/checkpoint_commands.h): text for a person, --json for a
// program; exit 0, or 2 when what is checked is bad or the input names something that is not there.
#include "checkpoint_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

#include "blob_json.h"
#include "moka/core/error.h"
#include "moka/core/workspace.h"
#include "moka/job/checkpoint_inspect.h"
#include "moka/job/checkpoint_manifest.h"
#include "moka/storage/save_load.h"

namespace moka_cli {

namespace {

std::string human_bytes(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (uint64_t{1} << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  if (b < (uint64_t{1} << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1 << 30));
}

std::string human_age(double s) {
  if (s < 120) return fmt::format("{:.0f} s ago", s);
  if (s < 7200) return fmt::format("{:.0f} min ago", s / 60);
  if (s < 172800) return fmt::format("{:.0f} h ago", s / 3600);
  return fmt::format("{:.0f} days ago", s / 86400);
}

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

int cmd_ls(const CheckpointCommands& c) {
  const auto epochs =
      moka::list_checkpoint_dir(c.dir, {.keep_last = c.keep_last, .keep_every = c.keep_every}, !c.no_verify);
  const bool retention = c.keep_last > 0;
  if (c.json) {
    Json out = Json::array();
    for (const auto& e : epochs) {
      Json j{{"epoch", e.epoch},     {"committed", e.committed}, {"status", e.status},
             {"usable", e.usable()}, {"db_type", e.db_type},     {"stop", e.stop},
             {"nodes", e.nodes},     {"bytes", e.bytes},         {"age_s", e.age_s}};
      if (retention && e.committed) j["kept"] = e.kept;
      out.push_back(std::move(j));
    }
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (epochs.empty()) {
    std::cout << c.dir << ": no checkpoints\n";
    return 0;
  }
  for (const auto& e : epochs) {
    std::string line =
        fmt::format("epoch {:<5} {:<13} {:>10}  {:<12}  {} node{} ({})", e.epoch,
                    e.committed ? "committed" : "not committed", human_bytes(e.bytes), human_age(e.age_s),
                    e.nodes.size(), e.nodes.size() == 1 ? "" : "s", fmt::join(e.nodes, ", "));
    if (e.committed) line += fmt::format("  {}{}", e.db_type, e.stop ? ", stop" : "");
    if (retention && e.committed) line += e.kept ? "  kept" : "  retention deletes it";
    line += e.status == "ok" ? (c.no_verify ? "  (not verified)" : "  verifies") : "  " + e.status;
    std::cout << line << "\n";
  }
  return 0;
}

// The manifest files to look at: all, or --node's (InvalidInput naming the nodes there are).
std::vector<moka::CheckpointFile> files_of(const moka::CheckpointManifest& m, const std::string& node) {
  if (node.empty()) return m.files;
  for (const auto& f : m.files)
    if (f.node == node) return {f};
  std::vector<std::string> nodes;
  for (const auto& f : m.files) nodes.push_back(f.node);
  throw moka::InvalidInput(
      fmt::format("checkpoint epoch {} has no node \"{}\" (it has {})", m.epoch, node, fmt::join(nodes, ", ")));
}

int cmd_inspect(const CheckpointCommands& c) {
  const moka::CheckpointManifest m = moka::read_checkpoint_manifest(c.dir, c.epoch);
  int code = 0;
  std::string text;  // printed once every DB was read: an error leaves stdout empty
  Json out{{"epoch", m.epoch}, {"db_type", m.db_type}, {"stop", m.stop}, {"nodes", Json::array()}};
  if (!c.json) text += fmt::format("epoch {} ({}{})\n", m.epoch, m.db_type, m.stop ? ", stop" : "");
  for (const auto& f : files_of(m, c.node)) {
    const std::string path = moka::checkpoint_db_path(c.dir, f);
    const auto blobs = moka::inspect_checkpoint_db(m.db_type, path);
    Json node{{"node", f.node}, {"db", f.db}, {"blobs", Json::array()}};
    if (!c.json) text += fmt::format("node {}: {} ({} blobs)\n", f.node, f.db, blobs.size());
    for (const auto& b : blobs) {
      if (!b.problem.empty()) code = 2;
      Json j{{"name", b.name}, {"type", b.type}};
      if (b.type == "tensor") j.update(Json{{"dtype", b.dtype}, {"shape", b.shape}});
      j.update(Json{{"records", b.records}, {"bytes", b.bytes}, {"xxh3", hex(b.xxh3)}});
      if (!b.problem.empty()) j["problem"] = b.problem;
      if (!c.json) {
        const std::string what = !b.problem.empty()   ? "BAD: " + b.problem
                                 : b.type == "tensor" ? fmt::format("{} [{}]", b.dtype, fmt::join(b.shape, ", "))
                                                      : b.type;
        text += fmt::format("  {}  {}  {} record{}  {}  xxh3 {}\n", b.name, what, b.records, b.records == 1 ? "" : "s",
                            human_bytes(b.bytes), hex(b.xxh3));
      }
      node["blobs"].push_back(std::move(j));
    }
    out["nodes"].push_back(std::move(node));
  }
  std::cout << (c.json ? out.dump() + "\n" : text);
  return code;
}

int cmd_verify(const CheckpointCommands& c) {
  const auto problems = moka::verify_checkpoint_dir(c.dir);
  const auto epochs = moka::committed_epochs(c.dir);
  if (problems.empty()) {
    std::cout << fmt::format("{}: ok ({} committed epoch{}, every file and record verifies)\n", c.dir, epochs.size(),
                             epochs.size() == 1 ? "" : "s");
    return 0;
  }
  for (const auto& p : problems) {
    std::cout << fmt::format("epoch {}: {}{}: {}\n", p.epoch, p.file,
                             p.record.empty() ? "" : fmt::format(" blob \"{}\"", p.record), p.message);
  }
  std::cout << fmt::format("{}: {} problem{} in {} committed epoch{}\n", c.dir, problems.size(),
                           problems.size() == 1 ? "" : "s", epochs.size(), epochs.size() == 1 ? "" : "s");
  return 2;
}

int cmd_blob(const CheckpointCommands& c) {
  const moka::CheckpointManifest m = moka::read_checkpoint_manifest(c.dir, c.epoch);
  std::vector<std::string> found;
  std::unique_ptr<moka::Workspace> first;  // where the blob was found first
  for (const auto& f : files_of(m, c.node)) {
    auto ws = std::make_unique<moka::Workspace>();
    moka::LoadSpec spec;
    spec.blob_names = {c.blob_name};
    spec.dbs = {moka::checkpoint_db_path(c.dir, f)};
    spec.db_type = m.db_type;
    spec.absolute_path = true;
    spec.allow_incomplete = true;  // a node without the blob is not an error
    moka::load_blobs(*ws, spec);
    const moka::Blob* b = ws->get_blob(c.blob_name);
    if (b == nullptr || !b->is_initialized()) continue;
    found.push_back(f.node);
    if (!first) first = std::move(ws);
  }
  if (found.empty())
    throw moka::InvalidInput(fmt::format("checkpoint epoch {} has no blob \"{}\"{}", m.epoch, c.blob_name,
                                         c.node.empty() ? "" : fmt::format(" in node \"{}\"", c.node)));
  if (found.size() > 1)
    throw moka::InvalidInput(fmt::format("blob \"{}\" is in several nodes of epoch {} ({}): choose one with --node",
                                         c.blob_name, m.epoch, fmt::join(found, ", ")));
  Json out = Json::object();
  out[c.blob_name] = blob_json(first->blob(c.blob_name));
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

void add_checkpoint_commands(CLI::App& app, CheckpointCommands& c, const CLI::Validator& count) {
  c.group = app.add_subcommand(
      "checkpoint", "Look inside a checkpoint directory without changing it (see docs/checkpoint-format.md)");
  c.group->require_subcommand(1);
  c.ls = c.group->add_subcommand(
      "ls", "List the epochs of a checkpoint directory: committed or not and why, size, age, what retention keeps");
  c.inspect = c.group->add_subcommand(
      "inspect", "List the blobs of one committed epoch (default: the newest): dtype, shape, bytes, checksum");
  c.verify = c.group->add_subcommand(
      "verify", "Check every committed epoch: manifests, files against their digests, every record's checksums");
  c.blob = c.group->add_subcommand("blob", "Print one blob of a committed epoch as JSON (as moka run --fetch does)");
  for (CLI::App* sub : {c.ls, c.inspect, c.verify, c.blob})
    sub->add_option("dir", c.dir, "Checkpoint directory")->required();
  c.blob->add_option("name", c.blob_name, "Blob name")->required();
  for (CLI::App* sub : {c.inspect, c.blob}) {
    sub->add_option("--epoch", c.epoch, "Committed epoch (default: the newest)")->check(count);
    sub->add_option("--node", c.node, "Only this node's DB");
  }
  for (CLI::App* sub : {c.ls, c.inspect}) sub->add_flag("--json", c.json, "Print one JSON document instead of text");
  CLI::Option* keep_last = c.ls->add_option("--keep-last", c.keep_last,
                                            "Show what retention with --keep-last N (and --keep-every K) would keep")
                               ->check(count);
  c.ls->add_option("--keep-every", c.keep_every, "With --keep-last, also keep every epoch divisible by K")
      ->check(count)
      ->needs(keep_last);
  c.ls->add_flag("--no-verify", c.no_verify, "Do not read the node DBs back (faster; status from manifests only)");
  c.ls->footer("Exit codes: 0 listed (whatever the epochs' state), 2 the directory is missing or not one.");
  c.inspect->footer("Exit codes: 0, 2 a blob's records do not decode (named) or the epoch or node is not there.");
  c.verify->footer(
      "Output: one line per problem (epoch, file, blob, why), or one ok line.\n"
      "Exit codes: 0 everything verifies, 2 a problem (every bad file and record named).");
  c.blob->footer(
      "Output: {\"NAME\": {\"dtype\": ..., \"shape\": [...], \"data\": [...]}} or {\"NAME\": {\"type\": T}}.\n"
      "Exit codes: 0, 2 no such epoch, node or blob (or the blob is in several nodes: use --node).");
}

int run_checkpoint_command(const CheckpointCommands& c) {
  try {
    if (*c.ls) return cmd_ls(c);
    if (*c.inspect) return cmd_inspect(c);
    if (*c.verify) return cmd_verify(c);
    if (*c.blob) return cmd_blob(c);
  } catch (const moka::NotFound& e) {
    throw moka::InvalidInput(e.what());  // a directory, epoch or blob the command line names is not there: exit 2
  }
  return -1;
}

}  // namespace moka_cli
