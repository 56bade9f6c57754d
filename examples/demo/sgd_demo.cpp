// moka_sgd_demo: writes the flagship job's data (two TSV shards of generated rows whose true model is known) and the
// job itself as JSON, for `moka job run`; with --summary, reads that run's output and says how close the fit is to the
// truth (docs/demo.md). `make demo` runs all three.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "sgd_job.h"

namespace {

int usage(const char* why) {
  std::cerr << "moka_sgd_demo: " << why << "\n"
            << "usage: moka_sgd_demo --dir DIR [--rows N] [--batch B] [--batches-per-epoch M]\n"
            << "  writes DIR/shard_0.tsv, DIR/shard_1.tsv (N rows in all, default 1000000) and DIR/sgd_job.json\n"
            << "       moka_sgd_demo --summary RUN_OUTPUT\n"
            << "  prints the fitted model of a `moka job run` output beside the truth\n";
  return 2;
}

bool parse_count(std::string_view text, int64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out > 0;
}

// The fitted parameters beside the true ones, from the last line of `moka job run`'s output.
int summary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return usage(fmt::format("cannot read '{}'", path).c_str());
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{') last = line;
  if (last.empty()) return usage(fmt::format("'{}' holds no job output (a line starting with '{{')", path).c_str());
  const nlohmann::json o = nlohmann::json::parse(last);
  const auto truth = moka::demo::true_weights();
  double worst = 0;
  fmt::print("{:>10} {:>12} {:>12} {:>12}\n", "parameter", "fitted", "true", "difference");
  const auto row = [&](const std::string& name, double fitted, double want) {
    worst = std::max(worst, std::abs(fitted - want));
    fmt::print("{:>10} {:>12.6f} {:>12.6f} {:>12.2e}\n", name, fitted, want, fitted - want);
  };
  for (int k = 0; k < moka::demo::kFeatures; ++k)
    row(fmt::format("w{}", k), o.at(fmt::format("weight_{}", k)).at("data").at(0).get<double>(), truth[k]);
  row("b", o.at("bias").at("data").at(0).get<double>(), moka::demo::kTrueBias);
  fmt::print("largest difference {:.2e}; squared error {:.3e}\n", worst,
             o.at("squared_error").at("data").at(0).get<double>());
  return worst < 0.01 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--summary") {
    try {
      return summary(argv[2]);
    } catch (const std::exception& e) {
      std::cerr << "moka_sgd_demo: " << argv[2] << ": " << e.what() << "\n";
      return 1;
    }
  }
  moka::demo::SgdConfig config;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") return usage("the flagship demo's data and job"), 0;
    if (i + 1 >= argc) return usage(fmt::format("{} needs a value", a).c_str());
    const std::string_view v = argv[++i];
    int64_t* target = a == "--rows"                ? &config.rows
                      : a == "--batch"             ? &config.batch
                      : a == "--batches-per-epoch" ? &config.batches_per_epoch
                                                   : nullptr;
    if (a == "--dir") {
      config.dir = std::string(v);
    } else if (target == nullptr) {
      return usage(fmt::format("unknown flag {}", a).c_str());
    } else if (!parse_count(v, *target)) {
      return usage(fmt::format("{}: expected a positive integer, got \"{}\"", a, v).c_str());
    }
  }
  if (config.dir.empty()) return usage("--dir is required");
  try {
    std::filesystem::create_directories(config.dir);
    config.dir = std::filesystem::absolute(config.dir).lexically_normal().string();
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t bytes = moka::demo::generate_shards(config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string job = moka::demo::write_job(config);
    const auto truth = moka::demo::true_weights();
    fmt::print("wrote {} rows ({:.1f} MiB) into {} and {} in {:.2f} s\n", config.rows, bytes / 1048576.0,
               moka::demo::shard_path(config, 0), moka::demo::shard_path(config, 1), seconds);
    fmt::print("true model: y = {} . x + {} (+ noise in [-0.05, 0.05])\n", fmt::format("[{}]", fmt::join(truth, ", ")),
               moka::demo::kTrueBias);
    fmt::print("job: {} ({} batches of {} rows per shard, {} per epoch)\n", job, config.rows / 2 / config.batch,
               config.batch, config.batches_per_epoch);
  } catch (const std::exception& e) {
    std::cerr << "moka_sgd_demo: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
