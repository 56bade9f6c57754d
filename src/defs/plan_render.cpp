// plan_outline and plan_dot: definitions drawn as text and as Graphviz DOT (moka/defs/plan_render.h).
#include "moka/defs/plan_render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <vector>

namespace moka {

namespace {

// A name as a JSON-style quoted string: what the outline shows (control characters escaped).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The settings of a step that change how it runs, as "num_iter 10, concurrent, ...".
std::string step_settings(const ExecutionStepDef& s) {
  std::vector<std::string> parts;
  if (s.num_iter) parts.push_back(fmt::format("num_iter {}", *s.num_iter));
  if (s.should_stop_blob) parts.push_back("should_stop_blob " + quoted(*s.should_stop_blob));
  if (s.only_once.value_or(false)) parts.push_back("only_once");
  if (s.concurrent_substeps.value_or(false)) parts.push_back("concurrent substeps");
  if (s.num_concurrent_instances && *s.num_concurrent_instances > 1)
    parts.push_back(fmt::format("{} concurrent instances", *s.num_concurrent_instances));
  if (s.create_workspace.value_or(false)) parts.push_back("own workspace");
  if (s.report_net)
    parts.push_back(fmt::format("report_net {} every {} s", quoted(*s.report_net), s.report_interval.value_or(0)));
  if (s.run_every_ms) parts.push_back(fmt::format("every {} ms", *s.run_every_ms));
  return parts.empty() ? std::string() : " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
}

std::string blob_list(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back(quoted(n));
  return fmt::format("{}", fmt::join(q, ", "));
}

class Outline {
 public:
  explicit Outline(bool operators) : operators_(operators) {}
  void line(int depth, const std::string& text) {
    out_ += std::string(static_cast<std::size_t>(depth) * 2, ' ') + text + "\n";
  }

  void plan(const PlanDef& p, int depth) {
    line(depth, fmt::format("plan {}: {} net{}, {} top-level step{}", quoted(p.name), p.network.size(),
                            p.network.size() == 1 ? "" : "s", p.execution_step.size(),
                            p.execution_step.size() == 1 ? "" : "s"));
    std::map<std::string, const NetDef*> nets;
    for (const NetDef& n : p.network) nets.emplace(n.name, &n);
    for (const ExecutionStepDef& s : p.execution_step) step(s, nets, depth + 1);
  }
  void group(const TaskGroupDef& g, int depth, const std::string& label) {
    line(depth, fmt::format("{} {}: {} node{}", label, quoted(g.name), g.nodes.size(), g.nodes.size() == 1 ? "" : "s"));
    for (const NodePlanDef& n : g.nodes) {
      line(depth + 1, fmt::format("node {}{}", quoted(n.node),
                                  n.outputs.empty() ? "" : " (outputs " + blob_list(n.outputs) + ")"));
      plan(n.plan, depth + 2);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  void step(const ExecutionStepDef& s, const std::map<std::string, const NetDef*>& nets, int depth) {
    line(depth, fmt::format("step {}{}", quoted(s.name), step_settings(s)));
    for (const std::string& name : s.network) {
      const auto it = nets.find(name);
      if (it == nets.end()) {
        line(depth + 1, fmt::format("net {} (not in the plan)", quoted(name)));
        continue;
      }
      const NetDef& n = *it->second;
      line(depth + 1, fmt::format("net {}: {} operator{}", quoted(n.name), n.op.size(), n.op.size() == 1 ? "" : "s"));
      if (!operators_) continue;
      for (std::size_t i = 0; i < n.op.size(); ++i) {
        const OperatorDef& op = n.op[i];
        line(depth + 2, fmt::format("#{} {}({}) -> ({})", i, op.type, blob_list(op.input), blob_list(op.output)));
      }
    }
    for (const ExecutionStepDef& sub : s.substep) step(sub, nets, depth + 1);
  }

  bool operators_;
  std::string out_;
};

// DOT: every graph node gets an id of its own ("n0", "n1", ...); labels are quoted DOT strings.
class Dot {
 public:
  std::string label(const std::string& text) const {
    std::string out = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  }
  void line(const std::string& text) { out_ += "  " + text + "\n"; }

  void plan(const PlanDef& p) {
    std::map<std::string, const NetDef*> nets;
    for (const NetDef& n : p.network) nets.emplace(n.name, &n);
    const std::string root = id();
    line(fmt::format("{} [shape=folder, label={}];", root, label("plan " + p.name)));
    for (std::size_t i = 0; i < p.execution_step.size(); ++i) {
      const std::string child = step(p.execution_step[i], nets);
      line(fmt::format("{} -> {} [label=\"{}\"];", root, child, i + 1));
    }
  }
  void group(const TaskGroupDef& g, const std::string& title) {
    line(fmt::format("subgraph cluster_{} {{", clusters_++));
    line(fmt::format("label={};", label(title + " " + g.name)));
    for (const NodePlanDef& n : g.nodes) {
      line(fmt::format("subgraph cluster_{} {{", clusters_++));
      line(fmt::format("label={};", label("node " + n.node)));
      plan(n.plan);
      line("}");
    }
    line("}");
  }
  std::string take(const std::string& name) {
    return fmt::format("digraph {} {{\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n{}}}\n", label(name), out_);
  }

 private:
  std::string id() { return fmt::format("n{}", ids_++); }
  std::string step(const ExecutionStepDef& s, const std::map<std::string, const NetDef*>& nets) {
    const std::string me = id();
    const bool concurrent =
        s.concurrent_substeps.value_or(false) || (s.num_concurrent_instances && *s.num_concurrent_instances > 1);
    line(fmt::format("{} [shape=box{}, label={}];", me, concurrent ? ", peripheries=2" : "",
                     label("step " + s.name + step_settings(s))));
    std::size_t order = 0;
    for (const std::string& name : s.network) {
      const std::string net = id();
      const auto it = nets.find(name);
      const std::string what =
          it == nets.end() ? "(not in the plan)" : fmt::format("{} operators", it->second->op.size());
      line(fmt::format("{} [shape=ellipse, label={}];", net, label("net " + name + "\n" + what)));
      line(fmt::format("{} -> {} [label=\"{}\"];", me, net, ++order));
    }
    for (const ExecutionStepDef& sub : s.substep) {
      const std::string child = step(sub, nets);
      line(fmt::format("{} -> {} [label=\"{}\"{}];", me, child, ++order, concurrent ? ", style=dashed" : ""));
    }
    return me;
  }

  std::string out_;
  int ids_ = 0;
  int clusters_ = 0;
};

template <class F>
void each_group(const JobDef& job, F&& f) {
  f(job.init_group, "init_group");
  f(job.epoch_group, "epoch_group");
  f(job.download_group, "download_group");
  f(job.exit_group, "exit_group");
}

}  // namespace

std::string plan_outline(const PlanDef& plan, bool operators) {
  Outline o(operators);
  o.plan(plan, 0);
  return o.take();
}

std::string plan_outline(const TaskGroupDef& group, bool operators) {
  Outline o(operators);
  o.group(group, 0, "task group");
  return o.take();
}

std::string plan_outline(const JobDef& job, bool operators) {
  Outline o(operators);
  o.line(0, fmt::format("job {}", quoted(job.name)));
  each_group(job, [&](const TaskGroupDef& g, const char* title) { o.group(g, 1, title); });
  for (const StopConditionDef& s : job.stop_conditions)
    o.line(1, fmt::format("stop condition: blob {} of node {}", quoted(s.blob), quoted(s.node)));
  o.line(1, "nodes to checkpoint: " +
                (job.checkpoint_nodes().empty() ? std::string("none") : blob_list(job.checkpoint_nodes())));
  return o.take();
}

std::string plan_dot(const PlanDef& plan) {
  Dot d;
  d.plan(plan);
  return d.take(plan.name);
}

std::string plan_dot(const TaskGroupDef& group) {
  Dot d;
  d.group(group, "task group");
  return d.take(group.name);
}

std::string plan_dot(const JobDef& job) {
  Dot d;
  each_group(job, [&](const TaskGroupDef& g, const char* title) { d.group(g, title); });
  return d.take(job.name);
}

}  // namespace moka
