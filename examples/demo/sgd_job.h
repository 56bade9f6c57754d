// The flagship job (docs/demo.md): a linear model fitted by synchronous data-parallel SGD. A reader node streams two
// TSV shards through pipes into two trainer nodes; each trainer's gradient is combined with the other's by Allreduce
// after every batch, so both hold the same weights. Data generation and the Job builder, shared by the demo program
// (examples/demo/sgd_demo.cpp) and its tests.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moka/moka.h"

namespace moka::demo {

inline constexpr int kFeatures = 8;
inline constexpr int kTrainers = 2;

/// The size of the demo: rows are split evenly over the two shards, read `batch` rows at a time,
/// `batches_per_epoch` batches per shard per epoch.
struct SgdConfig {
  std::string dir{};  ///< where the shards and the job go (absolute paths are written into the job)
  int64_t rows = 1'000'000;
  int64_t batch = 500;
  int64_t batches_per_epoch = 300;
  double learning_rate = 0.5;
  uint64_t seed = 20261207;
};

/// The parameters the data was generated from: y = sum_k w[k] * x[k] + b + noise, noise uniform in [-0.05, 0.05].
inline std::array<float, kFeatures> true_weights() {
  std::array<float, kFeatures> w{};
  for (int k = 0; k < kFeatures; ++k) w[k] = static_cast<float>((k % 2 == 0 ? 1.0 : -1.0) * (0.5 + 0.25 * k));
  return w;
}
inline constexpr float kTrueBias = 0.75f;

inline std::string shard_path(const SgdConfig& c, int shard) { return fmt::format("{}/shard_{}.tsv", c.dir, shard); }
inline std::string trainer_node(int i) { return fmt::format("trainer_{}", i); }

/// splitmix64: the same numbers on every machine.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// Writes the two shards (rows / 2 rows each: x0..x7, y, tab-separated); returns the bytes written.
inline int64_t generate_shards(const SgdConfig& c) {
  if (c.rows < 2 || c.rows % (2 * c.batch) != 0)
    throw std::invalid_argument(
        fmt::format("rows ({}) must be a positive multiple of 2 * batch ({})", c.rows, 2 * c.batch));
  const auto w = true_weights();
  SplitMix rng{c.seed};
  int64_t bytes = 0;
  for (int shard = 0; shard < kTrainers; ++shard) {
    const std::string path = shard_path(c, shard);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) throw std::runtime_error(fmt::format("cannot write '{}'", path));
    fmt::memory_buffer buf;
    for (int64_t r = 0; r < c.rows / kTrainers; ++r) {
      double y = kTrueBias + rng.uniform(-0.05, 0.05);
      for (int k = 0; k < kFeatures; ++k) {
        const float x = static_cast<float>(rng.uniform(-1.0, 1.0));
        y += static_cast<double>(w[k]) * x;
        fmt::format_to(std::back_inserter(buf), "{}\t", x);
      }
      fmt::format_to(std::back_inserter(buf), "{}\n", static_cast<float>(y));
      if (buf.size() > (1 << 20)) {
        bytes += static_cast<int64_t>(std::fwrite(buf.data(), 1, buf.size(), f));
        buf.clear();
      }
    }
    bytes += static_cast<int64_t>(std::fwrite(buf.data(), 1, buf.size(), f));
    if (std::fclose(f) != 0) throw std::runtime_error(fmt::format("cannot write '{}'", path));
  }
  return bytes;
}

/// A float32 constant of the current net (values rounded to float32 first, which the fill then holds exactly).
inline BlobRef float_const(const std::vector<double>& values, const std::string& blob_out = {}) {
  std::vector<double> rounded;
  for (double v : values) rounded.push_back(static_cast<double>(static_cast<float>(v)));
  ConstOptions options;
  options.dtype = DType::Float;
  if (!blob_out.empty()) options.blob_out = BlobRef(blob_out);
  return ops::Const(rounded, options);
}

inline schema::Struct row_schema() {
  std::vector<std::pair<std::string, schema::Field>> fields;
  for (int k = 0; k < kFeatures; ++k) fields.emplace_back(fmt::format("x{}", k), schema::Scalar(DType::Float));
  fields.emplace_back("y", schema::Scalar(DType::Float));
  return schema::Struct(fields);
}

/// The job. Epoch: each shard's reader pipe feeds `batches_per_epoch` batches into its trainer's queue; the
/// trainer's pipe takes one SGD step per batch. Stops when the shards are read. Exit: trainer_0 outputs the weights,
/// the bias, the truth and the squared error.
inline Job sgd_job(const SgdConfig& c) {
  return Job([&](Job& j) {
    std::array<std::shared_ptr<Reader>, kTrainers> shard_readers;
    std::array<std::shared_ptr<Queue>, kTrainers> queues;
    for (int k = 0; k < kTrainers; ++k) queues[k] = Queue::make(8, {.name = fmt::format("batches_{}", k)});
    Node("reader", [&] {
      j.init_group([&] {
        Net init("reader_init");
        for (int k = 0; k < kTrainers; ++k)
          shard_readers[k] = std::make_shared<TextFileReader>(init, shard_path(c, k), row_schema(),
                                                              TextFileReaderOptions{.batch_size = c.batch});
        Task({}, init);
      });
      for (int k = 0; k < kTrainers; ++k) {
        auto epoch_reader = std::make_shared<ReaderWithLimit>(shard_readers[k], c.batches_per_epoch);
        pipe(epoch_reader, {.output = queues[k], .name = fmt::format("read_shard_{}", k)});
        j.add_stop_signal(epoch_reader->data_finished());
      }
    });
    const float step = static_cast<float>(-c.learning_rate / static_cast<double>(kTrainers * c.batch));
    for (int t = 0; t < kTrainers; ++t)
      Node(trainer_node(t), [&] {
        j.init_group([&] {
          Task([&] {
            for (int k = 0; k < kFeatures; ++k) float_const({0.0}, fmt::format("w{}", k));
            float_const({0.0}, "b");
            float_const({1.0}, "one");
            float_const({step}, "step");
          });
        });
        pipe(queues[t], {.processor = Processor(
                             [](const schema::Field& rec) {
                               std::vector<std::string> trainers;
                               for (int i = 0; i < kTrainers; ++i) trainers.push_back(trainer_node(i));
                               ops::local_init([&] {
                                 ops::op("CreateCommonWorld", {}, {BlobRef("trainers")}, {{"nodes", trainers}});
                               });
                               std::vector<BlobRef> terms;
                               for (int k = 0; k < kFeatures; ++k) {
                                 terms.push_back(rec[fmt::format("x{}", k)]());
                                 terms.push_back(BlobRef(fmt::format("w{}", k)));
                               }
                               const BlobRef linear = ops::op("WeightedSum", terms)[0];
                               const BlobRef pred = ops::Add({linear, BlobRef("b")});
                               const BlobRef err = ops::Sub({pred, rec["y"]()});
                               std::vector<BlobRef> grads{BlobRef("trainers")};
                               for (int k = 0; k < kFeatures; ++k)
                                 grads.push_back(ops::op("ReduceSum", {ops::Mul({err, rec[fmt::format("x{}", k)]()})},
                                                         {}, {{"keepdims", int64_t{1}}})[0]);
                               grads.push_back(ops::op("ReduceSum", {err}, {}, {{"keepdims", int64_t{1}}})[0]);
                               // Both trainers get the same sums, so both take the same step.
                               const BlobRefs summed = ops::op("Allreduce", grads, static_cast<int>(grads.size() - 1));
                               for (int k = 0; k < kFeatures; ++k) {
                                 const BlobRef w(fmt::format("w{}", k));
                                 ops::op("WeightedSum", {w, BlobRef("one"), summed[k], BlobRef("step")}, {w});
                               }
                               ops::op("WeightedSum",
                                       {BlobRef("b"), BlobRef("one"), summed[kFeatures], BlobRef("step")},
                                       {BlobRef("b")});
                             },
                             "sgd_step")});
      });
    j.exit_group([&] {
      Node(trainer_node(0), [&] {
        Task([&] {
          const auto truth = true_weights();
          const std::vector<double> w_true(truth.begin(), truth.end());
          const BlobRef sq_error = float_const({0.0}, "squared_error");
          for (int k = 0; k < kFeatures; ++k) {
            const BlobRef w(fmt::format("w{}", k));
            final_output(ops::Copy(w, {BlobRef(fmt::format("weight_{}", k))}));
            const BlobRef d = ops::Sub({w, float_const({truth[k]})});
            ops::Add({sq_error, ops::Mul({d, d})}, {sq_error});
          }
          final_output(ops::Copy(BlobRef("b"), {BlobRef("bias")}));
          const BlobRef db = ops::Sub({BlobRef("b"), float_const({kTrueBias})});
          ops::Add({sq_error, ops::Mul({db, db})}, {sq_error});
          final_output(sq_error);
          final_output(float_const(w_true, "true_weights"));
          final_output(float_const({kTrueBias}, "true_bias"));
        });
      });
    });
  });
}

/// Compiles the job and writes it to `<dir>/sgd_job.json`; returns the path.
inline std::string write_job(const SgdConfig& c) {
  LocalSession session;
  Job job = sgd_job(c);
  const JobDef def = job.compile(session);
  const std::string path = c.dir + "/sgd_job.json";
  std::ofstream out(path);
  out << to_json(def) << "\n";
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path));
  return path;
}

}  // namespace moka::demo
