// `moka checkpoint ls|inspect|verify|blob` on a job's real checkpoint directory: good input, then the damage a user
// meets (a flipped byte, a truncated file, a save that never committed, a missing directory, an unknown epoch, node
// or blob; a damaged record in an LMDB, a blob two nodes hold) — each named, with exit 2 where something is bad, and
// the directory never changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moka/moka.h"
#include "unit/cli/cli_fixture.h"

namespace {

using namespace moka_cli_test;

class CliCheckpointInspect : public CliJob {
 protected:
  void SetUp() override {
    CliJob::SetUp();
    const CliResult r = run({"job", "run", small_job(), "--checkpoint-dir", ckpt()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // Every name in the directory with its size: what a command must leave as it was.
  std::vector<std::pair<std::string, uintmax_t>> listing() const {
    std::vector<std::pair<std::string, uintmax_t>> out;
    for (const auto& e : fs::recursive_directory_iterator(ckpt()))
      out.emplace_back(e.path().string(), e.is_regular_file() ? e.file_size() : 0);
    std::sort(out.begin(), out.end());
    return out;
  }
  void flip_byte(const fs::path& p, uintmax_t at) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x5a));
  }
};

TEST_F(CliCheckpointInspect, LsListsEveryCommittedEpochAndWhatRetentionKeeps) {
  const auto before = listing();
  const CliResult r = run({"checkpoint", "ls", ckpt(), "--json", "--keep-last", "2", "--keep-every", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = parse_stdout(r);
  ASSERT_EQ(j.size(), 5u) << r.out;  // epochs 0..4
  for (int e = 0; e <= 4; ++e) {
    EXPECT_EQ(j[e]["epoch"], e);
    EXPECT_EQ(j[e]["committed"], true);
    EXPECT_EQ(j[e]["status"], "ok");
    EXPECT_EQ(j[e]["db_type"], "minidb");
    EXPECT_EQ(j[e]["nodes"], Json::parse(R"(["trainer","reader"])"));
    EXPECT_GT(j[e]["bytes"].get<uint64_t>(), 8000u);  // two tensors of 1000 floats
    EXPECT_EQ(j[e]["kept"], e != 1) << "keep the newest 2 and every even epoch";
  }
  EXPECT_EQ(j[4]["stop"], true);
  const CliResult text = run({"checkpoint", "ls", ckpt()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("epoch 4     committed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("verifies"), std::string::npos) << text.out;
  EXPECT_EQ(listing(), before) << "ls changed the directory";
}

TEST_F(CliCheckpointInspect, InspectListsBlobsWithDtypeShapeBytesAndChecksum) {
  const CliResult r = run({"checkpoint", "inspect", ckpt(), "--epoch", "2", "--node", "trainer", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = parse_stdout(r);
  EXPECT_EQ(j["epoch"], 2);
  ASSERT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["db"], "trainer.2");
  std::map<std::string, Json> blobs;
  for (const Json& b : j["nodes"][0]["blobs"]) blobs[b["name"]] = b;
  ASSERT_TRUE(blobs.count("weights")) << r.out;
  EXPECT_EQ(blobs["weights"]["dtype"], "float32");
  EXPECT_EQ(blobs["weights"]["shape"], Json::parse("[1000]"));
  EXPECT_GT(blobs["weights"]["bytes"].get<uint64_t>(), 4000u);
  EXPECT_EQ(blobs["weights"]["xxh3"].get<std::string>().size(), 16u);
  EXPECT_EQ(blobs["total"]["shape"], Json::array());
  EXPECT_EQ(blobs["steps"]["type"], "Counter");
  // The newest epoch by default, every node.
  const CliResult all = run({"checkpoint", "inspect", ckpt()});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("epoch 4 (minidb, stop)"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("node reader: reader.4"), std::string::npos) << all.out;
}

TEST_F(CliCheckpointInspect, BlobPrintsOneBlobAsJsonAndNamesWhatIsMissing) {
  const CliResult r = run({"checkpoint", "blob", ckpt(), "total"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"total":{"dtype":"int64","shape":[],"data":[12720]}})"
                   "\n");
  const CliResult early = run({"checkpoint", "blob", ckpt(), "total", "--epoch", "0", "--node", "trainer"});
  ASSERT_EQ(early.code, 0) << early.err;
  EXPECT_EQ(early.out, R"({"total":{"dtype":"int64","shape":[],"data":[0]}})"
                       "\n");
  expect_error(run({"checkpoint", "blob", ckpt(), "nope"}), 2, {"epoch 4 has no blob \"nope\""});
  expect_error(run({"checkpoint", "blob", ckpt(), "total", "--node", "ghost"}), 2,
               {"no node \"ghost\"", "trainer, reader"});
  expect_error(run({"checkpoint", "blob", ckpt(), "total", "--epoch", "9"}), 2, {"epoch 9 is not committed"});
}

TEST_F(CliCheckpointInspect, VerifyNamesEveryBadFileAndSaysOkOtherwise) {
  const CliResult ok = run({"checkpoint", "verify", ckpt()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("ok (5 committed epochs"), std::string::npos) << ok.out;
  flip_byte(fs::path(ckpt()) / "trainer.1", fs::file_size(fs::path(ckpt()) / "trainer.1") / 2);
  fs::resize_file(fs::path(ckpt()) / "reader.3", fs::file_size(fs::path(ckpt()) / "reader.3") / 2);
  const auto before = listing();
  const CliResult bad = run({"checkpoint", "verify", ckpt()});
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("epoch 1: " + ckpt() + "/trainer.1"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("epoch 3: " + ckpt() + "/reader.3"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("2 problems in 5 committed epochs"), std::string::npos) << bad.out;
  EXPECT_EQ(listing(), before) << "verify changed the directory";
  // ls shows why each cannot be resumed from; inspect of the bad epoch fails naming the file.
  const Json j = parse_stdout(run({"checkpoint", "ls", ckpt(), "--json"}));
  EXPECT_EQ(j[1]["usable"], false);
  EXPECT_NE(j[1]["status"].get<std::string>().find("trainer.1"), std::string::npos) << j.dump();
  EXPECT_EQ(j[2]["usable"], true);
  const Json kept = parse_stdout(run({"checkpoint", "ls", ckpt(), "--json", "--keep-last", "1"}));
  EXPECT_EQ(kept[1]["kept"], false) << "retention deletes a bad epoch too: " << kept.dump();
  EXPECT_EQ(kept[4]["kept"], true);
  expect_error(run({"checkpoint", "inspect", ckpt(), "--epoch", "3", "--node", "reader"}), 2, {"reader.3"});
}

TEST_F(CliCheckpointInspect, AnUncommittedSaveIsListedWithWhyAndVerifyIgnoresIt) {
  fs::copy_file(fs::path(ckpt()) / "trainer.4", fs::path(ckpt()) / "trainer.5");
  const Json j = parse_stdout(run({"checkpoint", "ls", ckpt(), "--json", "--keep-last", "1"}));
  ASSERT_EQ(j.size(), 6u) << j.dump();
  EXPECT_EQ(j[5]["epoch"], 5);
  EXPECT_EQ(j[5]["committed"], false);
  EXPECT_EQ(j[5]["nodes"], Json::parse(R"(["trainer"])"));
  EXPECT_NE(j[5]["status"].get<std::string>().find("no manifest"), std::string::npos);
  EXPECT_FALSE(j[5].contains("kept")) << "retention deletes only committed epochs";
  EXPECT_EQ(run({"checkpoint", "verify", ckpt()}).code, 0);
}

TEST_F(CliCheckpointInspect, BadArgumentsAreNamedWithExit2) {
  expect_error(run({"checkpoint", "ls", (dir_ / "missing").string()}), 2, {"missing", "does not exist"});
  expect_error(run({"checkpoint", "verify", small_job()}), 2, {"is not a directory"});
  expect_error(run({"checkpoint", "inspect", ckpt(), "--epoch", "-1"}), 2, {"--epoch"});
  expect_error(run({"checkpoint", "inspect", ckpt(), "--epoch", "7"}), 2, {"epoch 7 is not committed"});
  expect_error(run({"checkpoint", "ls", ckpt(), "--keep-every", "2"}), 2, {"--keep-last"});
  expect_error(run({"checkpoint", "frob", ckpt()}), 2, {"unknown checkpoint subcommand \"frob\""});
  expect_error(run({"checkpoint"}), 2, {"subcommand"});
  const fs::path empty = dir_ / "empty";
  fs::create_directory(empty);
  const CliResult none = run({"checkpoint", "ls", empty.string()});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("no checkpoints"), std::string::npos) << none.out;
  expect_error(run({"checkpoint", "inspect", empty.string()}), 2, {"no committed checkpoint"});
}

}  // namespace

namespace {

using namespace moka_cli_test;

// A committed LMDB checkpoint of two nodes that both hold a blob "x" (int64 [1, 2, 3] and [4, 5, 6]).
class CliCheckpointTwoNodes : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    ckpt_ = (dir_ / "ck").string();
    fs::create_directory(ckpt_);
    std::vector<std::pair<std::string, std::string>> dbs;
    for (const auto& [node, base] : {std::pair<std::string, int64_t>{"a", 1}, {"b", 4}}) {
      moka::Workspace ws;
      ws.create_blob("x")->reset(
          std::make_unique<moka::Tensor>(moka::Tensor::vector<int64_t>({base, base + 1, base + 2})));
      moka::SaveSpec spec;
      spec.blob_names = {"x"};
      spec.db = ckpt_ + "/" + node + ".1";
      spec.db_type = "lmdb";
      spec.absolute_path = true;
      moka::save_blobs(ws, spec);
      dbs.emplace_back(node, spec.db);
    }
    moka::commit_checkpoint(ckpt_, 1, "lmdb", dbs);
  }
  // Changes the value 3 of node a's "x" to 7 inside its LMDB file (LMDB has no checksums: the record's catches it).
  void damage_a() {
    const fs::path data = fs::path(ckpt_) / "a.1" / "data.mdb";
    std::string bytes = read_file(data);
    const std::string want("\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0\x03\0\0\0\0\0\0\0", 24);
    const std::size_t at = bytes.find(want);
    ASSERT_NE(at, std::string::npos);
    bytes[at + 16] = '\x07';
    write_file(data, bytes);
  }
  std::string ckpt_;
};

TEST_F(CliCheckpointTwoNodes, ABlobInSeveralNodesNeedsNode) {
  expect_error(run({"checkpoint", "blob", ckpt_, "x"}), 2,
               {"blob \"x\" is in several nodes of epoch 1 (a, b)", "--node"});
  const CliResult b = run({"checkpoint", "blob", ckpt_, "x", "--node", "b"});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out, R"({"x":{"dtype":"int64","shape":[3],"data":[4,5,6]}})"
                   "\n");
  const CliResult ls = run({"checkpoint", "ls", ckpt_, "--no-verify"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_NE(ls.out.find("lmdb  (not verified)"), std::string::npos) << ls.out;
}

TEST_F(CliCheckpointTwoNodes, ADamagedRecordIsNamedByInspectAndVerify) {
  damage_a();
  const CliResult inspect = run({"checkpoint", "inspect", ckpt_});
  EXPECT_EQ(inspect.code, 2) << inspect.out << inspect.err;
  EXPECT_NE(inspect.out.find("  x  BAD: record \"x"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("node b: b.1 (1 blobs)\n  x  int64 [3]"), std::string::npos) << inspect.out;
  const CliResult verify = run({"checkpoint", "verify", ckpt_});
  EXPECT_EQ(verify.code, 2) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("epoch 1: " + ckpt_ + "/a.1: checkpoint epoch 1"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("epoch 1: " + ckpt_ + "/a.1 blob \"x\": record"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.out.find("/b.1"), std::string::npos) << verify.out;
  // --no-verify reads manifests only: the damage does not show there.
  EXPECT_NE(run({"checkpoint", "ls", ckpt_, "--no-verify"}).out.find("(not verified)"), std::string::npos);
}

}  // namespace
