// Runnables run again: the same Task in fresh sessions and in groups, setup and report blocks every time, outputs of the latest run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;

// Sets blob "seed" of node "local" in session to v (a GLOBAL task reads it).
void seed(LocalSession& session, int64_t v) {
  session.workspace().create_blob("seed")->get_mutable<Tensor>() = Tensor::scalar<int64_t>(v);
}

TEST(Rerun, TaskOutputsFollowTheLatestRun) {
  TaskOutput doubled;
  TaskGroup group(WorkspaceType::Global, [&] {
    Task([&] { doubled = final_output(ops::Mul({BlobRef("seed"), ops::Const(2)})); });
  });
  LocalSession s1, s2;
  seed(s1, 10);
  seed(s2, 20);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 20);
  s2.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 40);
  s1.run(group);
  EXPECT_EQ(doubled.fetch<int64_t>(), 20) << "the output still read the other session's workspace";
}

}  // namespace
}  // namespace moka
