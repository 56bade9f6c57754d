// Cluster, Node, WorkspaceType and TaskOutput: registration, reprs (ports of task_test.py), set/fetch rules.
#include <gtest/gtest.h>

#include <thread>

#include "moka/builder/cluster.h"
#include "moka/builder/task_output.h"
#include "moka/core/error.h"

namespace moka {
namespace {

// Ports the Cluster/Node/TaskOutput rows of caffe2/python/task_test.py TestTask.testRepr. Run on a
// fresh thread so no context of another test is active.
TEST(TaskRepr, ClusterNodeTaskOutput) {
  std::thread([] {
    EXPECT_EQ(Cluster().repr(), "Cluster(nodes=[], node_kwargs={})");
    EXPECT_EQ(Node().repr(), "Node(name=local, kwargs={})");
    EXPECT_EQ(TaskOutput(std::vector<BlobRef>{}).repr(), "TaskOutput(names=[], values=None)");
  }).join();
}

TEST(Cluster, NodesRegisterWithTheActiveClusterAndEarlierKwargsWin) {
  std::thread([] {  // a fresh thread: no default Node exists yet
    Cluster c;
    with_context(c, [] {
      Node a("a", {{"gpus", "1"}});
      Node b("b");
      Node a2("a", {{"gpus", "2"}, {"host", "h"}});
      // Constructing a Node does not activate it; asking for the current one creates the default
      // "local" node, which registers with the active cluster (as in Caffe2).
      EXPECT_EQ(Node::current_name(), "local");
      Node("n2", [] { EXPECT_EQ(Node::current_name(), "n2"); });
    });
    EXPECT_EQ(c.nodes(), (std::vector<std::string>{"a", "b", "local", "n2"}));
    EXPECT_EQ(c.node_kwargs().at("a").at("gpus"), "1");
    EXPECT_EQ(c.node_kwargs().at("a").at("host"), "h");
    EXPECT_EQ(c.repr(),
              "Cluster(nodes=['a', 'b', 'local', 'n2'], node_kwargs={'a': {'gpus': '1', 'host': 'h'}, 'b': {}, "
              "'local': {}, 'n2': {}})");
  })
      .join();
}

TEST(Cluster, DefaultNodeIsLocalPerThread) {
  std::thread([] {
    EXPECT_EQ(Node::current_name(), "local");
    Node("x", [] { EXPECT_EQ(Node::current_name(), "x"); });
    EXPECT_EQ(Node::current_name(), "local");
  }).join();
  EXPECT_STREQ(workspace_type_name(WorkspaceType::Private), "private");
  EXPECT_STREQ(workspace_type_name(WorkspaceType::Global), "global");
}

TEST(TaskOutput, SetFetchAndErrors) {
  TaskOutput scalar(BlobRef("total"));
  TaskOutput copy = scalar;  // a handle: sees what the session sets later
  EXPECT_TRUE(scalar.is_scalar());
  EXPECT_THROW((void)scalar.get(), InvalidInput);
  try {
    (void)scalar.fetch();
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_STREQ(e.what(), "Cannot fetch value for this output.");
  }
  TaskOutput list(std::vector<BlobRef>{"a", "b"});
  TaskOutputList outputs({scalar, list});
  EXPECT_EQ(outputs.names(), (std::vector<std::string>{"total", "a", "b"}));
  EXPECT_THROW(outputs.set_values({"x"}, {}), InvalidInput);
  outputs.set_values({"total", "a", "b"}, [](const std::string& blob) {
    return Tensor::scalar<int64_t>(static_cast<int64_t>(blob.size()));
  });
  EXPECT_EQ(copy.fetch<int64_t>(), 5);
  EXPECT_EQ(copy.repr(), "TaskOutput(names=['total'], values=['total'])");
  ASSERT_EQ(list.fetch_all().size(), 2u);
  EXPECT_THROW((void)list.fetch(), InvalidInput);
  EXPECT_THROW((void)copy.fetch<double>(), TypeError);
}

}  // namespace
}  // namespace moka
