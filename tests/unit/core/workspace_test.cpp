// Unit tests for moka::Workspace: blob creation and lookup through parents and forwarded names,
// remove/rename rules and messages, the net registry and the live-workspace list.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/net_base.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "unit/core/core_test_util.h"

namespace moka {
namespace {

using test::message_of;
using Names = std::vector<std::string>;

// A minimal NetBase: counts runs and instances, and (optionally) reads a blob when destroyed so
// destroying nets after their blobs shows up under AddressSanitizer.
class TestNet : public NetBase {
 public:
  static inline int live = 0;
  explicit TestNet(std::string name, Blob* watched = nullptr) : name_(std::move(name)), watched_(watched) { ++live; }
  ~TestNet() override {
    --live;
    if (watched_) last_seen_initialized = watched_->is_initialized();
  }
  const std::string& name() const override { return name_; }
  void run() override { ++runs; }
  void cancel() override { cancelled = true; }
  int runs = 0;
  bool cancelled = false;
  static inline bool last_seen_initialized = false;

 private:
  std::string name_;
  Blob* watched_;
};

TEST(Workspace, CreateGetHas) {
  Workspace ws;
  EXPECT_FALSE(ws.has_blob("a"));
  EXPECT_EQ(ws.get_blob("a"), nullptr);
  Blob* a = ws.create_blob("a");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->is_initialized());
  EXPECT_TRUE(ws.has_blob("a"));
  EXPECT_EQ(ws.get_blob("a"), a);
  EXPECT_EQ(&ws.blob("a"), a);
  EXPECT_EQ(ws.create_blob("a"), a);
  EXPECT_EQ(ws.create_local_blob("a"), a);
  EXPECT_EQ(ws.local_blobs(), Names{"a"});
  EXPECT_EQ(ws.parent(), nullptr);
  EXPECT_EQ(ws.root_folder(), ".");
  ws.set_root_folder("/tmp/x");
  EXPECT_EQ(ws.root_folder(), "/tmp/x");
}

TEST(Workspace, MissingBlobIsNotFoundNamingIt) {
  Workspace ws;
  EXPECT_EQ(message_of<NotFound>([&] { ws.blob("nope"); }), "blob \"nope\" does not exist in the workspace");
}

TEST(Workspace, BlobPointersAreStable) {
  Workspace ws;
  Blob* first = ws.create_blob("first");
  first->emplace<Tensor>(Tensor::scalar<int64_t>(1));
  for (int i = 0; i < 5000; ++i) ws.create_blob(fmt::format("b{}", i));
  EXPECT_EQ(ws.get_blob("first"), first);
  EXPECT_EQ(first->get<Tensor>().item<int64_t>(), 1);
}

TEST(Workspace, EmptyAndOddNamesAreOrdinary) {
  Workspace ws;
  Blob* e = ws.create_blob("");
  EXPECT_EQ(ws.get_blob(""), e);
  Blob* odd = ws.create_blob("a/b:c d");
  EXPECT_EQ(ws.get_blob("a/b:c d"), odd);
  EXPECT_NE(e, odd);
}

TEST(Workspace, ParentChainLookup) {
  Workspace root;
  Workspace mid(&root);
  Workspace leaf(&mid);
  EXPECT_EQ(leaf.parent(), &mid);
  EXPECT_EQ(mid.parent(), &root);
  Blob* r = root.create_blob("r");
  Blob* m = mid.create_blob("m");
  EXPECT_EQ(leaf.get_blob("r"), r);
  EXPECT_EQ(leaf.get_blob("m"), m);
  EXPECT_EQ(leaf.create_blob("r"), r);  // existing blob up the chain, not a new local one
  EXPECT_TRUE(leaf.local_blobs().empty());
  Blob* l = leaf.create_blob("l");
  EXPECT_FALSE(root.has_blob("l"));
  EXPECT_FALSE(mid.has_blob("l"));
  EXPECT_EQ(leaf.local_blobs(), Names{"l"});
  EXPECT_EQ(leaf.blobs(), (Names{"l", "m", "r"}));
  EXPECT_EQ(leaf.get_blob("l"), l);
}

TEST(Workspace, LocalBlobHidesParentUntilRemoved) {
  Workspace root;
  Workspace child(&root);
  Blob* parent_a = root.create_blob("a");
  Blob* local_a = child.create_local_blob("a");
  EXPECT_NE(local_a, parent_a);
  EXPECT_EQ(child.get_blob("a"), local_a);
  EXPECT_EQ(child.create_blob("a"), local_a);
  EXPECT_EQ(child.blobs(), Names{"a"});  // no duplicates
  EXPECT_TRUE(child.remove_blob("a"));
  EXPECT_EQ(child.get_blob("a"), parent_a);
}

TEST(Workspace, RemoveIsLocalOnly) {
  Workspace root;
  Workspace child(&root);
  root.create_blob("a");
  EXPECT_FALSE(child.remove_blob("a"));
  EXPECT_TRUE(root.has_blob("a"));
  EXPECT_TRUE(child.has_blob("a"));
  EXPECT_FALSE(root.remove_blob("never"));
  EXPECT_TRUE(root.remove_blob("a"));
  EXPECT_FALSE(root.remove_blob("a"));
  EXPECT_FALSE(child.has_blob("a"));
}

TEST(Workspace, RenameMovesTheSameBlob) {
  Workspace ws;
  Blob* a = ws.create_blob("a");
  a->emplace<Tensor>(Tensor::scalar<int32_t>(3));
  ws.rename_blob("a", "b");
  EXPECT_FALSE(ws.has_blob("a"));
  EXPECT_EQ(ws.get_blob("b"), a);
  EXPECT_EQ(a->get<Tensor>().item<int32_t>(), 3);
  ws.rename_blob("b", "b");  // same name: nothing to do
  EXPECT_EQ(ws.get_blob("b"), a);
}

TEST(Workspace, RenameRules) {
  Workspace root;
  Workspace child(&root);
  root.create_blob("p");
  child.create_blob("x");
  child.create_blob("y");
  // `from` must be local (Caffe2: "Blob old is not in the local blob list").
  EXPECT_EQ(message_of<NotFound>([&] { child.rename_blob("missing", "z"); }),
            "Blob missing is not in the local blob list");
  EXPECT_EQ(message_of<NotFound>([&] { child.rename_blob("p", "z"); }), "Blob p is not in the local blob list");
  // `to` must not be visible anywhere (local or up the chain).
  EXPECT_EQ(message_of<InvalidInput>([&] { child.rename_blob("x", "y"); }),
            "cannot rename blob \"x\" to \"y\": \"y\" already exists");
  EXPECT_THROW(child.rename_blob("x", "p"), InvalidInput);
  EXPECT_TRUE(child.has_blob("x"));
  EXPECT_TRUE(child.has_blob("y"));
}

TEST(Workspace, ForwardedBlobsOnly) {
  Workspace parent;
  Blob* a = parent.create_blob("a");
  parent.create_blob("other");
  Workspace child(&parent, {{"inner_a", "a"}});
  EXPECT_EQ(child.parent(), nullptr);
  EXPECT_FALSE(child.has_blob("a"));
  EXPECT_FALSE(child.has_blob("other"));
  EXPECT_EQ(child.get_blob("inner_a"), a);
  EXPECT_EQ(child.create_blob("inner_a"), a);
  EXPECT_EQ(child.blobs(), Names{"inner_a"});
  EXPECT_TRUE(child.local_blobs().empty());
  // A forwarded name is not local: it cannot be removed or renamed from the child.
  EXPECT_FALSE(child.remove_blob("inner_a"));
  EXPECT_THROW(child.rename_blob("inner_a", "z"), NotFound);
  // create_blob of an unforwarded parent name makes a local blob.
  Blob* local = child.create_blob("a");
  EXPECT_NE(local, a);
}

TEST(Workspace, ForwardedBlobFollowsParentRemoval) {
  Workspace parent;
  parent.create_blob("a");
  Workspace child(&parent, {{"x", "a"}});
  EXPECT_TRUE(parent.remove_blob("a"));
  EXPECT_FALSE(child.has_blob("x"));
  EXPECT_TRUE(child.blobs().empty());
  Blob* again = parent.create_blob("a");
  EXPECT_EQ(child.get_blob("x"), again);
}

TEST(Workspace, ForwardingChecks) {
  Workspace parent;
  parent.create_blob("a");
  EXPECT_EQ(message_of<NotFound>([&] {
              Workspace w(&parent, {{"x", "missing"}});
            }),
            "Invalid parent workspace blob: missing");
  Workspace child;
  EXPECT_THROW(child.add_blob_mapping(nullptr, {{"x", "a"}}), InvalidInput);
  child.create_blob("taken");
  EXPECT_THROW(child.add_blob_mapping(&parent, {{"taken", "a"}}), InvalidInput);
  EXPECT_NE(child.get_blob("taken"), parent.get_blob("a"));
  child.add_blob_mapping(&parent, {{"x", "a"}});
  EXPECT_EQ(child.get_blob("x"), parent.get_blob("a"));
}

TEST(Workspace, ForwardingThroughAChildOfAParent) {
  Workspace root;
  Blob* deep = root.create_blob("deep");
  Workspace mid(&root);
  Workspace leaf(&mid, {{"d", "deep"}});  // mid sees root's blob, so it can be forwarded
  EXPECT_EQ(leaf.get_blob("d"), deep);
}

TEST(Workspace, NetRegistry) {
  TestNet::live = 0;
  {
    Workspace ws;
    EXPECT_EQ(ws.get_net("n"), nullptr);
    auto* n = static_cast<TestNet*>(ws.add_net(std::make_unique<TestNet>("n")));
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(ws.get_net("n"), n);
    ws.get_net("n")->run();
    EXPECT_EQ(n->runs, 1);
    ws.add_net(std::make_unique<TestNet>("b"));
    ws.add_net(std::make_unique<TestNet>("a"));
    EXPECT_EQ(ws.nets(), (Names{"a", "b", "n"}));
    EXPECT_TRUE(ws.remove_net("b"));
    EXPECT_FALSE(ws.remove_net("b"));
    EXPECT_EQ(ws.nets(), (Names{"a", "n"}));
    EXPECT_EQ(TestNet::live, 2);
  }
  EXPECT_EQ(TestNet::live, 0);
}

TEST(Workspace, NetOverwriteRefusedUnlessAsked) {
  TestNet::live = 0;
  Workspace ws;
  NetBase* first = ws.add_net(std::make_unique<TestNet>("train"));
  std::string msg = message_of<InvalidInput>([&] { ws.add_net(std::make_unique<TestNet>("train")); });
  EXPECT_EQ(msg,
            "I respectfully refuse to overwrite an existing net of the same name \"train\", unless you "
            "explicitly specify overwrite=true.");
  EXPECT_EQ(ws.get_net("train"), first);
  EXPECT_EQ(TestNet::live, 1);  // the refused net was destroyed, the registered one kept
  NetBase* second = ws.add_net(std::make_unique<TestNet>("train"), /*overwrite=*/true);
  EXPECT_EQ(ws.get_net("train"), second);
  EXPECT_EQ(TestNet::live, 1);
  EXPECT_EQ(ws.nets(), Names{"train"});
  EXPECT_THROW(ws.add_net(nullptr), InvalidInput);
}

TEST(Workspace, NetsAreNotInherited) {
  Workspace root;
  root.add_net(std::make_unique<TestNet>("n"));
  Workspace child(&root);
  EXPECT_EQ(child.get_net("n"), nullptr);
  EXPECT_TRUE(child.nets().empty());
  EXPECT_FALSE(child.remove_net("n"));
  child.add_net(std::make_unique<TestNet>("n"));  // no clash with the parent's
  EXPECT_NE(child.get_net("n"), root.get_net("n"));
}

TEST(Workspace, NetsDieBeforeTheirBlobs) {
  TestNet::last_seen_initialized = false;
  {
    Workspace ws;
    Blob* b = ws.create_blob("x");
    b->emplace<int>(1);
    ws.add_net(std::make_unique<TestNet>("n", b));
  }
  EXPECT_TRUE(TestNet::last_seen_initialized);
}

TEST(Workspace, ForEachVisitsLiveWorkspaces) {
  auto visited = [] {
    std::vector<Workspace*> v;
    Workspace::for_each([&](Workspace* ws) { v.push_back(ws); });
    return v;
  };
  auto contains = [](const std::vector<Workspace*>& v, Workspace* ws) {
    return std::find(v.begin(), v.end(), ws) != v.end();
  };
  const std::size_t before = visited().size();
  auto a = std::make_unique<Workspace>();
  {
    Workspace b(a.get());
    auto v = visited();
    EXPECT_EQ(v.size(), before + 2);
    EXPECT_TRUE(contains(v, a.get()));
    EXPECT_TRUE(contains(v, &b));
  }
  auto v = visited();
  EXPECT_EQ(v.size(), before + 1);
  EXPECT_TRUE(contains(v, a.get()));
  Workspace* gone = a.get();
  a.reset();
  v = visited();
  EXPECT_EQ(v.size(), before);
  EXPECT_FALSE(contains(v, gone));
}

}  // namespace
}  // namespace moka
