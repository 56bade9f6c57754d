// Unit tests: NameScope, Net::next_blob / next_scoped_blob, and records (Scalar/Struct/List, NewRecord,
// ConstRecord, InitEmptyRecord, FeedRecord, FetchRecord, from_blob_list).
#include <gtest/gtest.h>

#include <thread>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using moka::testing::invalid_input;
using schema::Field;

TEST(NameScope, NestsResetsAndRestores) {
  EXPECT_EQ(current_name_scope(), "");
  {
    NameScope a("a");
    EXPECT_EQ(current_name_scope(), "a/");
    {
      NameScope b("b");
      EXPECT_EQ(scoped_name("x"), "a/b/x");
      NameScope empty("");
      EXPECT_EQ(current_name_scope(), "a/b/");
      NameScope reset("r", /*reset=*/true);
      EXPECT_EQ(current_name_scope(), "r/");
    }
    EXPECT_EQ(current_name_scope(), "a/");
  }
  EXPECT_EQ(current_name_scope(), "");
  EXPECT_EQ(name_scope("s", [] { return scoped_name("y"); }), "s/y");
}

TEST(NameScope, IsPerThreadAndRestoredOnException) {
  NameScope a("main");
  std::thread([] { EXPECT_EQ(current_name_scope(), ""); }).join();
  EXPECT_THROW(name_scope("inner", [] { throw InvalidInput("boom"); }), InvalidInput);
  EXPECT_EQ(current_name_scope(), "main/");
}

TEST(NetNextBlob, UniqueWithAutoSuffixAndScope) {
  Net net("nb");
  EXPECT_EQ(net.next_blob("x").name(), "x");
  EXPECT_EQ(net.next_blob("x").name(), "x_auto_0");
  EXPECT_EQ(net.next_blob("x").name(), "x_auto_1");
  net.op("ConstantFill", {}, {"y"});
  EXPECT_EQ(net.next_blob("y").name(), "y_auto_0");  // defined by an operator
  NameScope s("scope");
  EXPECT_EQ(net.next_scoped_blob("x").name(), "scope/x");
  EXPECT_EQ(net.next_scoped_blob().name(), "scope/unnamed");
}

Field sample_schema() {
  return schema::Struct({{"uid", schema::Scalar(DType::Int64)},
                         {"nested", schema::Struct({{"a", schema::Scalar(DType::Double)}, {"b", schema::Scalar()}})},
                         {"tags", schema::List(schema::Scalar(DType::String))}});
}

TEST(Schema, FlattenedNamesTypesAndAccess) {
  Field s = sample_schema();
  EXPECT_EQ(s.field_names(), (std::vector<std::string>{"uid", "nested:a", "nested:b", "tags:lengths", "tags:values"}));
  const auto types = s.field_types();
  ASSERT_EQ(types.size(), 5u);
  EXPECT_EQ(types[0], DType::Int64);
  EXPECT_EQ(types[2], std::nullopt);
  EXPECT_EQ(types[3], DType::Int32);
  EXPECT_EQ(s.num_fields(), 5u);
  EXPECT_TRUE(s["nested:a"].is_scalar());
  EXPECT_TRUE(s.field("nested")["b"].same_as(s["nested:b"]));
  EXPECT_TRUE(s["tags"].is_list());
  EXPECT_TRUE(s.has_field("tags:values"));
  EXPECT_FALSE(s.has_field("nested:c"));
  EXPECT_FALSE(s.has_blobs());
  EXPECT_THROW(s["nope"], NotFound);
  EXPECT_NE(invalid_input([&] { s.field_blobs(); }).find("Value is not set for this field."), std::string::npos);
  EXPECT_NE(invalid_input([&] { s["uid"](); }).find("Value is not set for this field."), std::string::npos);
  EXPECT_EQ(schema::Scalar().field_names(), std::vector<std::string>{""});
}

TEST(Schema, StructRejectsBadNames) {
  EXPECT_NE(invalid_input([] {
              schema::Struct({{"a", schema::Scalar()}, {"a", schema::Scalar()}});
            }).find("duplicate"),
            std::string::npos);
  EXPECT_NE(invalid_input([] { schema::Struct({{"a:b", schema::Scalar()}}); }).find("contains ':'"), std::string::npos);
  EXPECT_NE(invalid_input([] { schema::Struct({{"", schema::Scalar()}}); }).find("empty"), std::string::npos);
}

TEST(Schema, FromBlobListCloneAndSet) {
  Field s = sample_schema();
  Field rec = schema::from_blob_list(s, {"u", "a", "b", "l", "v"});
  EXPECT_TRUE(rec.has_blobs());
  EXPECT_FALSE(s.has_blobs());  // the schema is cloned
  EXPECT_EQ(rec["tags:values"]().name(), "v");
  EXPECT_EQ(invalid_input([&] { schema::from_blob_list(s, {"u"}); }), "Values must have 5 elements, got 1.");
  Field copy = rec.clone_schema();
  EXPECT_FALSE(copy.has_blobs());
  EXPECT_TRUE(copy.same_schema(s));
  EXPECT_FALSE(copy.same_schema(schema::Struct({{"uid", schema::Scalar(DType::Int64)}})));
  // Scalars are immutable once bound, unless unsafe.
  EXPECT_NE(invalid_input([&] { rec["uid"].set("other"); }).find("immutable"), std::string::npos);
  rec["uid"].set("other", /*unsafe=*/true);
  EXPECT_EQ(rec.field_blobs()[0].name(), "other");
}

TEST(Schema, NewRecordUsesScopedBlobs) {
  Net net("rec");
  Field rec = name_scope("init", [&] { return schema::NewRecord(net, sample_schema()); });
  EXPECT_EQ(rec.field_blobs(), (std::vector<BlobRef>{"init/uid", "init/nested:a", "init/nested:b", "init/tags:lengths",
                                                     "init/tags:values"}));
  Field again = name_scope("init", [&] { return schema::NewRecord(net, sample_schema()); });
  EXPECT_EQ(again["uid"]().name(), "init/uid_auto_0");
  Field scalar = schema::NewRecord(net, schema::Scalar(DType::Int64));
  EXPECT_EQ(scalar().name(), "unnamed_scalar");
  EXPECT_TRUE(net.proto().op.empty());  // NewRecord only names blobs
}

TEST(Schema, ConstInitEmptyFeedAndFetchRoundTrip) {
  Net init("rec_init");
  schema::Struct data({{"uid", schema::Scalar(Tensor::vector<int64_t>({1, 2, 6}))},
                       {"value", schema::Scalar(Tensor::vector<double>({1.5, 2.5, 3.5}))},
                       {"name", schema::Scalar(Tensor::vector<std::string>({"a", "b", "c"}))}});
  Field consts = name_scope("c", [&] { return schema::ConstRecord(init, data); });
  Field empty = name_scope("e", [&] { return schema::InitEmptyRecord(init, data.clone_schema()); });
  Field untyped = name_scope("u", [&] {
    return schema::InitEmptyRecord(init, schema::Struct({{"x", schema::Scalar()}}));
  });
  ASSERT_EQ(init.proto().op.size(), 7u);
  EXPECT_EQ(init.proto().op[0].type, "GivenTensorInt64Fill");
  EXPECT_EQ(init.proto().op[3].type, "ConstantFill");
  EXPECT_EQ(init.proto().op[5].type, "GivenTensorStringFill");
  EXPECT_NE(invalid_input([&] {
              schema::InitEmptyRecord(init, schema::Struct({{"x", schema::Scalar()}}), true);
            }).find("no dtype"),
            std::string::npos);

  Workspace ws;
  run_net_once(ws, init.proto());
  Field fetched = schema::FetchRecord(consts, ws);
  EXPECT_EQ(*fetched["uid"].value(), Tensor::vector<int64_t>({1, 2, 6}));
  EXPECT_EQ(*fetched["name"].value(), Tensor::vector<std::string>({"a", "b", "c"}));
  Field e = schema::FetchRecord(empty, ws);
  EXPECT_EQ(e["value"].value()->dtype(), DType::Double);
  EXPECT_EQ(e["value"].value()->shape(), std::vector<int64_t>{0});
  EXPECT_EQ(schema::FetchRecord(untyped, ws)["x"].value()->dtype(), DType::Float);

  schema::FeedRecord(empty, data, ws);
  EXPECT_EQ(*schema::FetchRecord(empty, ws)["value"].value(), Tensor::vector<double>({1.5, 2.5, 3.5}));
  EXPECT_NE(invalid_input([&] {
              schema::FeedRecord(empty, std::vector<Tensor>{Tensor::scalar<int64_t>(1)}, ws);
            }).find("3 fields, got 1 values"),
            std::string::npos);
  EXPECT_THROW(schema::FetchRecord(schema::from_blob_list(schema::Struct({{"m", schema::Scalar()}}), {"missing"}), ws),
               NotFound);
  EXPECT_NE(invalid_input([&] { schema::ConstRecord(init, data.clone_schema()); }).find("has no value"),
            std::string::npos);
}

}  // namespace
}  // namespace moka
