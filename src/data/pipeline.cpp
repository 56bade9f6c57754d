// pipe() and pipe_and_output(): the pipe Task (runtime threads = task instances, or static threads),
// ProcessingReader, Processor and NetProcessor (clone_and_bind of a net per thread).
#include "moka/data/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "moka/builder/cluster.h"
#include "moka/builder/name_scope.h"
#include "moka/builder/ops.h"
#include "moka/core/error.h"
#include "moka/data/queue.h"

namespace moka {

namespace {

std::vector<StepOrNet> children_as_steps(const std::vector<NetBuilderChild>& children) {
  std::vector<StepOrNet> out;
  for (const auto& c : children) {
    if (const Net* n = std::get_if<Net>(&c)) {
      out.emplace_back(*n);
    } else if (const ExecutionStep* s = std::get_if<ExecutionStep>(&c)) {
      out.emplace_back(*s);
    } else {
      NetBuilder b = std::get<NetBuilder>(c);
      out.emplace_back(to_execution_step(b));
    }
  }
  return out;
}

// Counts the records of every batch a read yields (the rows of its first field) under `key`, in the read's last net
// when it is one (no net more per batch; read_ex returns nets of its own per call), else in a net of its own; a
// read that stopped counts nothing.
void count_read_records(std::vector<StepOrNet>& nets, const BlobRef& should_stop, const std::vector<BlobRef>& fields,
                        const std::string& key) {
  if (fields.empty()) return;  // no record: nothing to count
  const std::vector<BlobRef> inputs{fields.front(), should_stop};
  if (!nets.empty() && nets.back().net() != nullptr && !nets.back().net()->is_frozen()) {
    Net last = *nets.back().net();  // a handle: ops added to it go to the read's net
    last.op("CountRecords", inputs, 0, {{"key", key}});
    return;
  }
  Net count("count_records");
  count.op("CountRecords", inputs, 0, {{"key", key}});
  nets.emplace_back(count);
}

// Caffe2's core.clone_and_bind_net: blobs the net defines get `prefix`; blobs it reads before
// writing keep their names; the input record's blobs are bound to `inputs` by field name.
Net clone_and_bind(const Net& net, const std::string& prefix, std::map<std::string, std::string>& remap,
                   const schema::Field* inputs, const schema::Field* original) {
  if (inputs) {
    const auto orig_names = original->field_names();
    const auto in_names = inputs->field_names();
    std::vector<std::string> diff;
    for (const auto& n : orig_names)
      if (std::find(in_names.begin(), in_names.end(), n) == in_names.end()) diff.push_back(n);
    if (!diff.empty())
      throw InvalidInput(
          fmt::format("Schemas don't match, extra fields [{}] found in the net {}. original: [{}]; "
                      "inputs: [{}]",
                      fmt::join(diff, ", "), net.name(), fmt::join(orig_names, ", "), fmt::join(in_names, ", ")));
    const auto orig_blobs = original->field_blobs();
    const auto in_blobs = inputs->field_blobs();
    for (std::size_t i = 0; i < in_names.size(); ++i) {
      auto it = std::find(orig_names.begin(), orig_names.end(), in_names[i]);
      if (it != orig_names.end()) remap[orig_blobs[it - orig_names.begin()].name()] = in_blobs[i].name();
    }
  }
  const NetDef& def = net.proto();
  std::set<std::string> written, undefined;
  std::vector<std::string> all;
  auto note = [&](const std::string& b) {
    if (std::find(all.begin(), all.end(), b) == all.end()) all.push_back(b);
  };
  for (const auto& op : def.op) {
    for (const auto& in : op.input) {
      if (!written.contains(in)) undefined.insert(in);
      note(in);
    }
    for (const auto& out : op.output) {
      written.insert(out);
      note(out);
    }
  }
  for (const auto& b : all) {
    if (remap.contains(b)) continue;
    remap[b] = undefined.contains(b) ? b : prefix + b;
  }
  Net clone(net.name());
  for (const auto& op : def.op) {
    std::vector<BlobRef> ins, outs;
    for (const auto& in : op.input) ins.emplace_back(remap.at(in));
    for (const auto& out : op.output) outs.emplace_back(remap.at(out));
    std::vector<Arg> args(op.arg.begin(), op.arg.end());
    clone.op(op.type, std::move(ins), Outputs(std::move(outs)), std::move(args));
  }
  return clone;
}

BlobRef const_false_into(Net& net, const BlobRef& blob) {
  return net
      .op("ConstantFill", {}, {blob},
          {{"shape", std::vector<int64_t>{}}, {"value", int64_t{0}}, {"dtype", DType::Bool}})
      .single();
}

// Caffe2's _init_output.
std::pair<ReaderSource, std::shared_ptr<Writer>> init_output(const WriterSink& output, std::optional<int64_t> capacity,
                                                             Net& init_net, Net& exit_net) {
  ReaderSource out;
  std::shared_ptr<Writer> writer;
  if (output.empty()) {
    auto queue = Queue::make(capacity.value_or(kDefaultQueueCapacity));
    out = queue;
    writer = queue->writer();
  } else {
    if (capacity) throw InvalidInput("capacity would not be used.");
    writer = output.writer();
    out = output.source();
  }
  if (!writer) throw InvalidInput("output must be a reader, queue or stream.");
  writer->setup_ex(init_net, exit_net);
  return {out, writer};
}

struct PipeBuild {
  ReaderSource result;
  std::optional<Task> task;
};

std::string profiler_name_of(const std::string& name, const ReaderSource& input, const WriterSink& output) {
  return fmt::format("{}/pipe/{}/{}/{}", Node::current_name(), name, input.name().empty() ? "NoInput" : input.name(),
                     output.empty() ? "NoOutput" : output.name());
}

// The nets of one thread: timer_start, reads, writes, timer_end; returns {body nets, status}.
struct ThreadNets {
  std::vector<StepOrNet> body;
  Net timer_end;
  BlobRef status;
};

ThreadNets thread_nets(Reader& reader, const PipeOptions& o, Net& init_net, Net& exit_net,
                       const std::string& profiler_name, const std::function<std::shared_ptr<Writer>()>& get_writer) {
  ReadRecordNets rr = reader.read_record_ex(init_net, exit_net);
  // No record, no writer: Caffe2 then dropped output and capacity without a word, so records the
  // user meant to keep went nowhere. Refused before get_writer() registers a writer with output.
  if (!rr.has_record && (!o.output.empty() || o.capacity)) {
    const std::string who = o.processor ? fmt::format("the processor \"{}\"", o.processor.name())
                                        : fmt::format("the reader {}", reader.type_name());
    const std::string what = o.capacity ? std::string("capacity") : fmt::format("output \"{}\"", o.output.name());
    throw InvalidInput(fmt::format("pipe: {} returns no record, so {} would not be used.", who, what));
  }
  // Every run of the instance starts un-stopped.
  const_false_into(init_net, rr.should_stop);
  std::vector<StepOrNet> write_nets;
  // With a processor its ProcessingReader counts the records it reads (before the processor can change them).
  if (!o.processor) count_read_records(rr.nets, rr.should_stop, rr.fields, profiler_name + "/records");
  if (rr.has_record) {
    std::shared_ptr<Writer> writer = get_writer();
    write_nets = rr.record ? writer->write_record_ex(*rr.record, init_net, exit_net, rr.should_stop).first
                           : writer->write_record_ex(rr.fields, init_net, exit_net, rr.should_stop).first;
  }
  Net timer_start_net("timer_start");
  // The coarse clock: the timer runs once per batch on every thread, where two steady_clock reads
  // cost more than a small batch's data work; totals are unbiased estimates (see moka::Timer).
  BlobRef timer =
      timer_start_net.op("TimerBegin", {}, {}, {{"counter_name", profiler_name}, {"coarse_clock", true}}).single();
  Net timer_end_net("timer_end");
  timer_end_net.op("TimerEnd", {timer}, 0);
  std::vector<StepOrNet> body{timer_start_net};
  body.insert(body.end(), rr.nets.begin(), rr.nets.end());
  body.insert(body.end(), write_nets.begin(), write_nets.end());
  body.emplace_back(timer_end_net);
  return ThreadNets{std::move(body), timer_end_net, rr.should_stop};
}

PipeBuild pipe_step(const ReaderSource& input, const PipeOptions& o, const std::vector<TaskOutput>& final_outputs) {
  if (o.num_threads < 0 || o.num_runtime_threads < 0)
    throw InvalidInput(fmt::format("pipe: num_threads ({}) and num_runtime_threads ({}) must be >= 0", o.num_threads,
                                   o.num_runtime_threads));
  if (o.num_threads > 1 && o.num_runtime_threads > 1)
    throw InvalidInput("Only one of num_threads or num_runtime_threads must be set.");
  if (o.capacity && *o.capacity <= 0)
    throw InvalidInput(fmt::format("pipe: capacity must be > 0, got {}", *o.capacity));
  if (o.capacity && !o.output.empty()) throw InvalidInput("capacity would not be used.");

  std::shared_ptr<Reader> reader = input.reader();
  if (o.num_threads == 0 || o.num_runtime_threads == 0) {
    if (o.processor) reader = std::make_shared<ProcessingReader>(reader, o.processor);
    if (!o.output.empty())
      throw InvalidInput(
          "pipe: with num_threads = 0 no Task is made and the processing reader is returned; "
          "output must not be given");
    if (o.capacity)
      throw InvalidInput(
          "pipe: with num_threads = 0 no Task or queue is made and the processing reader is returned, "
          "so capacity would not be used.");
    return PipeBuild{ReaderSource(reader), std::nullopt};
  }

  std::string name = o.name;
  if (name.empty() && o.processor) name = o.processor.name();
  if (name.empty() && !o.output.empty()) name = "pipe_into:" + o.output.name();
  if (name.empty()) name = "pipe_from:" + input.name();
  const std::string profiler_name = profiler_name_of(name, input, o.output);
  if (o.processor) reader = std::make_shared<ProcessingReader>(reader, o.processor, profiler_name + "/records");

  ReaderSource out_queue;
  std::optional<Task> made;
  if (o.num_threads > 1) {
    // Caffe2's _static_threads_task: one workspace, one NetBuilder per thread.
    Task task({.name = name, .group = o.group, .outputs = final_outputs}, [&] {
      const std::string task_name = Task::current()->name();
      Net global_exit_net("exit");
      Net global_init_net("init");
      reader->setup_ex(global_init_net, global_exit_net);
      std::shared_ptr<Writer> writer;
      auto get_writer = [&] {
        if (!writer) {
          // The queue gets the task's prefix, not the thread's.
          NetBuilder({.fullname = task_name}, [&] {
            std::tie(out_queue, writer) = init_output(o.output, o.capacity, global_init_net, global_exit_net);
          });
        }
        return writer;
      };
      std::vector<ExecutionStep> steps;
      for (int32_t t = 0; t < o.num_threads; ++t) {
        NetBuilder nb({.name = fmt::format("t:{}", t)}, [&] {
          Net init_net("init");
          Net exit_net("exit");
          // The threads share one workspace: scope the blobs a processor names with NewRecord
          // (next_scoped_blob) per thread, or every thread would write the same blob. (Caffe2
          // did not; its static threads raced on such blobs.)
          NameScope thread_scope(NetBuilder::current()->name());
          ThreadNets tn = thread_nets(*reader, o, init_net, exit_net, profiler_name, get_writer);
          ops::net(init_net);
          ops::net(execution_step("body", tn.body, {.should_stop_blob = tn.status}));
          ops::net(tn.timer_end);
          ops::net(exit_net);
        });
        steps.push_back(to_execution_step(nb));
      }
      ops::net(global_init_net);
      ops::net(execution_step("body", steps, {.concurrent_substeps = true}));
      ops::net(global_exit_net);
    });
    made = task;
  } else {
    // Caffe2's _runtime_threads_task: the body runs in num_runtime_threads task instances.
    Task task({.name = name, .group = o.group, .num_instances = o.num_runtime_threads, .outputs = final_outputs}, [&] {
      Net global_exit_net("pipe:exit");
      Net global_init_net("pipe:init");
      reader->setup_ex(global_init_net, global_exit_net);
      Net init_net("pipe:instance:init");
      Net exit_net("pipe:instance:exit");
      ThreadNets tn = thread_nets(*reader, o, init_net, exit_net, profiler_name, [&] {
        std::shared_ptr<Writer> writer;
        std::tie(out_queue, writer) = init_output(o.output, o.capacity, global_init_net, global_exit_net);
        return writer;
      });
      ops::task_init([&] { ops::net(global_init_net); });
      ops::task_instance_init([&] { ops::net(init_net); });
      ops::net(execution_step("body", tn.body, {.should_stop_blob = tn.status}));
      // Ends the timer the stopping iteration left running.
      ops::net(tn.timer_end);
      ops::task_instance_exit([&] { ops::net(exit_net); });
      ops::task_exit([&] { ops::net(global_exit_net); });
    });
    made = task;
  }
  return PipeBuild{out_queue, made};
}

}  // namespace

// ---- Processor ----

Processor::Processor(std::shared_ptr<NetProcessor> net_processor) {
  if (!net_processor) throw InvalidInput("Processor: the NetProcessor is null");
  name_ = net_processor->name();
  setup_ = net_processor;
  fn_ = [p = std::move(net_processor)](const schema::Field& rec) { return (*p)(rec); };
}

ProcessorOutput Processor::operator()(const schema::Field& rec) const {
  if (!fn_) throw InvalidInput("Processor: empty processor called");
  return fn_(rec);
}

// ---- NetProcessor ----

NetProcessor::NetProcessor(Net net, schema::Field input_record, schema::Field output_record,
                           NetProcessorOptions options)
    : net_(std::move(net)),
      input_record_(std::move(input_record)),
      output_record_(std::move(output_record)),
      stop_signal_(std::move(options.stop_signal)),
      thread_init_nets_(std::move(options.thread_init_nets)),
      name_(options.name.empty() ? net_.name() : std::move(options.name)) {
  if (!input_record_.has_blobs()) throw InvalidInput("NetProcessor: the input record must be bound to blobs");
  if (!output_record_.has_blobs()) throw InvalidInput("NetProcessor: the output record must be bound to blobs");
}

ProcessorOutput NetProcessor::operator()(const schema::Field& rec) {
  if (frozen_) throw InvalidInput(fmt::format("NetProcessor {}: cannot clone after setup() or blob_maps()", name_));
  NetBuilder* nb = NetBuilder::current(/*required=*/false);
  const std::string prefix = (nb ? nb->name() : std::string()) + "/";
  std::map<std::string, std::string> remap;
  for (const auto& init : thread_init_nets_)
    cloned_init_nets_.push_back(clone_and_bind(init, prefix, remap, nullptr, nullptr));
  Net cloned = clone_and_bind(net_, prefix, remap, &rec, &input_record_);
  std::vector<BlobRef> out_blobs;
  for (const auto& b : output_record_.field_blobs()) {
    auto it = remap.find(b.name());
    out_blobs.emplace_back(it == remap.end() ? b.name() : it->second);
  }
  std::optional<BlobRef> stop;
  if (stop_signal_) {
    auto it = remap.find(stop_signal_->name());
    stop = it == remap.end() ? *stop_signal_ : BlobRef(it->second);
  }
  blob_maps_.push_back(remap);
  return ProcessorOutput(std::vector<StepOrNet>{cloned}, schema::from_blob_list(output_record_, out_blobs), stop);
}

std::vector<StepOrNet> NetProcessor::setup(Net& /*init_net*/) {
  frozen_ = true;
  std::vector<StepOrNet> out(cloned_init_nets_.begin(), cloned_init_nets_.end());
  cloned_init_nets_.clear();
  return out;
}

std::vector<StepOrNet> NetProcessor::exit(Net& /*exit_net*/) { return {}; }

const std::vector<std::map<std::string, std::string>>& NetProcessor::blob_maps() {
  frozen_ = true;
  return blob_maps_;
}

// ---- ProcessingReader ----

ProcessingReader::ProcessingReader(std::shared_ptr<Reader> reader, Processor processor, std::string records_stat)
    : reader_(std::move(reader)), processor_(std::move(processor)), records_stat_(std::move(records_stat)) {
  if (!reader_) throw InvalidInput("ProcessingReader: the reader is null");
  if (!processor_) throw InvalidInput("ProcessingReader: the processor is empty");
}

void ProcessingReader::setup_ex(Net init_net, std::optional<Net> exit_net) {
  reader_->setup_ex(std::move(init_net), std::move(exit_net));
}

ReadNets ProcessingReader::read_ex(Net local_init_net, Net local_finish_net) {
  ReadRecordNets rr = reader_->read_record_ex(local_init_net, local_finish_net);
  if (!records_stat_.empty()) count_read_records(rr.nets, rr.should_stop, rr.fields, records_stat_);
  schema::Field rec;
  if (rr.record) {
    rec = *rr.record;
  } else {
    // A reader without a schema: give the processor a Struct of field_0, field_1, ...
    std::vector<std::string> names;
    for (std::size_t i = 0; i < rr.fields.size(); ++i) names.push_back(fmt::format("field_{}", i));
    rec = schema::from_blob_list(schema::from_column_list(names), rr.fields);
  }
  // The processor's ops:: calls go to a fresh builder; its children are the processor's nets.
  ProcessorOutput result;
  NetBuilder nb;
  nb.build([&] { result = processor_(rec); });
  const auto& children = nb.get();
  if (result.nets && !children.empty())
    throw InvalidInput(
        fmt::format("Cannot both use `ops` syntax and return a list of nets. (processor {})", processor_.name()));
  std::vector<StepOrNet> proc_nets = result.nets ? *result.nets : children_as_steps(children);

  ReadNets out;
  out.nets = std::move(rr.nets);
  out.nets.insert(out.nets.end(), proc_nets.begin(), proc_nets.end());
  out.should_stop = rr.should_stop;
  const std::optional<BlobRef>& nb_stop = nb.existing_stop_blob();
  if (result.should_stop || nb_stop) {
    Net stop_net("stop_net");
    if (result.should_stop) stop_net.op("Or", {rr.should_stop, *result.should_stop}, {rr.should_stop});
    if (nb_stop) stop_net.op("Or", {rr.should_stop, *nb_stop}, {rr.should_stop});
    out.nets.emplace_back(stop_net);
  }
  if (processor_.setup_attribute()) local_init_net.add_attribute(kLocalSetup, processor_.setup_attribute());
  set_schema(result.record);
  if (result.record) out.fields = result.record->field_blobs();
  return out;
}

// ---- pipe ----

ReaderSource pipe(const ReaderSource& input, const PipeOptions& options) {
  return pipe_step(input, options, {}).result;
}

PipeAndOutput pipe_and_output(const ReaderSource& input, const PipeOptions& options,
                              const std::vector<TaskOutput>& final_outputs) {
  if (options.num_threads <= 0 || options.num_runtime_threads <= 0)
    throw InvalidInput("pipe_and_output: num_threads and num_runtime_threads must be > 0");
  PipeBuild b = pipe_step(input, options, final_outputs);
  PipeAndOutput out;
  out.result = b.result;
  if (!final_outputs.empty()) out.outputs = b.task->outputs();
  return out;
}

}  // namespace moka
