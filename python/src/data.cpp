// moka._C's bindings of data pipelines (moka/data/, docs/pipelines.md): records (schema), Dataset, readers and
// their limits (dataio), Queue (queue_util), pipe and pipe_and_output with Python processors (pipeline).
#include "data.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <any>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "binding_objects.h"
#include "builder.h"
#include "moka/moka.h"
#include "numpy_tensor.h"
#include "workspace.h"

namespace moka::python {
namespace {

namespace s = moka::schema;

py::object blob_reference(const BlobRef& b) { return py::module_::import("moka.core").attr("BlobReference")(b.name()); }

// Caffe2's Scalar.get(): its data (a numpy copy) when it holds some, else its blob.
py::object scalar_get(const s::Field& f) {
  if (f.is_scalar() && f.value()) return to_numpy(*f.value());
  return blob_reference(f.blob());
}

std::string type_name_of(const py::handle& x) { return py::str(py::type::handle_of(x).attr("__name__")); }

// A net argument of the record and reader helpers: a core.Net, or `ops` (the active NetBuilder's current net).
Net net_of(const py::handle& x, const char* what) {
  if (py::hasattr(x, "_moka_ops")) return NetBuilder::current()->current_net();
  py::handle native = py::hasattr(x, "_net") ? x.attr("_net") : x;
  if (py::isinstance<Net>(native)) return native.cast<Net>();
  throw TypeError(std::string(what) + ": expected a core.Net or ops, not " + type_name_of(x));
}

std::optional<Net> optional_net(const py::handle& x, const char* what) {
  if (x.is_none()) return std::nullopt;
  return net_of(x, what);
}

// What Struct/List take as a field (Caffe2's _normalize_field): a Field, a BlobReference as a Scalar of that blob,
// or data (a numpy array, list or scalar) as a Scalar carrying it.
s::Field field_of(const py::handle& x, const std::string& name) {
  if (py::isinstance<s::Field>(x)) return x.cast<s::Field>();
  if (py::hasattr(x, "_moka_blob_name")) return s::Scalar(std::nullopt, blob_list(x).at(0));
  return s::Scalar(from_numpy(x, "field \"" + name + "\""));
}

std::optional<DType> dtype_of(const py::handle& dtype) {
  if (dtype.is_none()) return std::nullopt;
  py::object empty = py::module_::import("numpy").attr("empty")(0, py::arg("dtype") = dtype);
  return from_numpy(empty, "Scalar dtype").dtype();
}

// A Python object kept alive while C++ holds it; released with the GIL taken.
using PyObjectPtr = std::shared_ptr<py::object>;

PyObjectPtr kept(py::object o) {
  return PyObjectPtr(new py::object(std::move(o)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

py::object py_net(const Net& n) { return py::module_::import("moka.core").attr("Net")(py::cast(n)); }

py::object py_step(const StepOrNet& x) {
  if (const Net* n = x.net()) return py_net(*n);
  return py::module_::import("moka.core").attr("ExecutionStep")(py::cast(x.to_step()));
}

py::list py_blobs(const std::vector<BlobRef>& blobs) {
  py::list out;
  for (const BlobRef& b : blobs) out.append(blob_reference(b));
  return out;
}

std::vector<StepOrNet> nets_of(const py::handle& list);

// The (a, b, ...) tuple a Python reader method returns; TypeError naming the method otherwise.
py::tuple result_tuple(const py::object& r, std::size_t size, const std::string& method) {
  if ((!py::isinstance<py::tuple>(r) && !py::isinstance<py::list>(r)) || py::len(r) != size)
    throw TypeError(fmt::format("a reader's {} returns a tuple of {}, not {}", method,
                                size == 2 ? "(should_stop, fields)" : "(nets, should_stop, fields)",
                                py::repr(r).cast<std::string>()));
  return py::tuple(r);
}

// A Python reader — a subclass of dataio.Reader (Caffe2's interface: schema(), setup_ex(init_net, finish_net),
// read_ex(local_init_net, local_finish_net), read(read_net), reset(net)) — as a C++ Reader, so that pipes and the
// C++ readers that wrap a reader drive it. The Python object lives as long as C++ holds the reader; every call
// takes the GIL (they are build-time calls).
class PythonReader final : public Reader {
 public:
  explicit PythonReader(py::object reader) : reader_(kept(std::move(reader))) {
    class_name_ = type_name_of(*reader_);
    refresh_schema();
  }
  s::Field schema() const override {
    py::gil_scoped_acquire gil;
    py::object f = reader_->attr("schema")();
    if (!py::isinstance<s::Field>(f))
      throw TypeError(class_name_ + ".schema() returns a schema.Field, not " + type_name_of(f));
    return f.cast<s::Field>();
  }
  void setup_ex(Net init_net, std::optional<Net> exit_net) override {
    py::gil_scoped_acquire gil;
    reader_->attr("setup_ex")(py_net(init_net), exit_net ? py_net(*exit_net) : py::none());
    refresh_schema();
  }
  ReadNets read_ex(Net local_init_net, Net local_finish_net) override {
    py::gil_scoped_acquire gil;
    py::tuple r = result_tuple(reader_->attr("read_ex")(py_net(local_init_net), py_net(local_finish_net)), 3,
                               class_name_ + ".read_ex()");
    ReadNets out;
    out.nets = nets_of(r[0]);
    out.should_stop = stop_blob(r[1], "read_ex()");
    if (!r[2].is_none()) out.fields = fields_of(r[2]);
    refresh_schema();
    return out;
  }
  ReadOutput read(Net& read_net) override {
    py::gil_scoped_acquire gil;
    py::tuple r = result_tuple(reader_->attr("read")(py_net(read_net)), 2, class_name_ + ".read()");
    ReadOutput out{stop_blob(r[0], "read()"), fields_of(r[1])};
    refresh_schema();
    return out;
  }
  void reset(Net& net) override {
    py::gil_scoped_acquire gil;
    reader_->attr("reset")(py_net(net));
  }
  std::string type_name() const override { return class_name_; }

 private:
  BlobRef stop_blob(const py::handle& x, const char* method) const {
    if (x.is_none()) throw TypeError(class_name_ + "." + method + " returns should_stop None; it must be a blob");
    return blob_list(x).at(0);
  }
  // The fields: blobs, or a record (its field blobs).
  static std::vector<BlobRef> fields_of(const py::handle& x) {
    if (py::isinstance<s::Field>(x)) return x.cast<s::Field>().field_blobs();
    return blob_list(x);
  }
  // Caffe2's readers may set their schema late (_set_schema in setup_ex): read it again after each call.
  void refresh_schema() {
    if (!py::hasattr(*reader_, "_schema")) return;
    py::object f = reader_->attr("_schema");
    if (py::isinstance<s::Field>(f)) set_schema(f.cast<s::Field>());
  }
  PyObjectPtr reader_;
  std::string class_name_;
};

bool is_python_reader(const py::handle& x) {
  return py::isinstance(x, py::module_::import("moka.dataio").attr("Reader")) && !py::isinstance<Reader>(x);
}

}  // namespace

Net net_argument(const py::handle& x, const char* what) { return net_of(x, what); }

std::shared_ptr<Reader> reader_argument(const py::handle& x, const char* what) {
  if (x.is_none()) return nullptr;  // the C++ reader names the missing argument
  if (py::isinstance<Reader>(x)) return x.cast<std::shared_ptr<Reader>>();
  if (is_python_reader(x)) return std::make_shared<PythonReader>(py::reinterpret_borrow<py::object>(x));
  throw TypeError(std::string(what) + ": expected a Reader, not " + type_name_of(x));
}

namespace {

// Caffe2's Reader.execution_step: (the step that reads until should_stop, the record or fields it reads into).
py::tuple reader_execution_step(Reader& r, const py::handle& reader_net_name, const py::handle& external_should_stop) {
  std::optional<BlobRef> stop;
  if (!external_should_stop.is_none()) stop = blob_list(external_should_stop).at(0);
  ReaderStep step =
      r.execution_step(reader_net_name.is_none() ? std::string() : py::str(reader_net_name).cast<std::string>(), stop);
  py::object fields = step.record ? py::cast(*step.record) : py::object(py_blobs(step.fields));
  return py::make_tuple(py::module_::import("moka.core").attr("ExecutionStep")(py::cast(step.step)), fields);
}

// pipe()'s input: a Reader, a Queue (any Pipe) or a Dataset.
ReaderSource source_of(const py::handle& x) {
  if (py::isinstance<Reader>(x) || is_python_reader(x)) return ReaderSource(reader_argument(x, "pipe"));
  if (py::isinstance<Pipe>(x)) return ReaderSource(x.cast<std::shared_ptr<Pipe>>());
  if (py::isinstance<Dataset>(x)) return ReaderSource(x.cast<Dataset>());
  throw TypeError("pipe: input must be a Reader, a Queue or a Dataset, not " + type_name_of(x));
}

// pipe()'s output: None (a new queue), a Writer, a Queue (any Pipe) or a Dataset.
WriterSink sink_of(const py::handle& x) {
  if (x.is_none()) return {};
  if (py::isinstance<Writer>(x)) return WriterSink(x.cast<std::shared_ptr<Writer>>());
  if (py::isinstance<Pipe>(x)) return WriterSink(x.cast<std::shared_ptr<Pipe>>());
  if (py::isinstance<Dataset>(x)) return WriterSink(x.cast<Dataset>());
  throw TypeError("pipe: output must be a Writer, a Queue or a Dataset, not " + type_name_of(x));
}

py::object source_object(const ReaderSource& r) {
  if (r.empty()) return py::none();
  if (r.pipe()) return py::cast(r.pipe());
  return py::cast(r.reader());
}

// Nets a processor returns: core.Net, ExecutionStep or NetBuilder objects.
std::vector<StepOrNet> nets_of(const py::handle& list) {
  std::vector<StepOrNet> out;
  for (py::handle x : list) out.push_back(*step_of(x).single());
  return out;
}

// A processor's return value as Caffe2's normalize_processor_output reads it: None, a record, a list of nets, or
// a pipeline.Output (nets, record, should_stop).
ProcessorOutput processor_output(const py::handle& r) {
  if (r.is_none()) return {};
  if (py::isinstance<s::Field>(r)) return ProcessorOutput(r.cast<s::Field>());
  if (py::hasattr(r, "_moka_processor_output")) {
    ProcessorOutput out;
    py::object nets = r.attr("nets"), record = r.attr("record"), stop = r.attr("should_stop");
    if (!nets.is_none()) out.nets = nets_of(nets);
    if (!record.is_none()) out.record = record.cast<s::Field>();
    if (!stop.is_none()) out.should_stop = blob_list(stop).at(0);
    return out;
  }
  if (py::isinstance<py::list>(r) || py::isinstance<py::tuple>(r)) {
    ProcessorOutput out;
    out.nets = nets_of(r);
    return out;
  }
  throw TypeError("pipe: a processor returns None, a record, a list of nets or a pipeline.Output, not " +
                  type_name_of(r));
}

// Caffe2's processor_name: its `name`, else its class name.
std::string processor_name(const py::handle& f) {
  if (py::hasattr(f, "name")) return py::str(f.attr("name"));
  return py::str(py::type::handle_of(f).attr("__name__"));
}

// A Python callable as a processor: called at build time, on the building thread, with the record read.
Processor processor_of(const py::handle& f) {
  if (f.is_none()) return {};
  // Dropped with the GIL taken, wherever the last copy of the processor goes.
  std::shared_ptr<py::object> call(new py::object(py::reinterpret_borrow<py::object>(f)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return Processor(
      [call](const s::Field& rec) {
        py::gil_scoped_acquire gil;
        return processor_output((*call)(rec));
      },
      processor_name(f));
}

PipeOptions pipe_options(const py::handle& output, int32_t num_threads, const py::handle& processor,
                         const py::handle& name, std::optional<int64_t> capacity, PyTaskGroup* group,
                         int32_t num_runtime_threads) {
  PipeOptions o;
  o.output = sink_of(output);
  o.num_threads = num_threads;
  o.processor = processor_of(processor);
  if (!name.is_none()) o.name = py::str(name);
  o.capacity = capacity;
  if (group != nullptr) o.group = &group->group;
  o.num_runtime_threads = num_runtime_threads;
  return o;
}

// A Python reader builder (Caffe2's duck-typed dataio.ReaderBuilder: schema(), setup(**kwargs),
// new_reader(**kwargs)) as a C++ ReaderBuilder, so that CompositeReaderBuilder's one engine drives it. The
// Python keyword arguments travel in ReaderBuilderArgs: the limiter as `limiter`, the rest as extra["kwargs"].
ReaderBuilderArgs builder_args(py::kwargs kwargs) {
  ReaderBuilderArgs args;
  if (kwargs.contains("limiter")) {
    args.limiter = kept(kwargs["limiter"]);
    PyDict_DelItemString(kwargs.ptr(), "limiter");
  }
  args.extra["kwargs"] = kept(std::move(kwargs));
  return args;
}

py::dict python_kwargs(const ReaderBuilderArgs& args) {
  py::dict out;
  if (auto it = args.extra.find("kwargs"); it != args.extra.end())
    if (const auto* d = std::any_cast<PyObjectPtr>(&it->second)) out = py::dict(**d);
  if (const auto* l = std::any_cast<PyObjectPtr>(&args.limiter)) out["limiter"] = **l;
  return out;
}

py::dict data_finished_dict(const DataFinishedMap& m) {
  py::dict out;
  for (const auto& [name, blob] : m) out[py::str(name)] = blob_reference(blob);
  return out;
}

class PythonReaderBuilder final : public ReaderBuilder {
 public:
  explicit PythonReaderBuilder(py::object builder) : builder_(kept(std::move(builder))) {}
  s::Field schema() const override {
    py::gil_scoped_acquire gil;
    py::object f = builder_->attr("schema")();
    if (!py::isinstance<s::Field>(f))
      throw TypeError("a reader builder's schema() returns a schema.Field, not " + type_name_of(f));
    return f.cast<s::Field>();
  }
  DataFinishedMap setup(const ReaderBuilderArgs& args) override {
    py::gil_scoped_acquire gil;
    py::object r = builder_->attr("setup")(**python_kwargs(args));
    DataFinishedMap out;
    if (r.is_none()) return out;
    if (!py::isinstance<py::dict>(r))
      throw TypeError("a reader builder's setup() returns None or a dict of data_finished blobs, not " +
                      type_name_of(r));
    for (auto [name, blob] : r.cast<py::dict>()) out.emplace(py::str(name), blob_list(blob).at(0));
    return out;
  }
  ReaderSource new_reader(const ReaderBuilderArgs& args) override {
    py::gil_scoped_acquire gil;
    py::object r = builder_->attr("new_reader")(**python_kwargs(args));
    if (r.is_none()) return {};  // CompositeReaderBuilder names the error
    if (!py::isinstance<Reader>(r) && !is_python_reader(r) && !py::isinstance<Pipe>(r) && !py::isinstance<Dataset>(r))
      throw InvalidInput("reader must be an instance of Reader or Pipe, not " + type_name_of(r));
    return source_of(r);
  }

 private:
  PyObjectPtr builder_;
};

std::shared_ptr<ReaderBuilder> reader_builder_of(const py::handle& x) {
  if (py::isinstance<ReaderBuilder>(x)) return x.cast<std::shared_ptr<ReaderBuilder>>();
  for (const char* method : {"schema", "setup", "new_reader"})
    if (!py::hasattr(x, method))
      throw TypeError(std::string("a reader builder needs schema(), setup() and new_reader(); ") + type_name_of(x) +
                      " has no " + method + "()");
  return std::make_shared<PythonReaderBuilder>(py::reinterpret_borrow<py::object>(x));
}

}  // namespace

void bind_data(py::module_& m) {
  // schema (Caffe2's schema.Field, Scalar, Struct, List): `rec.val` is the child field, `rec.val()` its blob.
  py::class_<s::Field> field(m, "Field", "A record or record schema (Caffe2's schema.Field).");
  field
      .def("field_names", &s::Field::field_names)
      // Caffe2's field_blobs: a scalar's data where it carries some (a fetched record), else its blob.
      .def("field_blobs",
           [](const s::Field& f) {
             py::list out;
             for (const s::Field& scalar : f.all_scalars()) out.append(scalar_get(scalar));
             return out;
           })
      .def("field_types",
           [](const s::Field& f) {
             std::vector<std::optional<std::string>> out;
             for (const auto& t : f.field_types())
               out.push_back(t ? std::optional<std::string>(std::string(dtype_name(*t))) : std::nullopt);
             return out;
           })
      .def("has_blobs", &s::Field::has_blobs)
      .def("clone_schema", &s::Field::clone_schema)
      .def("clone", &s::Field::clone)
      .def("all_scalars", &s::Field::all_scalars)
      .def("same_schema", &s::Field::same_schema)
      .def("__len__", &s::Field::num_fields)
      .def("__contains__", [](const s::Field& f, const std::string& name) { return f.has_field(name); })
      .def("__getitem__", [](const s::Field& f, const std::string& name) { return f.field(name); })
      .def("__getattr__",
           [](const s::Field& f, const std::string& name) {
             if (!f.has_field(name)) throw py::attribute_error("field has no child \"" + name + "\"");
             return f.field(name);
           })
      // As in Caffe2, a scalar that holds data (a data record, what FetchRecord returns) gives the data.
      .def("__call__", [](const s::Field& f) { return scalar_get(f); })
      .def("get", [](const s::Field& f) { return scalar_get(f); })
      .def(
          "set", [](s::Field& f, const py::handle& blob, bool unsafe) { f.set(blob_list(blob).at(0), unsafe); },
          py::arg("blob"), py::arg("unsafe") = false)
      .def("fetch_value", [](const s::Field& f) -> py::object { return f.value() ? to_numpy(*f.value()) : py::none(); })
      .def("__repr__", &s::Field::repr);
  py::class_<s::Scalar, s::Field>(m, "Scalar", "A leaf of a record: one blob (Caffe2's schema.Scalar).")
      .def(py::init([](const py::handle& dtype, const py::handle& blob) {
             if (!blob.is_none()) return s::Scalar(dtype_of(dtype), blob_list(blob).at(0));
             return s::Scalar(dtype_of(dtype));
           }),
           py::arg("dtype") = py::none(), py::arg("blob") = py::none());
  py::class_<s::Struct, s::Field>(m, "Struct", "Named fields in order (Caffe2's schema.Struct).")
      .def(py::init([](const py::args& fields) {
        std::vector<std::pair<std::string, s::Field>> list;
        for (py::handle item : fields) {
          auto pair = item.cast<py::tuple>();
          if (pair.size() != 2) throw InvalidInput("Struct: each field is a (name, field) pair");
          const std::string name = py::str(pair[0]);
          list.emplace_back(name, field_of(pair[1], name));
        }
        return s::Struct(list);
      }));
  py::class_<s::List, s::Field>(m, "List", "A list per row: lengths and values (Caffe2's schema.List).")
      .def(py::init([](const py::handle& values, const py::handle& lengths_blob) {
             std::optional<BlobRef> lengths;
             if (!lengths_blob.is_none()) lengths = blob_list(lengths_blob).at(0);
             return s::List(field_of(values, "values"), lengths);
           }),
           py::arg("values"), py::arg("lengths_blob") = py::none());
  m.def("NewRecord", [](const py::handle& net, const s::Field& schema) {
    Net n = net_of(net, "NewRecord");
    return s::NewRecord(n, schema);
  });
  m.def("ConstRecord", [](const py::handle& net, const s::Field& data) {
    Net n = net_of(net, "ConstRecord");
    return s::ConstRecord(n, data);
  });
  m.def(
      "InitEmptyRecord",
      [](const py::handle& net, const s::Field& schema, bool enforce_types) {
        Net n = net_of(net, "InitEmptyRecord");
        return s::InitEmptyRecord(n, schema, enforce_types);
      },
      py::arg("net"), py::arg("schema_or_record"), py::arg("enforce_types") = false);
  m.def(
      "FeedRecord",
      [](const s::Field& record, const py::handle& values, PyWorkspace& ws) {
        if (py::isinstance<s::Field>(values)) return s::FeedRecord(record, values.cast<s::Field>(), ws.native());
        std::vector<Tensor> tensors;
        for (py::handle v : values) tensors.push_back(from_numpy(v, "FeedRecord"));
        s::FeedRecord(record, tensors, ws.native());
      },
      py::arg("record"), py::arg("values"), py::arg("ws"));
  m.def(
      "FetchRecord", [](const s::Field& record, PyWorkspace& ws) { return s::FetchRecord(record, ws.native()); },
      py::arg("record"), py::arg("ws"));
  m.def("from_blob_list",
        [](const s::Field& schema, const py::handle& blobs) { return s::from_blob_list(schema, blob_list(blobs)); });
  m.def(
      "from_column_list", [](const std::vector<std::string>& names) { return s::from_column_list(names); },
      py::arg("col_names"));

  // dataio (Caffe2's dataio.Reader, Writer, ReaderWithLimit, ...): readers are built into pipes.
  // A C++ reader has Caffe2's Reader methods, so that a Python reader can wrap one (`self._reader.read(read_net)`).
  py::class_<Reader, std::shared_ptr<Reader>>(m, "Reader", "Reads batches of records in nets (dataio.Reader).")
      .def("schema", &Reader::schema)
      .def(
          "setup_ex",
          [](Reader& r, const py::handle& init_net, const py::handle& finish_net) {
            r.setup_ex(net_of(init_net, "setup_ex"), optional_net(finish_net, "setup_ex"));
          },
          py::arg("init_net"), py::arg("finish_net"))
      .def(
          "read_ex",
          [](Reader& r, const py::handle& local_init_net, const py::handle& local_finish_net) {
            ReadNets nets = r.read_ex(net_of(local_init_net, "read_ex"), net_of(local_finish_net, "read_ex"));
            py::list steps;
            for (const StepOrNet& x : nets.nets) steps.append(py_step(x));
            return py::make_tuple(steps, blob_reference(nets.should_stop),
                                  nets.fields ? py::object(py_blobs(*nets.fields)) : py::object(py::none()));
          },
          py::arg("local_init_net"), py::arg("local_finish_net"))
      .def(
          "read_record_ex",
          [](Reader& r, const py::handle& local_init_net, const py::handle& local_finish_net) {
            ReadRecordNets nets =
                r.read_record_ex(net_of(local_init_net, "read_record_ex"), net_of(local_finish_net, "read_record_ex"));
            py::list steps;
            for (const StepOrNet& x : nets.nets) steps.append(py_step(x));
            py::object fields = !nets.has_record ? py::object(py::none())
                                : nets.record    ? py::cast(*nets.record)
                                                 : py::object(py_blobs(nets.fields));
            return py::make_tuple(steps, blob_reference(nets.should_stop), fields);
          },
          py::arg("local_init_net"), py::arg("local_finish_net"))
      .def(
          "read",
          [](Reader& r, const py::handle& read_net) {
            Net net = net_of(read_net, "read");
            ReadOutput out = r.read(net);
            return py::make_tuple(blob_reference(out.should_stop), py_blobs(out.fields));
          },
          py::arg("read_net"))
      .def(
          "read_record",
          [](Reader& r, const py::handle& read_net) {
            Net net = net_of(read_net, "read_record");
            if (!r.has_schema()) {
              ReadOutput out = r.read(net);
              return py::make_tuple(blob_reference(out.should_stop), py_blobs(out.fields));
            }
            auto [should_stop, record] = r.read_record(net);
            return py::make_tuple(blob_reference(should_stop), py::cast(*record));
          },
          py::arg("read_net"))
      .def(
          "reset",
          [](Reader& r, const py::handle& net) {
            Net n = net_of(net, "reset");
            r.reset(n);
          },
          py::arg("net"))
      .def(
          "execution_step",
          [](const std::shared_ptr<Reader>& r, const py::handle& reader_net_name,
             const py::handle& external_should_stop) {
            return reader_execution_step(*r, reader_net_name, external_should_stop);
          },
          py::arg("reader_net_name") = py::none(), py::arg("external_should_stop") = py::none())
      .def("__repr__", [](const Reader& r) { return "<" + r.type_name() + ">"; });
  // A Python reader's execution_step (dataio.Reader.execution_step): the C++ one over its PythonReader.
  m.def(
      "reader_execution_step",
      [](const py::handle& reader, const py::handle& reader_net_name, const py::handle& external_should_stop) {
        return reader_execution_step(*reader_argument(reader, "execution_step"), reader_net_name, external_should_stop);
      },
      py::arg("reader"), py::arg("reader_net_name") = py::none(), py::arg("external_should_stop") = py::none());
  py::class_<Writer, std::shared_ptr<Writer>>(m, "Writer", "Writes batches of records in nets (dataio.Writer).");
  py::class_<ReaderWithLimitBase, Reader, std::shared_ptr<ReaderWithLimitBase>>(m, "ReaderWithLimitBase")
      .def("data_finished", [](const ReaderWithLimitBase& r) { return blob_reference(r.data_finished()); })
      .def_property_readonly("reader", &ReaderWithLimitBase::reader);
  py::class_<ReaderWithLimit, ReaderWithLimitBase, std::shared_ptr<ReaderWithLimit>>(
      m, "ReaderWithLimit", "Stops after num_iter reads, across all threads (dataio.ReaderWithLimit).")
      .def(py::init([](const py::handle& reader, std::optional<int64_t> num_iter) {
             return std::make_shared<ReaderWithLimit>(reader_argument(reader, "ReaderWithLimit"), num_iter);
           }),
           py::arg("reader"), py::arg("num_iter") = 1);
  py::class_<ReaderWithTimeLimit, ReaderWithLimitBase, std::shared_ptr<ReaderWithTimeLimit>>(
      m, "ReaderWithTimeLimit", "Stops reading once duration seconds have passed (dataio.ReaderWithTimeLimit).")
      .def(py::init([](const py::handle& reader, double duration) {
             return std::make_shared<ReaderWithTimeLimit>(reader_argument(reader, "ReaderWithTimeLimit"), duration);
           }),
           py::arg("reader"), py::arg("duration") = 0.0);
  m.def("CountUntil", &CountUntil, py::arg("num_iter"));
  py::class_<ReaderWithDelay, Reader, std::shared_ptr<ReaderWithDelay>>(
      m, "ReaderWithDelay",
      "Sleeps delay seconds before every read of reader (the ReaderWithDelay of Caffe2's "
      "dataio tests).")
      .def(py::init([](const py::handle& reader, double delay) {
             return std::make_shared<ReaderWithDelay>(reader_argument(reader, "ReaderWithDelay"), delay);
           }),
           py::arg("reader"), py::arg("delay"));
  py::class_<CompositeReader, Reader, std::shared_ptr<CompositeReader>>(
      m, "CompositeReader", "One record from each reader per read, as Struct(name: schema) (dataio.CompositeReader).")
      .def(py::init([](std::vector<std::string> names, const py::iterable& readers) {
             std::vector<std::shared_ptr<Reader>> list;
             for (py::handle r : readers) list.push_back(reader_argument(r, "CompositeReader"));
             return std::make_shared<CompositeReader>(std::move(names), std::move(list));
           }),
           py::arg("names"), py::arg("readers"));
  py::class_<ReaderBuilder, std::shared_ptr<ReaderBuilder>>(m, "ReaderBuilderBase",
                                                            "A ReaderBuilder of the C++ runtime.")
      .def("schema", &ReaderBuilder::schema)
      .def("setup",
           [](ReaderBuilder& b, py::kwargs kwargs) { return data_finished_dict(b.setup(builder_args(kwargs))); })
      .def("new_reader",
           [](ReaderBuilder& b, py::kwargs kwargs) { return source_object(b.new_reader(builder_args(kwargs))); });
  py::class_<CompositeReaderBuilder, ReaderBuilder, std::shared_ptr<CompositeReaderBuilder>>(
      m, "CompositeReaderBuilder",
      "Builds CompositeReaders from one reader builder per name "
      "(dataio.CompositeReaderBuilder).")
      .def(py::init([](std::vector<std::string> names, const py::sequence& reader_builders) {
             std::vector<std::shared_ptr<ReaderBuilder>> builders;
             for (py::handle b : reader_builders) builders.push_back(reader_builder_of(b));
             return std::make_shared<CompositeReaderBuilder>(std::move(names), std::move(builders));
           }),
           py::arg("names"), py::arg("reader_builders"));

  // dataset (Caffe2's dataset.Dataset).
  py::class_<Dataset>(m, "Dataset", "A table of named columns stored in blobs (dataset.Dataset).")
      .def(py::init([](const py::handle& fields, const py::handle& name) {
             const std::string n = name.is_none() ? "dataset" : std::string(py::str(name));
             if (py::isinstance<s::Field>(fields)) return Dataset(fields.cast<s::Field>(), n);
             return Dataset(fields.cast<std::vector<std::string>>(), n);
           }),
           py::arg("fields"), py::arg("name") = py::none())
      .def(
          "reader",
          [](const Dataset& d, const py::handle& init_net, const py::handle& cursor_name, int64_t batch_size,
             bool enforce_batch_size) {
            DatasetReaderOptions o;
            o.init_net = optional_net(init_net, "Dataset.reader");
            if (!cursor_name.is_none()) o.cursor_name = py::str(cursor_name);
            o.batch_size = batch_size;
            o.enforce_batch_size = enforce_batch_size;
            return d.reader(o);
          },
          py::arg("init_net") = py::none(), py::arg("cursor_name") = py::none(), py::arg("batch_size") = 1,
          py::arg("enforce_batch_size") = false)
      .def(
          "writer",
          [](const Dataset& d, const py::handle& init_net) { return d.writer(optional_net(init_net, "writer")); },
          py::arg("init_net") = py::none())
      .def("init_empty",
           [](Dataset& d, const py::handle& init_net) {
             Net n = net_of(init_net, "Dataset.init_empty");
             return d.init_empty(n);
           })
      .def("content", &Dataset::content)
      .def("field_names", &Dataset::field_names)
      .def("get_blobs",
           [](const Dataset& d) {
             py::list out;
             for (const BlobRef& b : d.get_blobs()) out.append(blob_reference(b));
             return out;
           })
      .def_property_readonly("name", &Dataset::name);

  // queue_util (Caffe2's queue_util.Queue): a bounded queue of records between pipes.
  py::class_<Pipe, std::shared_ptr<Pipe>>(m, "Pipe", "Both ends of a stream of records (dataio.Pipe).")
      .def("reader", &Pipe::reader)
      .def("writer", &Pipe::writer);
  py::class_<Queue, Pipe, std::shared_ptr<Queue>>(m, "Queue", "A bounded queue of records (queue_util.Queue).")
      .def(py::init([](int64_t capacity, std::optional<s::Field> schema, const std::string& name,
                       int64_t num_dequeue_records) {
             QueueOptions o;
             o.schema = std::move(schema);
             o.name = name;
             o.num_dequeue_records = num_dequeue_records;
             return Queue::make(capacity, o);
           }),
           py::arg("capacity"), py::arg("schema") = py::none(), py::arg("name") = "queue",
           py::arg("num_dequeue_records") = 1)
      .def("capacity", &Queue::capacity)
      .def("__repr__", [](const Queue& q) { return "Queue(" + q.queue().name() + ")"; });

  // pipeline (Caffe2's pipeline.pipe, pipe_and_output).
  m.def(
      "pipe",
      [](const py::handle& input, const py::handle& output, int32_t num_threads, const py::handle& processor,
         const py::handle& name, std::optional<int64_t> capacity, PyTaskGroup* group, int32_t num_runtime_threads) {
        return source_object(pipe(source_of(input), pipe_options(output, num_threads, processor, name, capacity, group,
                                                                 num_runtime_threads)));
      },
      py::arg("input"), py::arg("output") = py::none(), py::arg("num_threads") = 1, py::arg("processor") = py::none(),
      py::arg("name") = py::none(), py::arg("capacity") = py::none(), py::arg("group") = nullptr,
      py::arg("num_runtime_threads") = 1);
  m.def(
      "pipe_and_output",
      [](const py::handle& input, const py::handle& output, int32_t num_threads, const py::handle& processor,
         const py::handle& name, std::optional<int64_t> capacity, PyTaskGroup* group, int32_t num_runtime_threads,
         const py::handle& final_outputs) {
        // Caffe2: a list of outputs gives a list back, one blob its one output.
        const bool listed = py::isinstance<py::list>(final_outputs) || py::isinstance<py::tuple>(final_outputs);
        std::vector<TaskOutput> outs;
        if (!final_outputs.is_none())
          for (const BlobRef& b : blob_list(final_outputs)) outs.push_back(TaskOutput(b));
        PipeAndOutput r = pipe_and_output(
            source_of(input), pipe_options(output, num_threads, processor, name, capacity, group, num_runtime_threads),
            outs);
        if (final_outputs.is_none()) return py::make_tuple(source_object(r.result), py::none());
        if (!listed) return py::make_tuple(source_object(r.result), py::cast(r.outputs.at(0)));
        py::list list;
        for (const TaskOutput& o : r.outputs) list.append(py::cast(o));
        return py::make_tuple(source_object(r.result), list);
      },
      py::arg("input"), py::arg("output") = py::none(), py::arg("num_threads") = 1, py::arg("processor") = py::none(),
      py::arg("name") = py::none(), py::arg("capacity") = py::none(), py::arg("group") = nullptr,
      py::arg("num_runtime_threads") = 1, py::arg("final_outputs") = py::none());
}

}  // namespace moka::python
