// Unit tests of moka::Net: Caffe2's net and blob naming (docs/building-plans.md §3), Const, external inputs,
// schema validation at build time, freezing and attributes.
#include <gtest/gtest.h>

#include <thread>

#include "moka/builder/context.h"
#include "moka/builder/net.h"
#include "moka/core/error.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using testing::invalid_input;

const Argument* arg(const OperatorDef& op, const std::string& name) { return find_arg(op.arg, name); }

TEST(NetNaming, NamesAreUniqueInTheProcess) {
  Net a("NetNaming.unique");
  Net b("NetNaming.unique");
  Net c("NetNaming.unique");
  EXPECT_EQ(a.name(), "NetNaming.unique");
  EXPECT_EQ(b.name(), "NetNaming.unique_1");
  EXPECT_EQ(c.name(), "NetNaming.unique_2");
  // A name that looks like a generated one is itself deduplicated.
  Net d("NetNaming.unique_1");
  EXPECT_EQ(d.name(), "NetNaming.unique_1_1");
}

TEST(NetNaming, NamesAreUniqueAcrossThreads) {
  std::vector<std::string> names(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { names[t] = Net("NetNaming.threads").name(); });
  for (auto& th : threads) th.join();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
  EXPECT_EQ(names[0], "NetNaming.threads");
}

TEST(NetNaming, PrefixFromCurrentNetBuilder) {
  detail::set_net_builder_name_source([] { return std::string("NetNaming.nb"); });
  Net inner("inner");
  Net unnamed;
  detail::set_net_builder_name_source(nullptr);
  EXPECT_EQ(inner.name(), "NetNaming.nb/inner");
  EXPECT_EQ(unnamed.name(), "NetNaming.nb");  // Caffe2: core.Net(None) gets the builder's name
}

TEST(NetNaming, EmptyNameOutsideBuilderIsNet) {
  Net n;
  EXPECT_TRUE(n.name() == "net" || n.name().starts_with("net_")) << n.name();
}

TEST(NetNaming, IsAHandle) {
  Net a("NetNaming.handle");
  Net copy = a;
  copy.op("ConstantFill", {}, {"x"});
  EXPECT_EQ(a.proto().op.size(), 1u);
  EXPECT_TRUE(a == copy);
  EXPECT_FALSE(a == Net("NetNaming.handle"));
}

TEST(BlobNaming, AutoOutputsAndDedup) {
  Net net("BlobNaming.auto");
  const std::string n = net.name();
  BlobRef x = net.op("ConstantFill");
  BlobRef y = net.op("ConstantFill");
  BlobRef z = net.op("ConstantFill");
  EXPECT_EQ(x.name(), n + "/ConstantFill");
  EXPECT_EQ(y.name(), n + "/ConstantFill_2");
  EXPECT_EQ(z.name(), n + "/ConstantFill_3");
  BlobRefs two = net.op("Sub", {x, y}, 1);
  EXPECT_EQ(two, (BlobRefs{n + "/Sub:0"}));
  BlobRefs again = net.op("Sub", {x, y}, 1);
  EXPECT_EQ(again, (BlobRefs{n + "/Sub_2:0"}));
  BlobRef explicit_out = net.op("Add", {x, y}, {"sum"});
  EXPECT_EQ(explicit_out.name(), "sum");
  BlobRefs none = net.op("ResetCounter", {"counter"}, 0);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(net.proto().op.back().output.size(), 0u);
}

TEST(BlobNaming, CountedOutputs) {
  Net net("BlobNaming.counted");
  // StatRegistryExport has three outputs.
  BlobRefs outs = net.op("StatRegistryExport", {}, 3);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].name(), net.name() + "/StatRegistryExport:0");
  EXPECT_EQ(outs[2].name(), net.name() + "/StatRegistryExport:2");
}

TEST(BlobNaming, NextName) {
  Net net("BlobNaming.next");
  const std::string n = net.name();
  EXPECT_EQ(net.next_name().name(), n + "_blob_0");
  EXPECT_EQ(net.next_name().name(), n + "_blob_1");
  EXPECT_EQ(net.next_name("stop_blob").name(), n + "/stop_blob");
  EXPECT_EQ(net.next_name("stop_blob").name(), n + "/stop_blob");  // nothing defined it yet
  net.op("ConstantFill", {}, {n + "/stop_blob"});
  EXPECT_EQ(net.next_name("stop_blob").name(), n + "/stop_blob_2");
  EXPECT_EQ(net.next_name("x", 3).name(), n + "/x:3");
  net.op("ConstantFill", {}, {n + "/x:3"});
  EXPECT_EQ(net.next_name("x", 3).name(), n + "/x_2:3");
  // External inputs count as defined too (Caffe2's BlobIsDefined).
  net.add_external_input(n + "/ext");
  EXPECT_EQ(net.next_name("ext").name(), n + "/ext_2");
}

TEST(BlobNaming, AutoOutputAvoidsAnInputOfTheSameOperator) {
  Net net("BlobNaming.input_first");
  // The undefined input becomes an external input before the output is named (Caffe2's order).
  BlobRef out = net.op("Copy", {net.name() + "/Copy"});
  EXPECT_EQ(out.name(), net.name() + "/Copy_2");
}

TEST(NetExternal, UndefinedInputsBecomeExternalInputsOnce) {
  Net net("NetExternal.auto");
  BlobRef a = net.op("Add", {"x", "y"});
  net.op("Add", {"x", a});
  net.op("Add", {"z", "z"});
  EXPECT_EQ(net.proto().external_input, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_TRUE(net.is_defined("x"));
  EXPECT_TRUE(net.is_defined(a));
  EXPECT_FALSE(net.is_defined("w"));
}

TEST(NetExternal, ExplicitInputsAndOutputs) {
  Net net("NetExternal.explicit");
  net.add_external_input("in");
  EXPECT_EQ(invalid_input([&] { net.add_external_input("in"); }),
            "Net " + net.name() + " already contains an input named in");
  BlobRef out = net.op("Copy", {"in"});
  net.add_external_output(out);
  EXPECT_EQ(net.proto().external_input, (std::vector<std::string>{"in"}));  // not added twice
  EXPECT_EQ(net.proto().external_output, (std::vector<std::string>{out.name()}));
  EXPECT_NE(invalid_input([&] { net.add_external_output("nowhere"); }).find("nowhere is not defined"),
            std::string::npos);
}

TEST(NetValidation, UnknownArgumentFailsAtBuildTimeNamingNetAndOperator) {
  Net net("NetValidation.typo");
  net.op("ConstantFill", {}, {"ok"});
  std::string msg = invalid_input([&] { net.op("ConstantFill", {"x"}, {"y"}, {{"vaule", 1.0}}); });
  EXPECT_NE(msg.find("net \"" + net.name() + "\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("operator #1 (ConstantFill)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vaule"), std::string::npos) << msg;
  // The net is unchanged: no op, and "x" did not become an external input.
  EXPECT_EQ(net.proto().op.size(), 1u);
  EXPECT_TRUE(net.proto().external_input.empty());
  EXPECT_FALSE(net.is_defined("y"));
}

TEST(NetValidation, UnknownTypeArityAndEmptyNames) {
  Net net("NetValidation.other");
  EXPECT_NE(invalid_input([&] { net.op("NoSuchOperator"); }).find("NoSuchOperator"), std::string::npos);
  EXPECT_NE(invalid_input([&] { net.op("Add", {"a"}); }).find("operator #0 (Add)"), std::string::npos);
  EXPECT_NE(invalid_input([&] { net.op("Copy", {BlobRef()}); }).find("input #0 is an empty BlobRef"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { net.op("ConstantFill", {}, {BlobRef()}); }).find("output #0 is an empty BlobRef"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { net.op("ConstantFill", {}, -1); }).find("must be >= 0"), std::string::npos);
  EXPECT_TRUE(net.proto().op.empty());
}

TEST(NetFreeze, FrozenNetRefusesChanges) {
  Net net("NetFreeze.n");
  BlobRef x = net.Const(1);
  net.freeze();
  EXPECT_TRUE(net.is_frozen());
  const std::string expected =
      "Cannot change net \"" + net.name() + "\": it is frozen (it has been added to a plan or built).";
  EXPECT_EQ(invalid_input([&] { net.op("Copy", {x}); }), expected);
  EXPECT_EQ(invalid_input([&] { net.Const(2); }), expected);
  EXPECT_EQ(invalid_input([&] { net.add_external_input("e"); }), expected);
  EXPECT_EQ(invalid_input([&] { net.add_external_output(x); }), expected);
  EXPECT_EQ(invalid_input([&] { net.add_attribute("k", nullptr); }), expected);
  EXPECT_EQ(net.proto().op.size(), 1u);
}

struct Tag : NetAttribute {
  explicit Tag(int v) : value(v) {}
  int value;
};

TEST(NetAttributes, AddAndGetInOrder) {
  Net net("NetAttributes.n");
  EXPECT_TRUE(net.get_attributes("task_setup").empty());
  net.add_attribute("task_setup", std::make_shared<Tag>(1));
  net.add_attribute("report_step", std::make_shared<Tag>(2));
  net.add_attribute("task_setup", std::make_shared<Tag>(3));
  const auto& attrs = net.get_attributes("task_setup");
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(std::dynamic_pointer_cast<Tag>(attrs[0])->value, 1);
  EXPECT_EQ(std::dynamic_pointer_cast<Tag>(attrs[1])->value, 3);
}

TEST(NetConst, ScalarDtypesShapesAndNames) {
  Net net("NetConst.scalars");
  const std::string n = net.name();
  BlobRef i = net.Const(5);
  BlobRef i2 = net.Const(int64_t{7});
  BlobRef d = net.Const(2.5);
  BlobRef b = net.Const(true);
  BlobRef s = net.Const("hello");
  EXPECT_EQ(i.name(), n + "/GivenTensorInt64Fill:0");
  EXPECT_EQ(i2.name(), n + "/GivenTensorInt64Fill_2:0");
  EXPECT_EQ(d.name(), n + "/GivenTensorDoubleFill:0");
  EXPECT_EQ(b.name(), n + "/ConstantFill:0");
  EXPECT_EQ(s.name(), n + "/GivenTensorStringFill:0");
  const auto& ops = net.proto().op;
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].type, "GivenTensorInt64Fill");
  EXPECT_EQ(arg(ops[0], "values")->ints, (std::vector<int64_t>{5}));
  EXPECT_EQ(arg(ops[0], "shape")->ints, (std::vector<int64_t>{}));  // 0-d
  EXPECT_EQ(ops[2].type, "GivenTensorDoubleFill");
  EXPECT_EQ(arg(ops[2], "values")->floats, (std::vector<double>{2.5}));
  EXPECT_EQ(ops[3].type, "ConstantFill");
  EXPECT_EQ(arg(ops[3], "dtype")->i, 5);  // BOOL
  EXPECT_EQ(arg(ops[3], "value")->i, 1);
  EXPECT_EQ(ops[4].type, "GivenTensorStringFill");
  EXPECT_EQ(arg(ops[4], "values")->strings, (std::vector<std::string>{"hello"}));
  EXPECT_TRUE(ops[4].input.empty());
}

TEST(NetConst, VectorsAreOneDimensional) {
  Net net("NetConst.vectors");
  net.Const({100});
  net.Const({1.5, 2.5, 3.5});
  net.Const({true, false});
  net.Const({"a", "b"});
  net.Const(std::vector<int64_t>{});
  const auto& ops = net.proto().op;
  EXPECT_EQ(ops[0].type, "GivenTensorInt64Fill");
  EXPECT_EQ(arg(ops[0], "shape")->ints, (std::vector<int64_t>{1}));  // Caffe2: Const([100]) has shape [1]
  EXPECT_EQ(ops[1].type, "GivenTensorDoubleFill");
  EXPECT_EQ(arg(ops[1], "shape")->ints, (std::vector<int64_t>{3}));
  EXPECT_EQ(ops[2].type, "GivenTensorBoolFill");
  EXPECT_EQ(arg(ops[2], "values")->ints, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ops[3].type, "GivenTensorStringFill");
  EXPECT_EQ(arg(ops[4], "shape")->ints, (std::vector<int64_t>{0}));
}

TEST(NetConst, BlobOutAndDtypeOverride) {
  Net net("NetConst.override");
  BlobRef y = net.Const(3, {.blob_out = "y"});
  EXPECT_EQ(y.name(), "y");
  net.Const(3, {.dtype = DType::Int32});
  net.Const(3, {.dtype = DType::Float});
  net.Const(3, {.dtype = DType::Double});
  net.Const(2.0, {.dtype = DType::Int64});
  net.Const({1, 0}, {.dtype = DType::Bool});
  net.Const(-3, {.dtype = DType::Int8});
  net.Const(false, {.dtype = DType::Int32});
  const auto& ops = net.proto().op;
  EXPECT_EQ(ops[1].type, "GivenTensorIntFill");
  EXPECT_EQ(ops[2].type, "GivenTensorFill");
  EXPECT_EQ(arg(ops[2], "values")->floats, (std::vector<double>{3.0}));
  EXPECT_EQ(ops[3].type, "GivenTensorDoubleFill");
  EXPECT_EQ(ops[4].type, "GivenTensorInt64Fill");
  EXPECT_EQ(arg(ops[4], "values")->ints, (std::vector<int64_t>{2}));
  EXPECT_EQ(ops[5].type, "GivenTensorBoolFill");
  EXPECT_EQ(ops[6].type, "GivenTensorFill");
  EXPECT_EQ(arg(ops[6], "dtype")->i, 7);  // INT8
  EXPECT_EQ(ops[7].type, "ConstantFill");
  EXPECT_EQ(arg(ops[7], "dtype")->i, 2);  // INT32
}

TEST(NetConst, InexactConversionsFail) {
  Net net("NetConst.inexact");
  EXPECT_NE(invalid_input([&] {
              net.Const(2.5, {.dtype = DType::Int64});
            }).find("value 2.5 cannot be represented exactly as INT64"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] {
              net.Const({1, 300}, {.dtype = DType::Int8});
            }).find("value [1] 300"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { net.Const(int64_t{1} << 40, {.dtype = DType::Int32}); }).find("INT32"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { net.Const(0.1, {.dtype = DType::Float}); }).find("FLOAT"), std::string::npos);
  EXPECT_NE(invalid_input([&] { net.Const(2, {.dtype = DType::Bool}); }).find("BOOL"), std::string::npos);
  EXPECT_NE(invalid_input([&] { net.Const("s", {.dtype = DType::Int64}); }).find("from STRING values"),
            std::string::npos);
  EXPECT_NE(invalid_input([&] { net.Const(1, {.dtype = DType::String}); }).find("STRING constant"), std::string::npos);
  std::string msg = invalid_input([&] { net.Const(true, {.dtype = DType::String}); });
  EXPECT_EQ(msg.rfind("net \"" + net.name() + "\" > Const: ", 0), 0u) << msg;
  EXPECT_TRUE(net.proto().op.empty());
}

TEST(NetFromProto, KeepsDefinitionsAndContinuesNaming) {
  NetDef def;
  def.name = "NetFromProto.p";
  def.op.push_back(make_op("Copy", {"in"}, {"NetFromProto.p_blob_12"}));
  def.external_input = {"in"};
  Net a = Net::from_proto(def);
  EXPECT_EQ(a.name(), "NetFromProto.p");
  EXPECT_TRUE(a.is_defined("in"));
  EXPECT_TRUE(a.is_defined("NetFromProto.p_blob_12"));
  EXPECT_EQ(a.next_name().name(), "NetFromProto.p_blob_13");
  Net b = Net::from_proto(def);
  EXPECT_EQ(b.name(), "NetFromProto.p_1");
  Net c = Net::from_proto(def, /*unique_name=*/false);
  EXPECT_EQ(c.name(), "NetFromProto.p");
  EXPECT_EQ(Net("NetFromProto.p").name(), "NetFromProto.p_2");
}

}  // namespace
}  // namespace moka
