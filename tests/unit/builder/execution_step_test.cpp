// Unit tests of moka::ExecutionStep, execution_step() and to_execution_step(): Caffe2's
// assertions and messages (docs/building-plans.md §4, §4.1), automatic names, net dicts and attributes.
#include <gtest/gtest.h>

#include "moka/builder/execution_step.h"
#include "moka/core/error.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;

// The automatic step name that follows prev ("step" -> "step_1", "step_4" -> "step_5").
std::string next_auto(const std::string& prev) {
  if (prev == "step") return "step_1";
  return "step_" + std::to_string(std::stoi(prev.substr(5)) + 1);
}

const char* const kUsed = "Cannot mutate a step that has already been added to a plan/step.";
const char* const kBoth = "Cannot have both network and substeps.";

Net filled_net(const std::string& name) {
  Net n(name);
  n.op("ConstantFill", {}, {n.name() + "/x"});
  return n;
}

TEST(StepNaming, OnlyEmptyNamesAreGeneratedAndDeduplicated) {
  ExecutionStep a;
  ExecutionStep b("");
  EXPECT_TRUE(a.name() == "step" || a.name().starts_with("step_")) << a.name();
  EXPECT_EQ(b.name(), next_auto(a.name()));
  ExecutionStep c("StepNaming.explicit");
  ExecutionStep d("StepNaming.explicit");
  EXPECT_EQ(c.name(), "StepNaming.explicit");
  EXPECT_EQ(d.name(), "StepNaming.explicit");
  EXPECT_FALSE(c == d);
  ExecutionStep copy = c;
  EXPECT_TRUE(copy == c);
}

TEST(StepMutators, SetEveryField) {
  Net report = filled_net("StepMutators.report");
  ExecutionStep s("StepMutators.s");
  s.set_iter(7)
      .set_create_workspace()
      .set_num_concurrent_instances(3)
      .set_only_once()
      .set_should_stop_blob("stop")
      .set_report_net(report, 2)
      .set_concurrent_substeps(true)
      .run_every_millis(50);
  ExecutionStepDef def = s.proto();
  EXPECT_EQ(def.name, "StepMutators.s");
  EXPECT_EQ(def.num_iter, 7);
  EXPECT_EQ(def.create_workspace, true);
  EXPECT_EQ(def.num_concurrent_instances, 3);
  EXPECT_EQ(def.only_once, true);
  EXPECT_EQ(def.should_stop_blob, "stop");
  EXPECT_EQ(def.report_net, report.name());
  EXPECT_EQ(def.report_interval, 2);
  EXPECT_EQ(def.concurrent_substeps, true);
  EXPECT_EQ(def.run_every_ms, 50);
  EXPECT_TRUE(def.network.empty());  // the report net is in the net dict only
  ASSERT_EQ(s.nets().size(), 1u);
  EXPECT_TRUE(s.nets()[0] == report);
  EXPECT_FALSE(s.has_nets());
}

TEST(StepMutators, UsedStepRefusesEveryMutatorButRunEveryMillis) {
  Net net = filled_net("StepMutators.used");
  ExecutionStep inner("StepMutators.inner");
  inner.add_net(net);
  ExecutionStep outer("StepMutators.outer");
  outer.add_substep(inner);
  EXPECT_TRUE(inner.is_used());
  EXPECT_EQ(invalid_input([&] { inner.set_iter(1); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_create_workspace(true); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_num_concurrent_instances(2); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_only_once(true); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_should_stop_blob("b"); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_report_net(net, 1); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.set_concurrent_substeps(true); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.add_net(net); }), kUsed);
  EXPECT_EQ(invalid_input([&] { inner.add_substep(ExecutionStep("StepMutators.x")); }), kUsed);
  inner.run_every_millis(10);
  // The parent composes its definition when asked, so it sees the change.
  EXPECT_EQ(outer.proto().substep.at(0).run_every_ms, 10);
}

TEST(StepMutators, ShouldStopBlobMustBeABlob) {
  ExecutionStep s("StepMutators.stop");
  EXPECT_NE(invalid_input([&] { s.set_should_stop_blob(BlobRef()); }).find("expects BlobReference here"),
            std::string::npos);
}

TEST(StepMutators, NetsAndSubstepsExcludeEachOther) {
  Net net = filled_net("StepMutators.both");
  ExecutionStep with_nets("StepMutators.with_nets");
  with_nets.add_net(net);
  ExecutionStep sub("StepMutators.sub");
  sub.add_net(net);
  EXPECT_EQ(invalid_input([&] { with_nets.add_substep(sub); }), kBoth);
  EXPECT_EQ(invalid_input([&] { with_nets.set_concurrent_substeps(true); }), kBoth);
  ExecutionStep with_subs("StepMutators.with_subs");
  with_subs.add_substep(sub);
  EXPECT_EQ(invalid_input([&] { with_subs.add_net(net); }), kBoth);
  EXPECT_EQ(invalid_input([&] { with_subs.add_substep(with_subs); }),
            "step \"StepMutators.with_subs\" cannot be its own substep");
}

TEST(StepNets, AddNetAppendsEveryTimeConstructorOnce) {
  Net net = filled_net("StepNets.n");
  ExecutionStep s("StepNets.s");
  s.add_net(net).add_net(net);
  EXPECT_EQ(s.proto().network, (std::vector<std::string>{net.name(), net.name()}));
  EXPECT_EQ(s.nets().size(), 1u);
  ExecutionStep c("StepNets.c", {net, net}, 4);
  EXPECT_EQ(c.proto().network, (std::vector<std::string>{net.name()}));
  EXPECT_EQ(c.proto().num_iter, 4);
  EXPECT_TRUE(c.get_net(net.name()) == net);
  EXPECT_THROW(c.get_net("StepNets.none"), NotFound);
}

TEST(StepNets, DifferentNetsWithSameName) {
  Net a = filled_net("StepNets.same");
  Net b = Net::from_proto(a.proto(), /*unique_name=*/false);
  ASSERT_EQ(a.name(), b.name());
  const std::string expected = "Different nets with same name: " + a.name();
  ExecutionStep s("StepNets.dup");
  s.add_net(a);
  EXPECT_EQ(invalid_input([&] { s.add_net(b); }), expected);
  EXPECT_EQ(invalid_input([&] { s.set_report_net(b, 1); }), expected);
  EXPECT_EQ(invalid_input([&] { ExecutionStep("StepNets.ctor", {a, b}); }), expected);
  ExecutionStep sub_a("StepNets.sub_a"), sub_b("StepNets.sub_b"), parent("StepNets.parent");
  sub_a.add_net(a);
  sub_b.add_net(b);
  parent.add_substep(sub_a);
  EXPECT_EQ(invalid_input([&] { parent.add_substep(sub_b); }), expected);
  EXPECT_EQ(parent.substeps().size(), 1u);  // refused substep left nothing behind
}

TEST(StepSubsteps, EmptySubstepIsDroppedButMarkedUsed) {
  ExecutionStep parent("StepSubsteps.parent");
  ExecutionStep empty("StepSubsteps.empty");
  parent.add_substep(empty);
  EXPECT_TRUE(empty.is_used());
  EXPECT_FALSE(parent.has_substeps());
  EXPECT_TRUE(parent.proto().substep.empty());
}

TEST(StepSubsteps, NetsMergeIntoParentInOrder) {
  Net n1 = filled_net("StepSubsteps.n1"), n2 = filled_net("StepSubsteps.n2"), n3 = filled_net("StepSubsteps.n3");
  ExecutionStep a("StepSubsteps.a"), b("StepSubsteps.b"), parent("StepSubsteps.p");
  a.add_net(n2).add_net(n1);
  b.add_net(n1).add_net(n3);
  parent.add_substep(a).add_substep(b);
  std::vector<std::string> names;
  for (const Net& n : parent.nets()) names.push_back(n.name());
  EXPECT_EQ(names, (std::vector<std::string>{n2.name(), n1.name(), n3.name()}));
  ExecutionStepDef def = parent.proto();
  ASSERT_EQ(def.substep.size(), 2u);
  EXPECT_EQ(def.substep[0].name, "StepSubsteps.a");
  EXPECT_EQ(def.substep[1].network, (std::vector<std::string>{n1.name(), n3.name()}));
}

struct Label : NetAttribute {
  explicit Label(std::string v) : value(std::move(v)) {}
  std::string value;
};

TEST(StepAttributes, CollectedOverAllNetsInInsertionOrder) {
  Net n1("StepAttributes.n1"), n2("StepAttributes.n2"), n3("StepAttributes.n3");
  for (Net* n : {&n1, &n2, &n3}) n->op("ConstantFill", {}, {n->name() + "/x"});
  n1.add_attribute("task_setup", std::make_shared<Label>("a"));
  n2.add_attribute("task_setup", std::make_shared<Label>("b"));
  n2.add_attribute("other", std::make_shared<Label>("x"));
  n3.add_attribute("task_setup", std::make_shared<Label>("c"));
  n3.add_attribute("task_setup", std::make_shared<Label>("d"));
  ExecutionStep sub("StepAttributes.sub"), top("StepAttributes.top");
  sub.add_net(n2).add_net(n3);
  top.add_substep(execution_step("StepAttributes.first", n1)).add_substep(sub);
  std::vector<std::string> got;
  for (const auto& a : top.get_all_attributes("task_setup")) got.push_back(std::dynamic_pointer_cast<Label>(a)->value);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(top.get_all_attributes("missing").empty());
}

TEST(ExecutionStepFn, DefaultsToOneIteration) {
  Net net = filled_net("ExecutionStepFn.n");
  ExecutionStepDef def = execution_step("ExecutionStepFn.s", net).proto();
  EXPECT_EQ(def.num_iter, 1);
  EXPECT_EQ(def.network, (std::vector<std::string>{net.name()}));
  EXPECT_FALSE(def.should_stop_blob);
  EXPECT_FALSE(def.create_workspace);  // only set when true
  EXPECT_FALSE(def.run_every_ms);      // only set when non-zero
  ExecutionStepDef empty = execution_step("ExecutionStepFn.empty").proto();
  EXPECT_EQ(empty.num_iter, 1);
  EXPECT_TRUE(empty.network.empty());
  EXPECT_TRUE(empty.substep.empty());
}

TEST(ExecutionStepFn, Options) {
  Net net = filled_net("ExecutionStepFn.opts");
  Net report = filled_net("ExecutionStepFn.report");
  ExecutionStepDef def = execution_step("ExecutionStepFn.o", {net},
                                        {.report_net = report,
                                         .report_interval = 5,
                                         .should_stop_blob = "stop",
                                         .only_once = false,
                                         .num_concurrent_instances = 2,
                                         .create_workspace = true,
                                         .run_every_ms = 20})
                             .proto();
  EXPECT_FALSE(def.num_iter);
  EXPECT_EQ(def.should_stop_blob, "stop");
  EXPECT_EQ(def.only_once, false);
  EXPECT_EQ(def.report_net, report.name());
  EXPECT_EQ(def.report_interval, 5);
  EXPECT_EQ(def.num_concurrent_instances, 2);
  EXPECT_EQ(def.create_workspace, true);
  EXPECT_EQ(def.run_every_ms, 20);
  // Options are applied before the nets are added, as in Caffe2, so this is accepted.
  EXPECT_EQ(execution_step("ExecutionStepFn.cs", net, {.concurrent_substeps = true}).proto().concurrent_substeps, true);
}

TEST(ExecutionStepFn, Errors) {
  Net net = filled_net("ExecutionStepFn.err");
  EXPECT_EQ(invalid_input([&] { execution_step("x", net, {.num_iter = 2, .should_stop_blob = "b"}); }),
            "Cannot set both should_stop_blob and num_iter.");
  EXPECT_EQ(invalid_input([&] { execution_step("ExecutionStepFn.r", net, {.report_net = net}); }),
            "execution_step \"ExecutionStepFn.r\": report_net needs report_interval.");
}

TEST(ExecutionStepFn, ListsOfNetsStepsAndMixed) {
  Net n1 = filled_net("ExecutionStepFn.l1"), n2 = filled_net("ExecutionStepFn.l2");
  ExecutionStepDef nets = execution_step("ExecutionStepFn.nets", {n1, n2, n1}).proto();
  EXPECT_EQ(nets.network, (std::vector<std::string>{n1.name(), n2.name(), n1.name()}));
  ExecutionStepDef vec = execution_step("ExecutionStepFn.vec", std::vector<Net>{n2}).proto();
  EXPECT_EQ(vec.network, (std::vector<std::string>{n2.name()}));

  ExecutionStep sub = execution_step("ExecutionStepFn.sub", n1, {.num_iter = 3});
  ExecutionStep mixed = execution_step("", {sub, n2});
  ExecutionStepDef def = mixed.proto();
  EXPECT_TRUE(def.network.empty());
  ASSERT_EQ(def.substep.size(), 2u);
  EXPECT_EQ(def.substep[0].name, "ExecutionStepFn.sub");
  EXPECT_EQ(def.substep[0].num_iter, 3);
  // The net became its own one-iteration substep, named after the outer step's automatic name.
  EXPECT_EQ(def.substep[1].name, next_auto(def.name));
  EXPECT_EQ(def.substep[1].num_iter, 1);
  EXPECT_EQ(def.substep[1].network, (std::vector<std::string>{n2.name()}));
  EXPECT_TRUE(sub.is_used());

  ExecutionStep single = execution_step("ExecutionStepFn.single", sub);
  ASSERT_EQ(single.proto().substep.size(), 1u);
  ExecutionStep steps = execution_step("ExecutionStepFn.steps", std::vector<ExecutionStep>{sub, sub});
  EXPECT_EQ(steps.proto().substep.size(), 2u);
}

TEST(ToExecutionStep, StepAsIsNetAutoNamed) {
  Net net = filled_net("ToExecutionStep.n");
  ExecutionStep s("ToExecutionStep.s");
  EXPECT_TRUE(to_execution_step(s) == s);
  ExecutionStep a = to_execution_step(net);
  ExecutionStep b = to_execution_step(net);
  EXPECT_EQ(b.name(), next_auto(a.name()));
  EXPECT_EQ(a.proto().num_iter, 1);
  EXPECT_EQ(to_execution_step(net, "ToExecutionStep.named").name(), "ToExecutionStep.named");
  EXPECT_EQ(to_execution_step({net, net}, "ToExecutionStep.list").proto().network.size(), 2u);
}

// A stand-in for the NetBuilder of a later slice: anything with an ADL to_execution_step.
struct FakeBuilder {
  std::string name;
  Net net;
  int* conversions;
};
ExecutionStep to_execution_step(FakeBuilder& b, const std::string& default_name) {
  ++*b.conversions;
  return execution_step(default_name.empty() ? b.name : default_name, b.net, {.should_stop_blob = "stop"});
}

TEST(ToExecutionStep, ConvertibleObjectsInLists) {
  int conversions = 0;
  FakeBuilder fb{"ToExecutionStep.builder", filled_net("ToExecutionStep.fb"), &conversions};
  StepOrNet item = fb;
  EXPECT_EQ(conversions, 0);  // converted when execution_step reaches it
  ExecutionStep s = execution_step("ToExecutionStep.outer", {item, filled_net("ToExecutionStep.other")});
  EXPECT_EQ(conversions, 1);
  ExecutionStepDef def = s.proto();
  ASSERT_EQ(def.substep.size(), 2u);
  EXPECT_EQ(def.substep[0].name, "ToExecutionStep.builder");
  EXPECT_EQ(def.substep[0].should_stop_blob, "stop");
}

}  // namespace
}  // namespace moka
