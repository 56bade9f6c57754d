// Unit tests: several writer pipes into one Queue — a writer whose record fields differ from the
// queue's is refused at build time.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "support/invalid_input.h"

namespace moka {
namespace {

using moka::testing::invalid_input;
using schema::Field;

// A dataset fed into the session's workspace whose int64 columns are named `names`, each holding
// from, from + 1, ..., from + n - 1.
Dataset make_source(LocalSession& session, const std::string& name, const std::vector<std::string>& names,
                    int64_t from, int64_t n) {
  Net init(name + "_init");
  NameScope scope(name);
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  std::vector<std::pair<std::string, Field>> fields;
  for (const auto& f : names) fields.emplace_back(f, schema::Scalar(Tensor::vector<int64_t>(v)));
  schema::Struct values(fields);
  Field blobs = name_scope("src", [&] { return schema::NewRecord(init, values); });
  schema::FeedRecord(blobs, values, session.workspace());
  session.run(init);
  return Dataset(blobs, name + "_src");
}

// A second writer whose fields have other names: refused while the pipe is built, naming the
// queue and both field lists (before, readers got its values under the first writer's names).
TEST(QueueWriters, WriterWithOtherFieldNamesIsRefusedAtBuildTime) {
  LocalSession session;
  Dataset first = make_source(session, "qwna", {"val"}, 0, 5);
  Dataset other = make_source(session, "qwnb", {"other"}, 0, 5);
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "qwn_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    pipe(first.reader(), {.output = q});
    const std::string msg = invalid_input([&] { pipe(other.reader(), {.output = q}); });
    EXPECT_NE(msg.find(q->queue().name()), std::string::npos) << msg;
    EXPECT_NE(msg.find("[other]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
  // The refused writer's task is not kept.
  EXPECT_EQ(tg.tasks().size(), 1u);
}

// A second writer with another number of fields: refused the same way (before, it failed only when
// the run reached SafeEnqueueBlobs).
TEST(QueueWriters, WriterWithOtherFieldCountIsRefusedAtBuildTime) {
  LocalSession session;
  Dataset first = make_source(session, "qwca", {"val"}, 0, 5);
  Dataset wider = make_source(session, "qwcb", {"val", "extra"}, 0, 5);
  std::shared_ptr<Queue> q = Queue::make(4, {.name = "qwc_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    pipe(first.reader(), {.output = q});
    const std::string msg = invalid_input([&] { pipe(wider.reader(), {.output = q}); });
    EXPECT_NE(msg.find(q->queue().name()), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val, extra]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
}

// A queue made with a schema refuses even its first writer when the fields differ.
TEST(QueueWriters, WriterAgainstTheQueuesOwnSchemaIsChecked) {
  LocalSession session;
  Dataset other = make_source(session, "qwsc", {"other"}, 0, 5);
  std::shared_ptr<Queue> q =
      Queue::make(4, {.schema = schema::Struct({{"val", schema::Scalar()}}), .name = "qwsc_q"});
  TaskGroup tg;
  with_context(tg, [&] {
    const std::string msg = invalid_input([&] { pipe(other.reader(), {.output = q}); });
    EXPECT_NE(msg.find("[other]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[val]"), std::string::npos) << msg;
  });
  // A writer without a schema is checked by its field count.
  Net net("qwsc_write");
  auto writer = q->writer();
  const std::string msg = invalid_input([&] { writer->write(net, {BlobRef("a"), BlobRef("b")}); });
  EXPECT_NE(msg.find("2 fields"), std::string::npos) << msg;
}

}  // namespace
}  // namespace moka
