// Shared by the run_job tests: a small two-node job, its temporary directories, and what its node
// workspaces hold.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "moka/core/tensor.h"
#include "moka/defs/json.h"
#include "moka/job/run_job.h"
#include "moka/storage/blob_serializer.h"
#include "support/temp_dir.h"

namespace moka::run_job_test {

// Every temporary directory of these tests is named moka-runjob-XXXXXX.
struct TempDir : moka::testing::TempDir {
  TempDir() : moka::testing::TempDir("moka-runjob") {}
};

// A small job: trainer sums step numbers into `total` and grows `weights`; reader counts records;
// CountDown stops it after `epochs` epochs.
inline JobDef small_job(int epochs = 5, int64_t weights = 1000) {
  const std::string fill_i64 = R"({"name": "dtype", "s": "INT64"}, {"name": "shape", "ints": []})";
  return job_from_json(fmt::format(R"({{
    "name": "small",
    "init_group": {{"nodes": [
      {{"node": "trainer", "plan": {{"network": [{{"name": "init", "op": [
        {{"type": "ConstantFill", "output": ["total"], "arg": [{0}]}},
        {{"type": "ConstantFill", "output": ["weights"], "arg": [{{"name": "shape", "ints": [{2}]}}, {{"name": "value", "f": 0.25}}]}},
        {{"type": "CreateCounter", "output": ["steps"]}},
        {{"type": "CreateCounter", "output": ["left"], "arg": [{{"name": "init_count", "i": {1}}}]}}
      ]}}], "execution_step": [{{"name": "init", "network": ["init"]}}]}}}},
      {{"node": "reader", "plan": {{"network": [{{"name": "init", "op": [
        {{"type": "CreateCounter", "output": ["records"]}}
      ]}}], "execution_step": [{{"name": "init", "network": ["init"]}}]}}}}
    ]}},
    "epoch_group": {{"nodes": [
      {{"node": "trainer", "outputs": ["done"], "plan": {{"network": [
        {{"name": "step", "op": [
          {{"type": "CountUp", "input": ["steps"], "output": ["s"]}},
          {{"type": "Add", "input": ["total", "s"], "output": ["total"]}},
          {{"type": "Add", "input": ["weights", "weights"], "output": ["weights"]}}
        ]}},
        {{"name": "end", "op": [{{"type": "CountDown", "input": ["left"], "output": ["done"]}}]}}
      ], "execution_step": [
        {{"name": "step", "network": ["step"], "num_iter": 3}},
        {{"name": "end", "network": ["end"]}}
      ]}}}},
      {{"node": "reader", "plan": {{"network": [{{"name": "read", "op": [
        {{"type": "CountUp", "input": ["records"], "output": ["r"]}}
      ]}}], "execution_step": [{{"name": "read", "network": ["read"], "num_iter": 2}}]}}}}
    ]}},
    "exit_group": {{"nodes": [
      {{"node": "trainer", "outputs": ["count"], "plan": {{"network": [{{"name": "report", "op": [
        {{"type": "RetrieveCount", "input": ["steps"], "output": ["count"]}}
      ]}}], "execution_step": [{{"name": "report", "network": ["report"]}}]}}}}
    ]}},
    "stop_conditions": [{{"node": "trainer", "blob": "done"}}]
  }})",
                                   fill_i64, epochs - 1, weights));
}

inline int64_t i64(NodeWorkspaces& nodes, const std::string& node, const std::string& blob) {
  return nodes.node(node).blob(blob).get<Tensor>().item<int64_t>();
}

// Every checkpointed blob (those listed in `<node>/blob_names`) of both nodes, serialized, plus the exit
// group's output: equal maps mean equal state. Blobs that only epoch_group creates (its outputs and
// temporaries) are not state and are not compared.
inline std::map<std::string, std::string> all_blobs(NodeWorkspaces& nodes) {
  std::map<std::string, std::string> out;
  for (const auto& node : {"trainer", "reader"}) {
    Workspace& ws = nodes.node(node);
    const Tensor& names = ws.blob(fmt::format("{}/blob_names", node)).get<Tensor>();
    for (const auto& name : names.values<std::string>()) {
      out[fmt::format("{}/{}", node, name)] = serialize_blob_to_string(name, ws.blob(name));
    }
  }
  out["trainer/count"] = serialize_blob_to_string("count", nodes.node("trainer").blob("count"));
  return out;
}

// The digests of an epoch's node files (paths differ between directories).
inline std::vector<DbDigest> digests(const std::string& dir, int64_t epoch) {
  std::vector<DbDigest> out;
  for (const auto& f : verify_checkpoint(dir, epoch).files) out.push_back(f.digest);
  return out;
}

}  // namespace moka::run_job_test
