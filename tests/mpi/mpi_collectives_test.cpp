// Collective operators under MpiSession (part of moka_mpi_tests, run on every rank under mpirun with 1 to 4
// ranks): the same TaskGroups as under LocalSession give the same outputs on every rank; mismatched inputs
// across ranks and an error on one rank while the others wait in Allreduce end the run everywhere.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "moka/moka.h"
#include "moka/mpi/mpi_session.h"
#include "support/collective_groups.h"

namespace moka {
namespace {

namespace ops = moka::ops;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string what_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return {};
}

// Small tensors travel with the agreement of a call; a hundred tiles (300 values: 300 bytes of int8 and
// more) take the MPI collectives.
TEST(MpiCollectives, GiveLocalSessionsAnswersOnEveryRank) {
  for (const auto& [nodes, tiles] :
       std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {3, 1}, {5, 1}, {3, 100}, {5, 100}}) {
    SCOPED_TRACE(fmt::format("{} nodes, {} tiles", nodes, tiles));
    LocalSession local;
    const testing::CollectiveOutputs want = testing::run_every_collective(local, nodes, tiles);
    MpiSession mpi;
    const testing::CollectiveOutputs got = testing::run_every_collective(mpi, nodes, tiles);
    testing::expect_same_tensors(got, want, fmt::format(" on rank {}", mpi.rank()));
    // And a second run of a new group in the same session.
    EXPECT_EQ(testing::run_every_collective(mpi, nodes, tiles).size(), want.size());
  }
}

TEST(MpiCollectives, MismatchedShapesAcrossRanksAreOneErrorEverywhere) {
  MpiSession session;
  TaskGroup tg([&] {
    for (int i = 0; i < 4; ++i)
      Node(testing::collective_node(i), [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          ops::op("Allreduce", {cw, ops::Const(std::vector<double>(static_cast<std::size_t>(i < 3 ? 2 : 3), 1.0))},
                  {BlobRef("y")});
        });
      });
  });
  const std::string what = what_of([&] { session.run(tg); });
  EXPECT_TRUE(contains(what, "every node must give the same dtype and shape")) << what;
  EXPECT_TRUE(contains(what, "float64[3]")) << what;
  // The world is usable on: a matching Allreduce in the next run.
  TaskOutput out;
  TaskGroup ok([&] {
    for (int i = 0; i < 4; ++i)
      Node(testing::collective_node(i), [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          const BlobRef y = ops::op("Allreduce", {cw, ops::Const(int64_t{i})}, {BlobRef("y")})[0];
          if (i == 3) out = final_output(y);
        });
      });
  });
  session.run(ok);
  EXPECT_EQ(out.fetch<int64_t>(), 6);
}

// n0 fails at run time (after making the world) while every other node waits for it in Allreduce: the
// run ends on every rank with n0's error, in well under the test's timeout.
void fail_one_rank_while_the_others_wait(MpiSession& session) {
  TaskGroup tg([&] {
    for (int i = 0; i < 4; ++i)
      Node(testing::collective_node(i), [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          if (i == 0)
            ops::op("CreateCommonWorld", {}, {BlobRef("bad")},
                    {{"nodes", std::vector<std::string>{"n1", "n2"}}, {"name", std::string("bad")}});
          ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
        });
      });
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string what = what_of([&] { session.run(tg); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "rank " << session.rank();
  EXPECT_TRUE(contains(what, "rank 0 > node \"n0\"")) << what;
  EXPECT_TRUE(contains(what, "is not one of its nodes [n1, n2]")) << what;
}

// Three times over: the waits the failures abandon stay posted, and the MPI calls after them must not
// write into freed memory (ASan catches that here).
TEST(MpiCollectives, AnErrorOnOneRankWakesTheRanksWaitingInAllreduce) {
  MpiSession session;
  for (int attempt = 0; attempt < 3; ++attempt) {
    SCOPED_TRACE(attempt);
    fail_one_rank_while_the_others_wait(session);
  }
  // After the failed runs the worlds are made anew and work.
  TaskOutput out;
  TaskGroup ok([&] {
    for (int i = 0; i < 4; ++i)
      Node(testing::collective_node(i), [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          const BlobRef y = ops::op("Allreduce", {cw, ops::Const(2.0)}, {BlobRef("y")})[0];
          if (i == 1) out = final_output(y);
        });
      });
  });
  session.run(ok);
  EXPECT_EQ(out.fetch<double>(), 8.0);
}

// A node that finishes its share without a collective that the other nodes of its world make: the
// waiting ranks get its rank's end of share instead of an account (at one rank, the world hears of the
// node's end), and every rank throws the same error.
TEST(MpiCollectives, ANodeThatSkipsACollectiveIsOneErrorEverywhereNotAHang) {
  MpiSession probe;  // at one rank every node is local, and the world learns it from the node's end
  MpiSessionOptions options;
  options.node_ranks["skips"] = probe.size() - 1;
  const int others = std::max(1, probe.size() - 1);
  for (int r = 0; r < others; ++r) options.node_ranks[testing::collective_node(r)] = r % probe.size();
  MpiSession session(options);
  std::vector<std::string> nodes;
  for (int r = 0; r < others; ++r) nodes.push_back(testing::collective_node(r));
  nodes.push_back("skips");
  TaskGroup tg([&] {
    for (const std::string& node : nodes)
      Node(node, [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          if (node != "skips") ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")});
        });
      });
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string what = what_of([&] { session.run(tg); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(contains(what, "share of the run without making")) << what;
  // The next run's worlds work.
  TaskOutput out;
  TaskGroup ok([&] {
    for (const std::string& node : nodes)
      Node(node, [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          const BlobRef y = ops::op("Allreduce", {cw, ops::Const(1.0)}, {BlobRef("y")})[0];
          if (node == "skips") out = final_output(y);
        });
      });
  });
  session.run(ok);
  EXPECT_EQ(out.fetch<double>(), static_cast<double>(nodes.size()));
}

// A node outside the world fails while the world's nodes run Allreduces too large to travel with the
// agreement: wherever each rank is (waiting for the others' accounts, or moving data), every rank ends
// with that error, never stuck in a data movement that a rank which stopped will not make. Five runs,
// each stopping at another moment.
TEST(MpiCollectives, AFailureDuringLargeAllreducesNeverLeavesARankInTheDataMovement) {
  MpiSession probe;
  MpiSessionOptions options;
  options.node_ranks["fails"] = 0;
  for (int r = 0; r < probe.size(); ++r) options.node_ranks[testing::collective_node(r)] = r;
  MpiSession session(options);
  for (int attempt = 0; attempt < 5; ++attempt) {
    SCOPED_TRACE(attempt);
    TaskGroup tg([&] {
      Node("fails", [&] {
        Task([&] {
          BlobRef total = ops::Const(int64_t{0}, {.blob_out = "total"});
          ops::loop(5000 * (attempt + 1), [&] { ops::Add({total, ops::Const(int64_t{1})}, {total}); });
          ops::Add({BlobRef("missing"), BlobRef("missing")}, {"y"});
        });
      });
      for (int r = 0; r < probe.size(); ++r)
        Node(testing::collective_node(r), [&] {
          Task([&] {
            const BlobRef cw =
                ops::op("CreateCommonWorld", {}, {BlobRef("cw")}, {{"nodes", [&] {
                                                                      std::vector<std::string> v;
                                                                      for (int k = 0; k < probe.size(); ++k)
                                                                        v.push_back(testing::collective_node(k));
                                                                      return v;
                                                                    }()}})[0];
            const BlobRef x =
                ops::op("ConstantFill", {}, {BlobRef("x")}, {{"shape", std::vector<int64_t>{4096}}, {"value", 1.0}})[0];
            ops::loop(1000000, [&] { ops::op("Allreduce", {cw, x}, {x}, {{"reduction", std::string("max")}}); });
          });
        });
    });
    const auto start = std::chrono::steady_clock::now();
    const std::string what = what_of([&] { session.run(tg); });
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "rank " << session.rank();
    EXPECT_TRUE(contains(what, "rank 0 > node \"fails\"")) << what;
    EXPECT_TRUE(contains(what, "missing")) << what;
  }
}

}  // namespace
}  // namespace moka
