// Readers that wrap other readers (Caffe2's dataio.py; docs/pipelines.md §2.1): CounterReader, ReaderWithLimit,
// CountUntil, ReaderWithTimeLimit, ReaderWithDelay, CompositeReader and CompositeReaderBuilder.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moka/data/reader.h"

namespace moka {

/// @brief Produces 0, 1, 2, … forever (Caffe2's CounterReader): schema `Struct(iter: int64)`.
///
/// setup_ex creates the counter (once); each read is `CountUp`. It never stops by itself: wrap
/// it in a ReaderWithLimit (CountUntil).
/// Thread-safety: build-time object.
class CounterReader final : public Reader {
 public:
  CounterReader();
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override;
  std::string type_name() const override { return "CounterReader"; }

 private:
  std::optional<BlobRef> counter_, should_stop_;
};

/// @brief Base of readers that stop an underlying reader early (Caffe2's ReaderWithLimitBase).
///
/// Each read is `[limited_reader_condition] + reader's nets + [limited_reader_post]`: the
/// condition net computes the stop blob *before* reading (the executor checks it after every
/// net, so a limit stops before the read), the post net copies the reader's own stop blob into
/// it (exhaustion stops after the read) and records the exhaustion in a shared counter, which
/// the task's exit turns into data_finished() (Caffe2 ORed into data_finished from every thread
/// at once — a data race; data_finished is therefore valid after the task, as Caffe2 used it).
/// Thread-safety: build-time object.
class ReaderWithLimitBase : public Reader {
 public:
  explicit ReaderWithLimitBase(std::shared_ptr<Reader> reader);
  /// Sets data_finished() false, then the reader's and the limiter's setup — all in the task's
  /// init net, so they are reset every time the task runs (every epoch); computes data_finished()
  /// in the exit net (InvalidInput without one).
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override;
  schema::Field schema() const override;
  /// @brief A bool blob, true iff the underlying reader was exhausted (false when the limit stopped it).
  BlobRef data_finished() const { return data_finished_; }
  const std::shared_ptr<Reader>& reader() const { return reader_; }

 protected:
  virtual void setup_limiter(Net& init_net, std::optional<Net>& exit_net) = 0;
  /// Emits the stop condition into net and returns its blob.
  virtual BlobRef check_limiter_condition(Net& net) = 0;
  /// The net used for names only (Caffe2's `self.net`, "reader_with_limit").
  Net name_net_;

 private:
  std::shared_ptr<Reader> reader_;
  BlobRef data_finished_;
  BlobRef finished_counter_;
};

/// @brief Stops after num_iter reads, across all threads (Caffe2's ReaderWithLimit).
///
/// num_iter defaults to 1 (as in Caffe2); nullopt means no limit; 0 reads nothing (and
/// data_finished() stays false). A negative num_iter is refused at build time (InvalidInput).
/// @code
///   auto limited = std::make_shared<moka::ReaderWithLimit>(ds.reader(), 3);
///   moka::pipe(limited, {.processor = inc_total});
///   // limited->data_finished(): true once the dataset ran out
/// @endcode
class ReaderWithLimit final : public ReaderWithLimitBase {
 public:
  explicit ReaderWithLimit(std::shared_ptr<Reader> reader, std::optional<int64_t> num_iter = 1);
  std::optional<int64_t> num_iter() const { return num_iter_; }
  std::string type_name() const override { return "ReaderWithLimit"; }

 protected:
  void setup_limiter(Net& init_net, std::optional<Net>& exit_net) override;
  BlobRef check_limiter_condition(Net& net) override;

 private:
  std::optional<int64_t> num_iter_;
  std::optional<BlobRef> counter_;
};

/// Caffe2's `CountUntil(n)`: `ReaderWithLimit(CounterReader(), n)`.
std::shared_ptr<ReaderWithLimit> CountUntil(std::optional<int64_t> num_iter);

/// @brief Stops reading once duration has passed since the task started (Caffe2's
/// ReaderWithTimeLimit). The check happens before each read. A zero duration — the default, as in
/// Caffe2 — means no limit. InvalidInput (naming "duration" and its value) for a negative, infinite or
/// NaN duration, or one whose nanoseconds do not fit int64 (about 292 years).
///
/// Differs from Caffe2 (decision 4): the limiter's output blob gets an automatic name
/// (`<net>/GE`) instead of the literal "None"; nothing depended on that name.
class ReaderWithTimeLimit final : public ReaderWithLimitBase {
 public:
  explicit ReaderWithTimeLimit(std::shared_ptr<Reader> reader,
                               std::chrono::duration<double> duration = std::chrono::duration<double>::zero());
  /// duration in seconds, as Caffe2 takes it.
  ReaderWithTimeLimit(std::shared_ptr<Reader> reader, double duration_seconds)
      : ReaderWithTimeLimit(std::move(reader), std::chrono::duration<double>(duration_seconds)) {}
  std::string type_name() const override { return "ReaderWithTimeLimit"; }

 protected:
  void setup_limiter(Net& init_net, std::optional<Net>& exit_net) override;
  BlobRef check_limiter_condition(Net& net) override;

 private:
  std::chrono::duration<double> duration_;
  std::optional<BlobRef> timer_, duration_ns_;
};

/// @brief Sleeps delay before every read of reader (Caffe2's ReaderWithDelay): the read net is
/// `Net("reader_body")` holding a callable operator that sleeps, then reader's read().
/// InvalidInput (naming "delay" and its value) for a negative, infinite or NaN delay, or one whose
/// nanoseconds do not fit int64.
class ReaderWithDelay final : public Reader {
 public:
  ReaderWithDelay(std::shared_ptr<Reader> reader, std::chrono::duration<double> delay);
  ReaderWithDelay(std::shared_ptr<Reader> reader, double delay_seconds)
      : ReaderWithDelay(std::move(reader), std::chrono::duration<double>(delay_seconds)) {}
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override;
  std::string type_name() const override { return "ReaderWithDelay"; }

 private:
  std::shared_ptr<Reader> reader_;
  std::chrono::duration<double> delay_;
};

/// @brief Reads one record from each reader per read, as `Struct(name_i: reader_i.schema())`;
/// stops as soon as any reader is exhausted (Caffe2's CompositeReader).
///
/// The stop blob is the last reader's; after each other reader's nets a `<name>_stop` net ORs that
/// reader's stop blob into it.
class CompositeReader final : public Reader {
 public:
  /// InvalidInput when the lengths differ or a reader is null.
  CompositeReader(std::vector<std::string> names, std::vector<std::shared_ptr<Reader>> readers);
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override;
  void reset(Net& net) override;
  std::string type_name() const override { return "CompositeReader"; }

 private:
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<Reader>> readers_;
};

/// @brief Builds CompositeReaders from one ReaderBuilder per name (Caffe2's CompositeReaderBuilder).
class CompositeReaderBuilder final : public ReaderBuilder {
 public:
  CompositeReaderBuilder(std::vector<std::string> names, std::vector<std::shared_ptr<ReaderBuilder>> builders);
  /// `Struct(name_i: builder_i.schema())`.
  schema::Field schema() const override;
  /// Calls every builder's setup; the limiter goes to the last builder only. Merged maps must not
  /// overlap (InvalidInput "Overlapping keys: …" / "Overlapping values: …").
  DataFinishedMap setup(const ReaderBuilderArgs& args) override;
  /// A CompositeReader of every builder's reader (InvalidInput "reader must be an instance of
  /// Reader or Pipe" when a builder returns nothing).
  ReaderSource new_reader(const ReaderBuilderArgs& args) override;

 private:
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<ReaderBuilder>> builders_;
};

}  // namespace moka
