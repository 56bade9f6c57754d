// TaskGroup reference page (task.py): five steps on three nodes. s1, s2 go to the default
// node "local", s3 and s5 to "n2", s4 to "n1"; all start together and the group finishes with
// the last one. Every node has its own workspace, so a step's blobs appear only on its node.
#include <iostream>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace {

// A net that records that it ran: writes the int64 `value` to blob "<name>_ran".
moka::Net make_step(const std::string& name, int value) {
  moka::Net net(name);
  net.Const(value, {.blob_out = name + "_ran"});
  return net;
}

const char* bool_str(bool b) { return b ? "true" : "false"; }

}  // namespace

int main() {
  moka::Net s1 = make_step("s1", 1), s2 = make_step("s2", 2), s3 = make_step("s3", 3), s4 = make_step("s4", 4),
            s5 = make_step("s5", 5);

  // GLOBAL: tasks write into their node's workspace itself (the default, PRIVATE, would give
  // each task a child workspace that is dropped after the run).
  moka::TaskGroup tg(moka::WorkspaceType::Global, [&] {
    // these tasks go to default node 'local'
    moka::Task({}, s1);
    moka::Task({}, s2);
    moka::Node("n2", [&] { moka::Task({}, s3); });
    moka::Node("n1", [&] { moka::Task({}, s4); });
    moka::Node("n2", [&] { moka::Task({}, s5); });
  });

  // this will run all steps in parallel.
  moka::LocalSession session;
  session.run(tg);

  std::string nodes;
  for (const auto& n : tg.used_nodes()) nodes += (nodes.empty() ? "" : ",") + n;
  std::cout << "used_nodes=" << nodes << "\n";

  // Which node ran each step: the node(s) whose workspace holds the step's blob.
  const std::vector<std::string> all_nodes = {"local", "n1", "n2"};
  for (const char* step : {"s1", "s2", "s3", "s4", "s5"}) {
    std::string ran_on;
    for (const auto& node : all_nodes) {
      if (session.workspace(node).has_blob(std::string(step) + "_ran")) ran_on += (ran_on.empty() ? "" : ",") + node;
    }
    std::cout << step << ".ran_on=" << (ran_on.empty() ? "none" : ran_on) << "\n";
  }

  // s3's blob lives on n2 only; n2 holds both of its steps' blobs.
  for (const auto& node : all_nodes) {
    std::cout << node << ".has_s3_ran=" << bool_str(session.workspace(node).has_blob("s3_ran")) << "\n";
  }
  std::cout << "n2.s3_ran=" << session.fetch("n2", "s3_ran").item<int64_t>() << "\n"
            << "n2.s5_ran=" << session.fetch("n2", "s5_ran").item<int64_t>() << "\n";
}
