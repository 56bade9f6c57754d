// TaskGroups of collective operators that the LocalSession tests and the MpiSession tests (under mpirun)
// both run, so one program gives the same answer in both sessions; and the values they must give.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka::testing {

/// Every output of a run, by "<node>/<what>".
using CollectiveOutputs = std::map<std::string, Tensor>;

inline const std::vector<DType>& collective_dtypes() {
  static const std::vector<DType> all = {DType::Float, DType::Double, DType::Int8, DType::UInt8,
                                         DType::Int16, DType::Int32,  DType::Int64};
  return all;
}
inline const std::vector<std::string>& reductions() {
  static const std::vector<std::string> all = {"sum", "max", "min", "product"};
  return all;
}
inline std::string collective_node(int i) { return "n" + std::to_string(i); }

/// Node i's input: three values that differ by node (and fit every dtype, uint8 and int8 included).
inline std::vector<double> node_input(int i) { return {double(i + 1), double(2 * i + 3), i % 2 ? 1.0 : 4.0}; }

/// @brief Adds a test failure for every name whose tensor differs between got and want (dtype, shape or
/// values), or that only one of them has; `where` goes into each message.
inline void expect_same_tensors(const CollectiveOutputs& got, const CollectiveOutputs& want,
                                const std::string& where = {}) {
  EXPECT_EQ(got.size(), want.size()) << where;
  for (const auto& [name, value] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "no output " << name << where;
      continue;
    }
    EXPECT_EQ(it->second.describe(), value.describe()) << name << where;
    EXPECT_TRUE(it->second == value) << name << where << ": " << it->second.to_string() << " vs " << value.to_string();
  }
}

/// Node i's strings: its name and a run of one letter, 3 * tiles long (a hundred tiles make the packed
/// strings too long to travel with the agreement between processes).
inline std::vector<std::string> node_strings(int i, int tiles = 1) {
  return {collective_node(i), std::string(static_cast<std::size_t>(3 * tiles), static_cast<char>('a' + i))};
}

/// The values of v, `times` times over.
inline std::vector<double> tiled(const std::vector<double>& v, int times) {
  std::vector<double> out;
  for (int k = 0; k < times; ++k) out.insert(out.end(), v.begin(), v.end());
  return out;
}

/// @brief `nodes` nodes, one task each: a common world of all of them, every reduction of every dtype
/// (one of them in place), a Broadcast from the last node and an Allgather of every dtype and of
/// strings, a Barrier, and a world of the
/// even nodes only that runs an Allreduce too. The inputs are node_input(i) `tiles` times over (a
/// hundred tiles make every tensor too large to travel with the agreement between processes).
inline CollectiveOutputs run_every_collective(Session& session, int nodes, int tiles = 1) {
  namespace ops = moka::ops;
  std::map<std::string, TaskOutput> outs;
  TaskGroup tg([&] {
    for (int i = 0; i < nodes; ++i) {
      const std::string node = collective_node(i);
      Node(node, [&] {
        Task([&] {
          const BlobRef cw = ops::op("CreateCommonWorld", {}, {BlobRef("cw")})[0];
          for (DType d : collective_dtypes()) {
            const std::string t(dtype_name(d));
            const BlobRef x = ops::Const(tiled(node_input(i), tiles), {.blob_out = "x_" + t, .dtype = d});
            for (const std::string& r : reductions())
              outs[node + "/" + r + "_" + t] =
                  final_output(ops::op("Allreduce", {cw, x}, {BlobRef(r + "_" + t)}, {{"reduction", r}})[0]);
            outs[node + "/broadcast_" + t] =
                final_output(ops::op("Broadcast", {cw, x}, {BlobRef("b_" + t)}, {{"root", int64_t{nodes - 1}}})[0]);
            outs[node + "/allgather_" + t] = final_output(ops::op("Allgather", {cw, x}, {BlobRef("g_" + t)})[0]);
          }
          const BlobRef text = ops::Const(node_strings(i, tiles), {.blob_out = "x_string"});
          outs[node + "/broadcast_string"] =
              final_output(ops::op("Broadcast", {cw, text}, {BlobRef("b_string")}, {{"root", int64_t{nodes - 1}}})[0]);
          outs[node + "/allgather_string"] = final_output(ops::op("Allgather", {cw, text}, {BlobRef("g_string")})[0]);
          const BlobRef y = ops::Const(tiled(node_input(i), tiles), {.blob_out = "y", .dtype = DType::Float});
          outs[node + "/inplace"] = final_output(ops::op("Allreduce", {cw, y}, {y})[0]);
          ops::op("Barrier", {cw}, std::vector<BlobRef>{});
          if (i % 2 == 0) {
            std::vector<std::string> even;
            for (int k = 0; k < nodes; k += 2) even.push_back(collective_node(k));
            const BlobRef ew = ops::op("CreateCommonWorld", {}, {BlobRef("even")},
                                       {{"nodes", even}, {"name", std::string("even")}})[0];
            const BlobRef z = ops::Const(int64_t{i}, {.blob_out = "z"});
            outs[node + "/even_sum"] = final_output(ops::op("Allreduce", {ew, z}, {BlobRef("even_sum")})[0]);
          }
        });
      });
    }
  });
  session.run(tg);
  CollectiveOutputs result;
  for (auto& [name, out] : outs) result[name] = out.fetch();
  return result;
}

/// The tensor of dtype d (shape [3]) holding `values`, converted as the operators convert (wrapping).
inline Tensor expected_tensor(DType d, const std::vector<double>& values, std::vector<int64_t> shape = {3}) {
  Tensor t;
  t.resize(d, shape);
  for (std::size_t k = 0; k < values.size(); ++k) {
    const double v = values[k];
    const auto w = static_cast<int64_t>(v);
    switch (d) {
      case DType::Float:
        t.mutable_data<float>()[k] = static_cast<float>(v);
        break;
      case DType::Double:
        t.mutable_data<double>()[k] = v;
        break;
      case DType::Int8:
        t.mutable_data<int8_t>()[k] = static_cast<int8_t>(w);
        break;
      case DType::UInt8:
        t.mutable_data<uint8_t>()[k] = static_cast<uint8_t>(w);
        break;
      case DType::Int16:
        t.mutable_data<int16_t>()[k] = static_cast<int16_t>(w);
        break;
      case DType::Int32:
        t.mutable_data<int32_t>()[k] = static_cast<int32_t>(w);
        break;
      default:
        t.mutable_data<int64_t>()[k] = w;
        break;
    }
  }
  return t;
}

/// What run_every_collective must give for `nodes` nodes: name -> value.
inline CollectiveOutputs expected_every_collective(int nodes) {
  CollectiveOutputs want;
  for (int i = 0; i < nodes; ++i) {
    const std::string node = collective_node(i);
    for (DType d : collective_dtypes()) {
      const std::string t(dtype_name(d));
      for (const std::string& r : reductions()) {
        // Products wrap in the narrow integer types: compute in int64 (exact here), then convert.
        std::vector<double> acc = node_input(0);
        std::vector<int64_t> prod(acc.begin(), acc.end());
        for (int k = 1; k < nodes; ++k) {
          const std::vector<double> x = node_input(k);
          for (std::size_t e = 0; e < 3; ++e) {
            if (r == "sum") acc[e] += x[e];
            if (r == "max") acc[e] = std::max(acc[e], x[e]);
            if (r == "min") acc[e] = std::min(acc[e], x[e]);
            prod[e] *= static_cast<int64_t>(x[e]);
          }
        }
        if (r == "product") acc.assign(prod.begin(), prod.end());
        want[node + "/" + r + "_" + t] = expected_tensor(d, acc);
      }
      want[node + "/broadcast_" + t] = expected_tensor(d, node_input(nodes - 1));
      std::vector<double> gathered;
      for (int k = 0; k < nodes; ++k)
        for (double v : node_input(k)) gathered.push_back(v);
      want[node + "/allgather_" + t] = expected_tensor(d, gathered, {3 * int64_t{nodes}});
    }
    want[node + "/broadcast_string"] = Tensor::vector(node_strings(nodes - 1));
    std::vector<std::string> texts;
    for (int k = 0; k < nodes; ++k)
      for (const std::string& t : node_strings(k)) texts.push_back(t);
    want[node + "/allgather_string"] = Tensor::vector(texts);
    std::vector<double> sum(3, 0.0);
    for (int k = 0; k < nodes; ++k)
      for (std::size_t e = 0; e < 3; ++e) sum[e] += node_input(k)[e];
    want[node + "/inplace"] = expected_tensor(DType::Float, sum);
    if (i % 2 == 0) {
      int64_t even = 0;
      for (int k = 0; k < nodes; k += 2) even += k;
      want[node + "/even_sum"] = Tensor::scalar(even);
    }
  }
  return want;
}

}  // namespace moka::testing
