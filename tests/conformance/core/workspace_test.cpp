// Conformance ports of caffe2/core/workspace_test.cc (docs/testing.md §1). RunEmptyPlan needs the
// plan executor and lives with the exec conformance tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "moka/core/workspace.h"

namespace moka {
namespace {

struct WorkspaceTestFoo {};

// Ports caffe2/core/workspace_test.cc: TEST(WorkspaceTest, BlobAccess)
TEST(WorkspaceConformance, BlobAccess) {
  Workspace ws;
  EXPECT_FALSE(ws.has_blob("nonexisting"));
  EXPECT_EQ(ws.get_blob("nonexisting"), nullptr);

  EXPECT_EQ(ws.get_blob("newblob"), nullptr);
  EXPECT_NE(ws.create_blob("newblob"), nullptr);
  EXPECT_NE(ws.get_blob("newblob"), nullptr);
  EXPECT_TRUE(ws.has_blob("newblob"));

  // Different names should still be not created.
  EXPECT_FALSE(ws.has_blob("nonexisting"));
  EXPECT_EQ(ws.get_blob("nonexisting"), nullptr);

  // Check if the returned Blob is OK for all operations.
  Blob* blob = ws.get_blob("newblob");
  int* int_unused = &blob->get_mutable<int>();
  (void)int_unused;
  EXPECT_TRUE(blob->is_type<int>());
  EXPECT_FALSE(blob->is_type<WorkspaceTestFoo>());
  EXPECT_NE(&blob->get<int>(), nullptr);

  // Re-creating the blob does not change the content as long as it already exists.
  EXPECT_NE(ws.create_blob("newblob"), nullptr);
  EXPECT_TRUE(blob->is_type<int>());
  // When not re-creating, we should have the same content.
  EXPECT_NE(ws.create_local_blob("newblob"), nullptr);
  EXPECT_TRUE(blob->is_type<int>());

  // Remove blob.
  EXPECT_FALSE(ws.remove_blob("nonexisting"));
  EXPECT_TRUE(ws.remove_blob("newblob"));
  EXPECT_FALSE(ws.has_blob("newblob"));
}

// Ports caffe2/core/workspace_test.cc: TEST(WorkspaceTest, Sharing)
TEST(WorkspaceConformance, Sharing) {
  Workspace parent;
  EXPECT_FALSE(parent.has_blob("a"));
  EXPECT_NE(parent.create_blob("a"), nullptr);
  EXPECT_NE(parent.get_blob("a"), nullptr);
  {
    Workspace child(&parent);
    // Child can access parent blobs.
    EXPECT_TRUE(child.has_blob("a"));
    EXPECT_NE(child.get_blob("a"), nullptr);
    // Child can create local blobs.
    EXPECT_FALSE(child.has_blob("b"));
    EXPECT_NE(child.create_blob("b"), nullptr);
    EXPECT_NE(child.get_blob("b"), nullptr);
    // Parent cannot access child blobs.
    EXPECT_FALSE(parent.has_blob("b"));
    EXPECT_EQ(parent.get_blob("b"), nullptr);
    // Parent can create duplicate names.
    EXPECT_NE(parent.create_blob("b"), nullptr);
    // But child has local overrides.
    EXPECT_NE(child.get_blob("b"), parent.get_blob("b"));
    // Child can create a blob that already exists in the parent.
    EXPECT_NE(child.create_blob("a"), nullptr);
    EXPECT_EQ(child.get_blob("a"), parent.get_blob("a"));
    // Child can create a local blob for the blob already exists in the parent.
    EXPECT_NE(child.create_local_blob("a"), nullptr);
    // But the local blob will be different from the one in parent workspace.
    EXPECT_NE(child.get_blob("a"), parent.get_blob("a"));
  }
}

// Ports caffe2/core/workspace_test.cc: TEST(WorkspaceTest, BlobMapping)
TEST(WorkspaceConformance, BlobMapping) {
  Workspace parent;
  EXPECT_FALSE(parent.has_blob("a"));
  EXPECT_NE(parent.create_blob("a"), nullptr);
  EXPECT_NE(parent.get_blob("a"), nullptr);
  {
    Workspace::ForwardMap forwarded_blobs{{"inner_a", "a"}};
    Workspace child(&parent, forwarded_blobs);
    EXPECT_FALSE(child.has_blob("a"));
    EXPECT_TRUE(child.has_blob("inner_a"));
    EXPECT_NE(child.get_blob("inner_a"), nullptr);
    Workspace ws;
    EXPECT_NE(ws.create_blob("b"), nullptr);
    forwarded_blobs = {{"inner_b", "b"}};
    child.add_blob_mapping(&ws, forwarded_blobs);
    EXPECT_FALSE(child.has_blob("b"));
    EXPECT_TRUE(child.has_blob("inner_b"));
  }
}

// Ports caffe2/core/workspace_test.cc: TEST(WorkspaceTest, ForEach)
TEST(WorkspaceConformance, ForEach) {
  auto all = [] {
    std::vector<Workspace*> v;
    Workspace::for_each([&](Workspace* ws) { v.push_back(ws); });
    std::sort(v.begin(), v.end());
    return v;
  };
  auto sorted = [](std::vector<Workspace*> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(all(), std::vector<Workspace*>{});
  auto ws1 = std::make_unique<Workspace>();
  EXPECT_EQ(all(), sorted({ws1.get()}));
  {
    Workspace ws2;
    EXPECT_EQ(all(), sorted({ws1.get(), &ws2}));
  }
  EXPECT_EQ(all(), sorted({ws1.get()}));
  ws1.reset();
  EXPECT_EQ(all(), std::vector<Workspace*>{});
}

}  // namespace
}  // namespace moka
