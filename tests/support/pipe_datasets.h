// Test support: a source dataset (column "val" = 0..n-1) fed into a session's node workspace with an
// empty destination of the same schema, and the destination's values — what pipe tests read and write.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

struct Datasets {
  Dataset src, dst;
};

inline Datasets make_datasets(LocalSession& session, int64_t n, const std::string& name) {
  Net init(name + "_init");
  NameScope scope(name);
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  schema::Struct values({{"val", schema::Scalar(Tensor::vector<int64_t>(v))}});
  schema::Field src_blobs = name_scope("src", [&] { return schema::NewRecord(init, values); });
  schema::FeedRecord(src_blobs, values, session.workspace());
  Dataset dst(values.clone_schema(), name + "_dst");
  name_scope("dst", [&] { dst.init_empty(init); });
  session.run(init);
  return {Dataset(src_blobs, name + "_src"), dst};
}

/// The "val" column of ds, in its order.
inline std::vector<int64_t> vals(LocalSession& session, const Dataset& ds) {
  const schema::Field record = schema::FetchRecord(ds.content(), session.workspace());
  const Tensor& t = *record["val"].value();  // the node lives as long as record
  return {t.values<int64_t>().begin(), t.values<int64_t>().end()};
}

/// The "val" column of ds, sorted.
inline std::vector<int64_t> sorted_vals(LocalSession& session, const Dataset& ds) {
  std::vector<int64_t> out = vals(session, ds);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace moka::testing
