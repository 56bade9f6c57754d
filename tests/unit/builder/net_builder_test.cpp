// Unit tests of moka::NetBuilder: naming, the Net-name hook, children and the current net, the
// stop blob, freezing, conversion to a step, and its error messages (docs/building-plans.md §9.1).
#include <gtest/gtest.h>

#include <stdexcept>

#include "moka/builder/execution_step.h"
#include "moka/builder/net.h"
#include "moka/builder/net_builder.h"
#include "moka/builder/ops.h"
#include "moka/builder/plan.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/exec/plan_executor.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;

int64_t i64(const Workspace& ws, const BlobRef& b) { return ws.blob(b.name()).get<Tensor>().item<int64_t>(); }

const Net& net_child(const std::vector<NetBuilderChild>& children, std::size_t i) {
  return std::get<Net>(children.at(i));
}

TEST(NetBuilder, NamesJoinTheEnclosingBuilder) {
  NetBuilder outer({.name = "NBName.outer"}, [&] {
    EXPECT_EQ(NetBuilder::current()->name(), "NBName.outer");
    NetBuilder unnamed;
    EXPECT_EQ(unnamed.name(), "NBName.outer");  // unnamed nested builders share the name
    NetBuilder named({.name = "inner"});
    EXPECT_EQ(named.name(), "NBName.outer/inner");
    named.build([&] {
      NetBuilder deeper({.name = "deep"});
      EXPECT_EQ(deeper.name(), "NBName.outer/inner/deep");
      NetBuilder full({.fullname = "NBName.full"});
      EXPECT_EQ(full.name(), "NBName.full");
    });
  });
  EXPECT_EQ(NetBuilder().name(), "");
  EXPECT_EQ(NetBuilder::current(false), nullptr);
  EXPECT_EQ(invalid_input([] { NetBuilder::current(); }), "Context NetBuilder is required but none is active.");
  EXPECT_NE(
      invalid_input([] { NetBuilder b({.name = "a", .fullname = "b"}); }).find("Cannot set both _fullname and name"),
      std::string::npos);
}

TEST(NetBuilder, NetsCreatedInsideGetTheBuilderPrefix) {
  std::string a, b, c, d;
  NetBuilder nb({.name = "NBPrefix"}, [&] {
    a = Net("n").name();
    b = Net().name();
    c = Net().name();
    NetBuilder({.name = "sub"}, [&] { d = Net("m").name(); });
  });
  EXPECT_EQ(a, "NBPrefix/n");
  EXPECT_EQ(b, "NBPrefix");
  EXPECT_EQ(c, "NBPrefix_1");
  EXPECT_EQ(d, "NBPrefix/sub/m");
  EXPECT_EQ(Net("NBPrefix.outside").name(), "NBPrefix.outside");
  EXPECT_EQ(current_net_builder_name(), "");
}

TEST(NetBuilder, CurrentNetIsCreatedOnDemandAndEndedByNonNetChildren) {
  NetBuilder nb({.name = "NBCurrent"});
  Net first, named, user("NBCurrent.user"), after;
  nb.build([&] {
    first = nb.current_net();
    EXPECT_TRUE(nb.current_net() == first);
    named = nb.current_net("x");  // a name always starts a new net
    nb.add(user);
    EXPECT_TRUE(nb.current_net() == user);  // an added net becomes current
    nb.add(ExecutionStep("NBCurrent.step"));
    after = nb.current_net();
  });
  EXPECT_EQ(first.name(), "NBCurrent");
  EXPECT_EQ(named.name(), "NBCurrent/x");
  EXPECT_FALSE(after == user);
  EXPECT_EQ(after.name(), "NBCurrent_1");
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 5u);
  EXPECT_TRUE(net_child(children, 0) == first);
  EXPECT_TRUE(net_child(children, 2) == user);
  EXPECT_EQ(std::get<ExecutionStep>(children[3]).name(), "NBCurrent.step");
  EXPECT_TRUE(net_child(children, 4) == after);
}

TEST(NetBuilder, NetsAreNamedAfterTheActiveBuilderOnly) {
  // As in Caffe2, a net's prefix comes from the builder active when the net is made, not from
  // the builder that adds it.
  NetBuilder nb({.name = "NBInactive"});
  EXPECT_EQ(nb.current_net("NBInactive.n").name(), "NBInactive.n");
}

TEST(NetBuilder, StopBlobInTheFirstNetNeedsNoInitNet) {
  NetBuilder nb({.name = "NBStop1"});
  BlobRef stop;
  nb.build([&] {
    nb.current_net().Const(1);
    stop = nb.stop_blob();
    EXPECT_EQ(nb.stop_blob(), stop);  // created once
  });
  EXPECT_EQ(stop.name(), "NBStop1/stop_blob");
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 1u);
  const NetDef& def = net_child(children, 0).proto();
  ASSERT_EQ(def.op.size(), 2u);
  EXPECT_EQ(def.op[1].type, "ConstantFill");
  EXPECT_EQ(def.op[1].output, std::vector<std::string>{"NBStop1/stop_blob"});
}

TEST(NetBuilder, StopBlobLaterInsertsAnInitNetFirst) {
  NetBuilder nb({.name = "NBStop2"});
  nb.build([&] {
    ops::Const(1);
    ops::net({.name = "second"});
    ops::stop_if(ops::Const(true));
    ops::Const(2);  // a new net: stop_if ended the current one
  });
  const auto& children = nb.get();
  ASSERT_EQ(children.size(), 4u);
  const Net& init = net_child(children, 0);
  EXPECT_EQ(init.name(), "NBStop2/stop_blob_init");
  ASSERT_EQ(init.proto().op.size(), 1u);
  EXPECT_EQ(init.proto().op[0].output, std::vector<std::string>{"NBStop2/second/stop_blob"});
  const NetDef& second = net_child(children, 2).proto();
  ASSERT_EQ(second.op.size(), 3u);  // Const(true), Const(false) -> stop, Or
  EXPECT_EQ(second.op[2].type, "Or");
  EXPECT_EQ(second.op[2].input, (std::vector<std::string>{"NBStop2/second/stop_blob", second.op[0].output[0]}));
  EXPECT_EQ(second.op[2].output, std::vector<std::string>{"NBStop2/second/stop_blob"});
  EXPECT_EQ(net_child(children, 3).proto().op.size(), 1u);
  ASSERT_TRUE(nb.existing_stop_blob());
  EXPECT_EQ(nb.existing_stop_blob()->name(), "NBStop2/second/stop_blob");
}

TEST(NetBuilder, BuiltBuildersRefuseChanges) {
  NetBuilder inner_handle;
  NetBuilder nb({.name = "NBFrozen"}, [&] {
    ops::Const(1);
    inner_handle = NetBuilder({.name = "inner"});
    NetBuilder::current()->add(inner_handle);
  });
  EXPECT_TRUE(nb.is_frozen());
  EXPECT_TRUE(inner_handle.is_frozen());  // frozen recursively
  const std::string msg = "This NetBuilder (NBFrozen) has been built already.";
  EXPECT_EQ(invalid_input([&] { nb.add(Net("NBFrozen.late")); }), msg);
  EXPECT_EQ(invalid_input([&] { nb.current_net(); }), msg);
  EXPECT_EQ(invalid_input([&] { nb.build([] {}); }), msg);
  EXPECT_EQ(invalid_input([&] { inner_handle.current_net(); }),
            "This NetBuilder (NBFrozen/inner) has been built already.");
}

TEST(NetBuilder, GetFreezes) {
  NetBuilder nb({.name = "NBGet"});
  nb.current_net();
  EXPECT_FALSE(nb.is_frozen());
  EXPECT_EQ(nb.get().size(), 1u);
  EXPECT_TRUE(nb.is_frozen());
}

TEST(NetBuilder, RequiredStopCondition) {
  EXPECT_EQ(invalid_input([] { NetBuilder({.name = "NBReq", .stop_blob_required = true}, [] { ops::Const(1); }); }),
            "This NetBuilder (NBReq) requires a stop condition to be set with `stop` or `stop_if`");
  NetBuilder ok({.name = "NBReqOk", .stop_blob_required = true}, [] { ops::stop(); });
  EXPECT_TRUE(ok.existing_stop_blob());
}

TEST(NetBuilder, GivenStopBlobIsUsed) {
  NetBuilder nb({.name = "NBGiven", .stop_blob = BlobRef("NBGiven.stop")}, [] { ops::stop_if(ops::Const(true)); });
  EXPECT_EQ(nb.existing_stop_blob()->name(), "NBGiven.stop");
  ExecutionStep step = to_execution_step(nb);
  EXPECT_EQ(step.proto().should_stop_blob, "NBGiven.stop");
}

TEST(NetBuilder, CannotContainItself) {
  NetBuilder a({.name = "NBSelf"});
  EXPECT_EQ(invalid_input([&] { a.add(a); }), "NetBuilder (NBSelf) cannot be added to itself");
  NetBuilder b({.name = "NBSelf.b"});
  a.add(b);
  EXPECT_EQ(invalid_input([&] { b.add(a); }), "NetBuilder (NBSelf.b) cannot be added to itself");
}

TEST(NetBuilder, ExceptionInBodyPopsAndFreezes) {
  NetBuilder nb({.name = "NBThrow"});
  EXPECT_THROW(nb.build([] {
    ops::Const(1);
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_EQ(NetBuilder::current(false), nullptr);
  EXPECT_TRUE(nb.is_frozen());
  // A required stop condition is not reported over the body's own error.
  EXPECT_THROW(NetBuilder({.name = "NBThrow2", .stop_blob_required = true}, [] { throw std::runtime_error("x"); }),
               std::runtime_error);
}

TEST(NetBuilder, ToExecutionStepWithNetsOnly) {
  NetBuilder nb({.name = "NBStepNets"}, [] {
    ops::Const(1);
    ops::net({.name = "b"});
    ops::Const(2);
  });
  ExecutionStep step = to_execution_step(nb);
  ExecutionStepDef def = step.proto();
  EXPECT_EQ(def.name, "NBStepNets");
  EXPECT_EQ(def.network, (std::vector<std::string>{"NBStepNets", "NBStepNets/b"}));
  EXPECT_EQ(def.num_iter, 1);
  EXPECT_FALSE(def.should_stop_blob);
  EXPECT_EQ(to_execution_step(nb, "other").name(), "other");
}

TEST(NetBuilder, ToExecutionStepWithSubsteps) {
  NetBuilder nb({.name = "NBStepMixed"}, [] {
    ops::Const(1);
    ops::loop(2, [] { ops::Const(2); });
    ops::stop_if(ops::Const(true));
  });
  ExecutionStepDef def = to_execution_step(nb).proto();
  EXPECT_EQ(def.name, "NBStepMixed");
  EXPECT_TRUE(def.network.empty());
  // stop_blob_init (the stop blob's net is not the first child), net, loop, net.
  ASSERT_EQ(def.substep.size(), 4u);
  EXPECT_EQ(def.substep[0].network, std::vector<std::string>{"NBStepMixed/stop_blob_init"});
  EXPECT_EQ(def.substep[1].network, std::vector<std::string>{"NBStepMixed"});
  EXPECT_EQ(def.substep[2].name, "NBStepMixed");  // the unnamed loop shares the name
  EXPECT_TRUE(def.substep[2].should_stop_blob);
  EXPECT_EQ(def.should_stop_blob, "NBStepMixed_3/stop_blob");  // the net after the loop
  EXPECT_FALSE(def.num_iter);
}

TEST(NetBuilder, ListedAsAStepOrNet) {
  NetBuilder a({.name = "NBList.a"}, [] { ops::Const(1); });
  NetBuilder b({.name = "NBList.b"}, [] { ops::Const(2); });
  ExecutionStep outer = execution_step("NBList.outer", {a, b});
  ExecutionStepDef def = outer.proto();
  ASSERT_EQ(def.substep.size(), 2u);
  EXPECT_EQ(def.substep[0].name, "NBList.a");
  EXPECT_EQ(def.substep[1].name, "NBList.b");
}

TEST(NetBuilder, TopLevelStopIfRepeatsTheBody) {
  // A stop_if at the top of a builder makes its whole step repeat until the condition holds
  // (this is how a Task body with ops::stop_if behaves, docs/tasks.md §3.2).
  Net init("NBRepeat.init");
  BlobRef count = init.Const(0, {.blob_out = "NBRepeat.count"});
  NetBuilder nb({.name = "NBRepeat"}, [&] {
    ops::Add({count, ops::Const(1)}, {count});
    ops::stop_if(ops::GE({count, ops::Const(3)}));
  });
  Plan plan("NBRepeat.plan");
  plan.add_step(execution_step("NBRepeat.init", init));
  plan.add_step(to_execution_step(nb));
  Workspace ws;
  run_plan(ws, plan.proto());
  EXPECT_EQ(i64(ws, count), 3);
}

}  // namespace
}  // namespace moka
