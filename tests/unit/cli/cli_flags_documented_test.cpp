// CLI tests: every flag of every subcommand (as its --help lists it) appears in the top-level help's
// usage lines and in docs/cli.md, so a new flag cannot go undocumented.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "support/paths.h"
#include "support/temp_dir.h"
#include "unit/cli/cli_process.h"

namespace {

using moka::testing::run_moka;

// The long flags ("--fetch") a subcommand's help text names in its option list (from "Options:" to
// the blank line after it; the footer below may name other subcommands' flags).
std::set<std::string> flags_in(const std::string& text) {
  std::set<std::string> flags;
  const std::size_t from = text.find("\nOptions:\n");
  if (from == std::string::npos) return flags;
  const std::string help = text.substr(from, text.find("\n\n", from + 1) - from);
  const std::regex flag(R"((^|[\s,])(--[a-z][a-z-]*))");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator(); ++it)
    flags.insert((*it)[2].str());
  flags.erase("--help");
  return flags;
}

TEST(CliFlagsDocumented, EverySubcommandFlagIsInTheTopLevelHelpAndTheDocs) {
  moka::testing::TempDir dir("moka-cli-flags");
  const auto top = run_moka({"--help"}, dir.fs_path());
  ASSERT_EQ(top.code, 0) << top.err;
  const std::string docs = moka::testing::slurp(std::string(moka::testing::source_dir()) + "/docs/cli.md");
  ASSERT_FALSE(docs.empty());
  std::size_t seen = 0;
  for (const std::vector<std::string>& sub : {std::vector<std::string>{"run"},
                                              {"check"},
                                              {"ops"},
                                              {"job", "run"},
                                              {"checkpoint", "ls"},
                                              {"checkpoint", "inspect"},
                                              {"checkpoint", "verify"},
                                              {"checkpoint", "blob"}}) {
    std::vector<std::string> args = sub;
    args.push_back("--help");
    const auto r = run_moka(args, dir.fs_path());
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string name = sub.size() == 1 ? sub[0] : sub[0] + " " + sub[1];
    for (const std::string& f : flags_in(r.out)) {
      ++seen;
      // The usage line of this subcommand in the top-level footer holds it (the footer's lines after
      // "moka <name> " up to the next "  moka ").
      const std::size_t at = top.out.find("  moka " + name + " ");
      ASSERT_NE(at, std::string::npos) << "no usage line for moka " << name << " in:\n" << top.out;
      const std::size_t end = top.out.find("\n  moka ", at + 1);
      EXPECT_NE(top.out.substr(at, end - at).find(f), std::string::npos)
          << "moka --help: moka " << name << " lacks " << f;
      EXPECT_NE(docs.find("`" + f), std::string::npos) << "docs/cli.md does not describe " << f << " of moka " << name;
    }
  }
  EXPECT_GE(seen, 15u) << "the help texts list fewer flags than moka has";
}

}  // namespace
