// Conformance: net_builder_test.py test_if_net and test_while_net (docs/testing.md §1) written with
// the DSL exactly as the Python tests are, run through Plan + to_execution_step(nb) + run_plan.
#include <gtest/gtest.h>

#include <algorithm>

#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"
#include "moka/builder/plan.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"

namespace moka {
namespace {

using ops::Const;

int64_t fetch(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<int64_t>(); }

// Ports TestNetBuilder.test_if_net.
TEST(Caffe2NetBuilder, test_if_net) {
  BlobRef first_res, second_res, y0, y1, y2, local_blob;
  NetBuilder nb([&] {
    BlobRef x0 = Const(0), x1 = Const(1), x2 = Const(2);
    y0 = Const(0);
    y1 = Const(1);
    y2 = Const(2);

    // basic logic
    first_res = Const(0);
    ops::IfNet(Const(true), [&] { Const(1, {.blob_out = first_res}); });
    ops::Else([&] { Const(2, {.blob_out = first_res}); });

    second_res = Const(0);
    ops::IfNet(Const(false), [&] { Const(1, {.blob_out = second_res}); });
    ops::Else([&] { Const(2, {.blob_out = second_res}); });

    // nested and sequential ifs, blob names redefinition in branches
    ops::IfNet(ops::LT({x0, x1}), [&] {
      local_blob = Const(900);
      ops::Add({Const(100), local_blob}, {y0});

      BlobRef gt = ops::GT({x1, x2});
      ops::IfNet(gt, [&] {
        // get_external_blob_names will not see local_blob in then/else branches:
        // it is redefined in the else branch
      });
      ops::Else([&] {
        ops::Add({y1, local_blob}, {local_blob});
        ops::Add({Const(100), y1}, {y1});
      });

      ops::IfNet(ops::EQ({local_blob, Const(901)}), [&] {
        Const(7, {.blob_out = y2});
        ops::Add({y1, y2}, {y2});
      });
    });
    ops::Else([&] {
      // should not be executed
    });
  });

  Plan plan("if_net_test");
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  run_plan(ws, plan.proto());

  EXPECT_EQ(fetch(ws, first_res), 1);
  EXPECT_EQ(fetch(ws, second_res), 2);
  EXPECT_EQ(fetch(ws, y0), 1000);
  EXPECT_EQ(fetch(ws, y1), 101);
  EXPECT_EQ(fetch(ws, y2), 108);
  const auto blobs = ws.blobs();
  EXPECT_EQ(std::count(blobs.begin(), blobs.end(), local_blob.name()), 0) << local_blob.name();
}

// Ports TestNetBuilder.test_while_net.
TEST(Caffe2NetBuilder, test_while_net) {
  BlobRef x, y;
  NetBuilder nb([&] {
    x = Const(0);
    y = Const(0);
    ops::WhileNet([&] {
      ops::Condition([&] {
        ops::Add({x, Const(1)}, {x});
        ops::LT({x, Const(7)});
      });
      ops::Add({x, y}, {y});
    });
  });

  Plan plan("while_net_test");
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  run_plan(ws, plan.proto());

  EXPECT_EQ(fetch(ws, x), 7);
  EXPECT_EQ(fetch(ws, y), 21);
}

}  // namespace
}  // namespace moka
