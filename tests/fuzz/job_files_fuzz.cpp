// libFuzzer target for the two JSON files a job run reads back: the JobDef (`moka job run JOB.json`)
// and a checkpoint manifest (`resume latest`). Loading never crashes, any error is a moka error, and
// what loads round-trips losslessly. The first input byte picks the format; the rest is the text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "moka/core/error.h"
#include "moka/defs/json.h"
#include "moka/job/checkpoint_manifest.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "job_files_fuzz: %s\n--- first:\n%s\n--- second:\n%s\n", what, a.c_str(), b.c_str());
  std::abort();
}

void check_job(std::string_view text) {
  moka::JobDef job;
  try {
    job = moka::job_from_json(text);
  } catch (const moka::Error&) {
    return;  // rejected with a message: fine
  }
  std::string again;
  try {
    again = moka::to_json(job);
  } catch (const moka::Error& e) {
    die("a loaded job could not be serialised", std::string(text), e.what());
  }
  try {
    const moka::JobDef back = moka::job_from_json(again);
    // NaN arguments compare unequal to themselves: then the serialisations must agree.
    if (!(back == job) && moka::to_json(back) != again) die("round trip changed the job", again, moka::to_json(back));
  } catch (const moka::Error& e) {
    die("a serialised job did not load back", again, e.what());
  }
}

void check_manifest(std::string_view text) {
  moka::CheckpointManifest m;
  try {
    m = moka::manifest_from_json(text, "fuzz-manifest.json");
  } catch (const moka::CorruptData& e) {
    if (std::string_view(e.what()).find("fuzz-manifest.json") == std::string_view::npos)
      die("a manifest error does not name the file", std::string(text), e.what());
    return;
  }
  const std::string again = moka::to_json(m);
  try {
    if (!(moka::manifest_from_json(again, "again") == m))
      die("round trip changed the manifest", std::string(text), again);
  } catch (const moka::Error& e) {
    die("a serialised manifest did not load back", again, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0)
    check_job(text);
  else
    check_manifest(text);
  return 0;
}
