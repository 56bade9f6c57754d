// Thread-safety test for moka::Workspace: many children of one parent create and look up blobs
// concurrently while other threads read and write the parent. Meant to run clean under TSan.
// (Names are built with fmt::format: GCC 12 -O2 reports a false -Wrestrict on "lit" + std::string.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "moka/core/tensor.h"
#include "moka/core/workspace.h"

namespace moka {
namespace {

TEST(Workspace, ConcurrentChildrenAndParentLookups) {
  constexpr int kThreads = 8;
  constexpr int kBlobs = 1000;
  constexpr int kShared = 16;

  Workspace parent;
  std::vector<Blob*> shared(kShared);
  for (int i = 0; i < kShared; ++i) {
    shared[i] = parent.create_blob(fmt::format("shared_{}", i));
    shared[i]->emplace<Tensor>(Tensor::scalar<int64_t>(i));
  }

  std::atomic<bool> go{false};
  std::atomic<int> children_done{0};
  std::atomic<int> failures{0};
  auto fail = [&] { failures.fetch_add(1, std::memory_order_relaxed); };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      Workspace child(&parent);
      std::vector<Blob*> mine(kBlobs);
      for (int i = 0; i < kBlobs; ++i) {
        const std::string name = fmt::format("t{}_b{}", t, i);
        Blob* b = child.create_blob(name);
        if (!b) {
          fail();
          continue;
        }
        b->emplace<Tensor>(Tensor::scalar<int64_t>(t * kBlobs + i));  // this thread owns b's content
        mine[i] = b;
        if (child.get_blob(name) != b) fail();
        if (parent.has_blob(name)) fail();  // local to the child
        // Shared blobs resolve to the parent's, both by lookup and by create_blob.
        const int s = i % kShared;
        const std::string sname = fmt::format("shared_{}", s);
        if (child.get_blob(sname) != shared[s]) fail();
        if (child.create_blob(sname) != shared[s]) fail();
        // Blobs the parent threads add may or may not be visible yet, but never wrong.
        if (Blob* p = child.get_blob(fmt::format("p_{}", i)); p && p != parent.get_blob(fmt::format("p_{}", i))) fail();
      }
      for (int i = 0; i < kBlobs; ++i) {
        const std::string name = fmt::format("t{}_b{}", t, i);
        if (child.get_blob(name) != mine[i]) fail();
        if (mine[i]->get<Tensor>().item<int64_t>() != t * kBlobs + i) fail();
      }
      if (child.local_blobs().size() != static_cast<std::size_t>(kBlobs)) fail();
      children_done.fetch_add(1);
    });
  }
  // Readers of the parent.
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      while (children_done.load() < kThreads) {
        for (int s = 0; s < kShared; ++s)
          if (parent.get_blob(fmt::format("shared_{}", s)) != shared[s]) fail();
        if (parent.has_blob("t0_b0")) fail();
        if (parent.blobs().size() < static_cast<std::size_t>(kShared)) fail();
      }
    });
  }
  // A writer of the parent: new blobs and a net registry churn while children look names up.
  threads.emplace_back([&] {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < kBlobs; ++i) {
      Blob* b = parent.create_blob(fmt::format("p_{}", i));
      if (parent.get_blob(fmt::format("p_{}", i)) != b) fail();
      if (i % 100 == 0) {
        Workspace::for_each([](Workspace*) {});
        (void)parent.nets();
      }
    }
  });

  go.store(true);
  for (auto& th : threads) th.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(parent.local_blobs().size(), static_cast<std::size_t>(kShared + kBlobs));
}

}  // namespace
}  // namespace moka
