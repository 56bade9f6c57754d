// The C++ side of bench/python_plan_build_bench.py: builds a plan of --nets nets (each a Const and --ops - 1
// Adds, one step per net) with moka's builders, then its definition (PlanDef) and plan JSON; prints the median of
// --repeats builds in the form the Python script reads ("cpp_build_s=<s> cpp_json_s=<s>").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int arg(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int nets = arg(argc, argv, "--nets", 1000), ops = arg(argc, argv, "--ops", 10),
            repeats = arg(argc, argv, "--repeats", 5);
  if (nets < 1 || ops < 1 || repeats < 1) {
    std::fprintf(stderr, "plan_build_bench: --nets, --ops and --repeats take positive integers\n");
    return 2;
  }
  using clock = std::chrono::steady_clock;
  std::vector<double> build, json;
  std::size_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock::now();
    moka::Plan plan("plan");
    for (int i = 0; i < nets; ++i) {
      moka::Net net("net_" + std::to_string(i));
      moka::BlobRef x = net.Const(1);
      for (int k = 1; k < ops; ++k) x = net.op("Add", {x, x}).front();
      plan.add_step(moka::ExecutionStep("step_" + std::to_string(i), {net}));
    }
    const moka::PlanDef def = plan.proto();
    const auto t1 = clock::now();
    bytes = moka::to_json(def, -1).size();
    const auto t2 = clock::now();
    build.push_back(std::chrono::duration<double>(t1 - t0).count());
    json.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  std::printf("cpp_build_s=%.6f cpp_json_s=%.6f json_bytes=%zu\n", median(build), median(json), bytes);
}
