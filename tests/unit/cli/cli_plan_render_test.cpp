// `moka plan show` and `moka plan dot` on the example plan, TaskGroup and job and on names that need escaping: the
// outline's structure, a DOT graph whose every edge joins declared nodes (and that Graphviz's dot accepts, where it
// is installed), --svg, and bad input with exit 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "unit/cli/cli_fixture.h"

namespace {

using namespace moka_cli_test;

bool have_dot() { return std::system("command -v dot > /dev/null 2>&1") == 0; }

// The DOT text's shape: one digraph, balanced braces, every edge between nodes declared before it.
void expect_well_formed_dot(const std::string& dot) {
  ASSERT_TRUE(dot.starts_with("digraph ")) << dot;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < dot.size(); ++i) {
    const char c = dot[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      ASSERT_GT(depth, 0) << dot;
      --depth;
    }
  }
  EXPECT_EQ(depth, 0) << dot;
  EXPECT_FALSE(in_string) << dot;
  std::set<std::string> declared;
  const std::regex node(R"(^\s*(n\d+) \[)"), edge(R"(^\s*(n\d+) -> (n\d+) )");
  std::size_t edges = 0;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, edge)) {
      ++edges;
      EXPECT_TRUE(declared.count(m[1]) && declared.count(m[2])) << line;
    } else if (std::regex_search(line, m, node)) {
      EXPECT_TRUE(declared.insert(m[1]).second) << "declared twice: " << line;
    }
  }
  EXPECT_GT(edges, 0u) << dot;
}

class CliPlan : public CliJob {};

TEST_F(CliPlan, ShowOutlinesAJobGroupByGroupWithOperators) {
  const CliResult r = run({"plan", "show", source_path("examples/jobs/counting.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"job \"counting\"\n", "\n  init_group \"\": 2 nodes\n", "\n    node \"trainer\"\n",
                           "\n        step \"train\" (num_iter 40)\n", "\n          net \"train_step\": 3 operators\n",
                           "\n            #1 Add(\"total\", \"step\") -> (\"total\")\n", "\n  stop condition: blob"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " not in:\n" << r.out;
  const CliResult counts = run({"plan", "show", source_path("examples/jobs/counting.json"), "--no-operators"});
  ASSERT_EQ(counts.code, 0) << counts.err;
  EXPECT_EQ(counts.out.find("#0 "), std::string::npos) << counts.out;
  EXPECT_NE(counts.out.find("net \"train_step\": 3 operators"), std::string::npos) << counts.out;
}

TEST_F(CliPlan, DotDrawsEveryExampleAsAWellFormedGraph) {
  for (const char* file : {"examples/plans/demo.json", "examples/jobs/counting.json"}) {
    const CliResult r = run({"plan", "dot", source_path(file)});
    ASSERT_EQ(r.code, 0) << file << ": " << r.err;
    expect_well_formed_dot(r.out);
  }
  const CliResult demo = run({"plan", "dot", source_path("examples/plans/demo.json")});
  EXPECT_NE(demo.out.find("peripheries=2, label=\"step parallel (concurrent substeps)\""), std::string::npos)
      << demo.out;
}

TEST_F(CliPlan, NamesThatNeedEscapingStayInsideTheirQuotes) {
  const std::string plan = plan_file(
      R"({"name": "p\"{x}", "network": [{"name": "n \"q\"\n{", "op": []}],
          "execution_step": [{"name": "s\\}", "network": ["n \"q\"\n{"], "should_stop_blob": "b\"",
                              "substep": []}]})");
  const CliResult dot = run({"plan", "dot", plan});
  ASSERT_EQ(dot.code, 0) << dot.err;
  expect_well_formed_dot(dot.out);
  const CliResult show = run({"plan", "show", plan});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find(R"(net "n \"q\"\u000a{": 0 operators)"), std::string::npos) << show.out;
  if (have_dot()) {
    const std::string svg = (dir_ / "p.svg").string();
    const CliResult r = run({"plan", "dot", plan, "--svg", svg});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(read_file(svg).starts_with("<?xml")) << read_file(svg).substr(0, 200);
  }
}

TEST_F(CliPlan, SvgWithoutGraphvizNamesThePackage) {
  if (have_dot()) GTEST_SKIP() << "Graphviz's dot is installed";
  expect_error(run({"plan", "dot", source_path("examples/plans/demo.json"), "--svg", (dir_ / "x.svg").string()}), 1,
               {"graphviz"});
}

TEST_F(CliPlan, BadInputIsNamedWithExit2) {
  expect_error(run({"plan", "show", (dir_ / "missing.json").string()}), 2, {"missing.json"});
  expect_error(run({"plan", "dot", plan_file("{\"network\": [")}), 2, {"invalid JSON"});
  expect_error(run({"plan", "draw", "x.json"}), 2, {"unknown plan subcommand \"draw\""});
  expect_error(run({"plan", "show"}), 2, {"file"});
}

}  // namespace
