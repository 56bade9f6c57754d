// One job, two ways to run it: a Job built in C++, compiled to a JobDef (Job::compile), written as JSON and run by
// `moka job run`, ends with the same blobs and the same checkpoint files as JobRunner::train on the same Job.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "unit/cli/cli_fixture.h"
#include "unit/job/summing_job.h"

namespace moka_cli_test {
namespace {

// The regular files of a checkpoint directory by name, without the lock file (held only while a run holds it).
std::map<std::string, std::string> checkpoint_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().filename() != "moka.lock")
      files[entry.path().filename().string()] = read_file(entry.path());
  return files;
}

// A manifest without what only `moka job run` records: the digest of the JobDef it ran ("job"; JobRunner, which
// runs a Job, records none) and the manifest's own checksum, which covers that digest.
Json manifest_without_job_digest(const std::string& text) {
  Json j = Json::parse(text);
  j.erase("job");
  j.erase("checksum");
  return j;
}

TEST_F(CliJob, AJobCompiledToJsonRunsInMokaJobRunAsJobRunnerTrainsIt) {
  moka::Job job = moka::testing::summing_job(/*epochs=*/4, /*weights=*/1000);
  moka::LocalSession compiling;
  const moka::JobDef def = job.compile(compiling);
  ASSERT_EQ(def.stop_conditions.size(), 1u);
  EXPECT_EQ(def.stop_conditions[0].node, "n");
  EXPECT_EQ(def.nodes_to_checkpoint, std::vector<std::string>{"n"});
  const std::string job_file = plan_file(moka::to_json(def), "job.json");

  const fs::path runner_dir = dir_ / "runner";
  moka::LocalSession session;
  auto manager = std::make_shared<moka::MultiNodeCheckpointManager>(runner_dir.string(), "minidb");
  EXPECT_EQ(moka::JobRunner(job, manager).train(session), 4);

  const fs::path cli_dir = dir_ / "cli";
  const CliResult r = run({"job", "run", job_file, "--checkpoint-dir", cli_dir.string(), "--fetch", "total,epoch,w"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json fetched = Json::parse(r.out.substr(r.out.rfind('{', r.out.find("\"total\""))));

  // The same blobs: 1+2+3+4, epoch 4, and every weight doubled four times.
  moka::Workspace& ws = session.workspace("n");
  EXPECT_EQ(fetched["total"]["data"][0].get<int64_t>(), ws.blob("total").get<moka::Tensor>().item<int64_t>());
  EXPECT_EQ(fetched["total"]["data"][0].get<int64_t>(), 10);
  EXPECT_EQ(fetched["epoch"]["data"][0].get<int64_t>(), ws.blob("epoch").get<moka::Tensor>().item<int64_t>());
  const moka::Tensor& w = ws.blob("w").get<moka::Tensor>();
  ASSERT_EQ(fetched["w"]["data"].size(), static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_EQ(fetched["w"]["data"][static_cast<size_t>(i)].get<float>(), w.data<float>()[i]) << "w[" << i << "]";
  EXPECT_EQ(w.data<float>()[0], 8.0f);

  // The same checkpoint files: every node DB byte for byte, the same manifests.
  const auto from_runner = checkpoint_files(runner_dir);
  const auto from_cli = checkpoint_files(cli_dir);
  std::vector<std::string> runner_names, cli_names;
  for (const auto& [name, bytes] : from_runner) runner_names.push_back(name);
  for (const auto& [name, bytes] : from_cli) cli_names.push_back(name);
  EXPECT_EQ(runner_names, cli_names);
  for (int epoch = 0; epoch <= 4; ++epoch)
    EXPECT_NE(from_runner.count("n." + std::to_string(epoch)), 0u) << "no DB of epoch " << epoch;
  for (const auto& [name, bytes] : from_runner) {
    auto it = from_cli.find(name);
    if (it == from_cli.end()) continue;
    if (name.find("manifest") != std::string::npos)
      EXPECT_EQ(manifest_without_job_digest(bytes), manifest_without_job_digest(it->second)) << name;
    else
      EXPECT_TRUE(bytes == it->second) << name << " differs (" << bytes.size() << " and " << it->second.size()
                                       << " bytes)";
  }
}

}  // namespace
}  // namespace moka_cli_test
