// Pipes (Caffe2's pipeline.py; docs/pipelines.md §5): processors between a reader and a writer, ProcessingReader,
// NetProcessor, and pipe() / pipe_and_output(), which build the Task that streams records.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "moka/builder/task.h"
#include "moka/builder/task_group.h"
#include "moka/data/reader.h"

namespace moka {

/// Caffe2's pipeline.DEFAULT_QUEUE_CAPACITY.
inline constexpr int64_t kDefaultQueueCapacity = 100;

/// @brief What a processor returns (Caffe2's `pipeline.Output`, after normalize_processor_output).
///
/// - a record: `return out;` — the record passed on to the writer;
/// - nets: `return std::vector<moka::Net>{net};` or `{nets, record}` — nets to run per record;
/// - nothing (`ProcessorOutput{}` or a `void` processor) — no record: the pipe has no writer;
/// - should_stop: a bool blob that ends the stream when true.
/// Nets are optional: ops added with the `ops::` syntax inside the processor form the nets
/// (returning explicit nets as well is an error, "Cannot both use `ops` syntax and return a list
/// of nets.").
struct ProcessorOutput {
  std::optional<std::vector<StepOrNet>> nets{};
  std::optional<schema::Field> record{};
  std::optional<BlobRef> should_stop{};

  ProcessorOutput() = default;
  ProcessorOutput(schema::Field rec) : record(std::move(rec)) {}  // NOLINT(google-explicit-constructor)
  ProcessorOutput(const std::vector<Net>& n) : nets(std::vector<StepOrNet>(n.begin(), n.end())) {}  // NOLINT
  ProcessorOutput(const std::vector<Net>& n, schema::Field rec)
      : nets(std::vector<StepOrNet>(n.begin(), n.end())), record(std::move(rec)) {}
  ProcessorOutput(schema::Field rec, BlobRef stop) : record(std::move(rec)), should_stop(std::move(stop)) {}
  ProcessorOutput(std::optional<std::vector<StepOrNet>> n, std::optional<schema::Field> rec,
                  std::optional<BlobRef> stop)
      : nets(std::move(n)), record(std::move(rec)), should_stop(std::move(stop)) {}
};

class NetProcessor;

/// @brief A record transformation run between read and write (Caffe2's processor argument).
///
/// Built from a callable taking `const schema::Field&` and returning a ProcessorOutput (or
/// anything convertible: a record, a vector of nets) or void, or from a NetProcessor. The
/// callable runs at build time inside a fresh NetBuilder, once per pipe (once per thread with
/// num_threads > 1), so `ops::` calls in it — including ops::stop_if and the
/// ops::task_init / task_instance_init / … blocks — emit into the pipe's per-record nets.
/// @code
///   moka::Processor double_uid([&](const moka::schema::Field& rec) {
///     moka::schema::Field out = moka::name_scope("proc1", [&] { return moka::schema::NewRecord(rec); });
///     moka::ops::Add({rec["uid"](), rec["uid"]()}, {out["uid"]()});
///     out["value"].set(rec["value"](), true);
///     return out;
///   }, "double_uid");
/// @endcode
/// Thread-safety: a value type; used at build time.
class Processor {
 public:
  using Fn = std::function<ProcessorOutput(const schema::Field&)>;

  Processor() = default;
  template <class F>
  requires(std::invocable<F&, const schema::Field&> && !std::is_same_v<std::remove_cvref_t<F>, Processor>)
      Processor(F fn, std::string name = "processor")  // NOLINT(google-explicit-constructor)
      : fn_(wrap(std::move(fn))), name_(std::move(name)) {}
  Processor(std::shared_ptr<NetProcessor> net_processor);  // NOLINT(google-explicit-constructor)

  bool empty() const { return !fn_; }
  explicit operator bool() const { return !empty(); }
  /// Runs the callable (InvalidInput on an empty processor).
  ProcessorOutput operator()(const schema::Field& rec) const;
  /// Caffe2's processor_name(): the given name (a NetProcessor's name).
  const std::string& name() const { return name_; }
  /// An object attached under kLocalSetup to the instance init net (NetProcessor's thread init nets).
  const std::shared_ptr<SetupAttribute>& setup_attribute() const { return setup_; }

 private:
  template <class F>
  static Fn wrap(F fn) {
    using R = std::invoke_result_t<F&, const schema::Field&>;
    if constexpr (std::is_void_v<R>) {
      return [fn = std::move(fn)](const schema::Field& rec) mutable {
        fn(rec);
        return ProcessorOutput{};
      };
    } else {
      static_assert(std::is_convertible_v<R, ProcessorOutput>,
                    "a processor returns void, a record, a vector of nets or a ProcessorOutput");
      return [fn = std::move(fn)](const schema::Field& rec) mutable { return ProcessorOutput(fn(rec)); };
    }
  }

  Fn fn_;
  std::string name_;
  std::shared_ptr<SetupAttribute> setup_;
};

/// Optional arguments of NetProcessor.
struct NetProcessorOptions {
  std::optional<BlobRef> stop_signal{};  ///< a blob of net that ends the stream when true
  std::vector<Net> thread_init_nets{};   ///< cloned per call; run once per node (LOCAL_SETUP)
  std::string name{};                    ///< default: the net's name
};

/// @brief A Net used as a processor, cloned for every thread (Caffe2's NetProcessor).
///
/// moka's Net has no input/output records, so they are given here: every call clones net (and
/// thread_init_nets) with the blobs it defines prefixed by `<active builder name>/`, binding
/// input_record's blobs to the record read (by field name) and returning the cloned output record.
/// Blobs net reads without defining keep their names (shared state such as counters).
class NetProcessor final : public SetupAttribute {
 public:
  NetProcessor(Net net, schema::Field input_record, schema::Field output_record, NetProcessorOptions options = {});
  /// Clones the net for one thread. InvalidInput once frozen (after setup() or blob_maps()).
  ProcessorOutput operator()(const schema::Field& rec);
  /// Freezes and returns the cloned thread init nets.
  std::vector<StepOrNet> setup(Net& init_net) override;
  std::vector<StepOrNet> exit(Net& exit_net) override;
  /// Freezes and returns, per call, the original → cloned blob names.
  const std::vector<std::map<std::string, std::string>>& blob_maps();
  const std::string& name() const { return name_; }
  schema::Field schema() const { return output_record_; }

 private:
  Net net_;
  schema::Field input_record_, output_record_;
  std::optional<BlobRef> stop_signal_;
  std::vector<Net> thread_init_nets_;
  std::string name_;
  std::vector<std::map<std::string, std::string>> blob_maps_;
  std::vector<Net> cloned_init_nets_;
  bool frozen_ = false;
};

/// @brief A reader that runs a processor on every record read (Caffe2's ProcessingReader).
class ProcessingReader final : public Reader {
 public:
  /// records_stat: a stat key that each batch read from `reader` adds its records to before the processor runs
  /// (pipe() passes `<pipe timer key>/records`, docs/pipelines.md §5.1); empty: nothing is counted.
  ProcessingReader(std::shared_ptr<Reader> reader, Processor processor, std::string records_stat = {});
  void setup_ex(Net init_net, std::optional<Net> exit_net) override;
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override;
  std::string type_name() const override { return "ProcessingReader"; }

 private:
  std::shared_ptr<Reader> reader_;
  Processor processor_;
  std::string records_stat_;
};

/// Optional arguments of pipe() (Caffe2's keyword arguments).
struct PipeOptions {
  /// Where records go: a Writer, a Queue, a Dataset; empty: a new Queue of `capacity`. Refused when
  /// the processor returns no record (there is nothing to write).
  WriterSink output{};
  /// > 1: that many static threads in one workspace (Caffe2's deprecated path; each thread's
  /// reader and processor are built under NameScope(<task>/t:<i>), so records made with
  /// NewRecord do not collide); 0: no Task, the processing reader is returned. Exclusive with
  /// num_runtime_threads > 1.
  int32_t num_threads = 1;
  Processor processor{};
  /// Task name; default the processor's name, else `pipe_into:<output>`, else `pipe_from:<input>`.
  std::string name{};
  /// Capacity of the queue made when output is empty (default 100); refused with an output, with
  /// num_threads or num_runtime_threads = 0, and when the processor returns no record (no queue is made).
  std::optional<int64_t> capacity{};
  TaskGroup* group = nullptr;  ///< default: the active TaskGroup
  /// Task instances (each its own child workspace), the default path.
  int32_t num_runtime_threads = 1;
};

/// @brief Streams input into output through an optional processor, in a new Task (Caffe2's `pipe`).
///
/// input is a Reader, a Queue or a Dataset. Each thread repeats, until the status blob turns
/// true (the reader ran out or hit a limit, the processor stopped the stream, or the output
/// queue was closed): `timer_start`, the read nets, the write nets, `timer_end`. The timer
/// publishes the stats `<node>/pipe/<name>/<input>/<output>` (ns, summed over every batch of every
/// thread) and `.../count` (batches); it reads the coarse monotonic clock (1–10 ms ticks, a few ns
/// a read), so the totals are unbiased estimates over many batches but a single batch reads 0 or a tick. Returns the
/// output queue (or the output Queue/Dataset given), empty when output was a Writer or the
/// processor returned no record, and the processing reader itself when num_threads == 0.
/// @code
///   moka::TaskGroup tg([&] {
///     auto q1 = moka::pipe(src.reader(), {.processor = proc1});      // -> new Queue(100)
///     auto q2 = moka::pipe(q1, {.processor = proc2});
///     moka::pipe(q2, {.output = dst.writer()});
///   });
///   session.run(tg);
/// @endcode
/// Errors (InvalidInput, at build time): "Only one of num_threads or num_runtime_threads must be
/// set.", "capacity would not be used.", "output must be a reader, queue or stream.", negative
/// thread counts, capacity <= 0, a writer whose fields differ from the record's, an output or a
/// capacity given with a processor that returns no record ("pipe: the processor "<name>" returns no
/// record, so output "<output>" would not be used.", "... so capacity would not be used.").
ReaderSource pipe(const ReaderSource& input, const PipeOptions& options = {});

/// What pipe_and_output returns.
struct PipeAndOutput {
  ReaderSource result;
  std::vector<TaskOutput> outputs;  ///< the task's final outputs (as given)
};

/// @brief pipe() whose Task also returns final_outputs to the session (Caffe2's `pipe_and_output`);
/// num_threads must be > 0.
PipeAndOutput pipe_and_output(const ReaderSource& input, const PipeOptions& options,
                              const std::vector<TaskOutput>& final_outputs);

}  // namespace moka
