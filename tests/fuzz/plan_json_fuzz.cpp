// libFuzzer target for the plan JSON codec: loading never crashes, and what loads round-trips losslessly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "moka/core/error.h"
#include "moka/defs/json.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "plan_json_fuzz: %s\n--- first:\n%s\n--- second:\n%s\n", what, a.c_str(), b.c_str());
  std::abort();
}

/// Equal defs, or (NaN != NaN) defs whose serialisations agree.
void check_same(const moka::PlanDef& a, const moka::PlanDef& b, const std::string& text_a) {
  if (a == b) return;
  std::string text_b = moka::to_json(b);
  if (text_a != text_b) die("round trip changed the plan", text_a, text_b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  moka::PlanDef plan;
  try {
    plan = moka::plan_from_json(text);
  } catch (const moka::Error&) {
    return 0;  // rejected with a message: fine
  }
  std::string pretty, compact;
  try {
    pretty = moka::to_json(plan);
    compact = moka::to_json(plan, -1);
  } catch (const moka::Error& e) {
    die("a loaded plan could not be serialised", std::string(text), e.what());
  }
  try {
    check_same(plan, moka::plan_from_json(pretty), pretty);
    check_same(plan, moka::plan_from_json(compact), pretty);
  } catch (const moka::Error& e) {
    die("a serialised plan did not load back", pretty, e.what());
  }
  return 0;
}
