"""moka.dataio: readers and writers of pipelines (caffe2.python.dataio's names) over moka's C++ readers
(moka/data/reader.h, limited_reader.h): Reader, Writer, Pipe, ReaderWithLimit, ReaderWithTimeLimit, CountUntil,
ReaderWithDelay (moka's, for tests), CompositeReader, ReaderBuilder and CompositeReaderBuilder.

Readers are built into pipes (moka.pipeline.pipe); ``ReaderWithLimit(reader, num_iter=1).data_finished()`` is the
blob that tells whether the underlying reader ran out (valid after the task, as Caffe2 used it).

``Reader`` is Caffe2's base class: subclass it in Python (``read(read_net)`` returning ``(should_stop, fields)``, or
``read_ex``), and pass the reader wherever a reader goes — pipe, ReaderWithLimit, CompositeReader, CachedReader.
The C++ readers are instances of it too, with the same methods, so a Python reader can wrap one."""
from moka import _C, core
from moka.schema import Field, from_blob_list

__all__ = ["Reader", "Writer", "Pipe", "ReaderWithLimitBase", "ReaderWithLimit", "ReaderWithTimeLimit",
           "CountUntil", "ReaderWithDelay", "CompositeReader", "ReaderBuilder", "CompositeReaderBuilder"]


class _ReaderType(type):
    # The C++ readers (_C.Reader) count as dataio.Reader instances, as Caffe2's built-in readers were.
    def __instancecheck__(cls, obj):
        return (cls is Reader and isinstance(obj, _C.Reader)) or super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub):
        return (cls is Reader and issubclass(sub, _C.Reader)) or super().__subclasscheck__(sub)


def _read_result(reader, result):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise _C.TypeError("a reader's %s.read() returns a tuple of (should_stop, fields), not %r"
                           % (type(reader).__name__, result))
    return result


class Reader(metaclass=_ReaderType):
    """Caffe2's dataio.Reader, for readers written in Python: a reader only emits operators into the nets it is
    given, at build time. Override ``read(read_net)`` (return ``(should_stop, fields)``: the blob that turns true
    when nothing is left, and the field blobs) or ``read_ex(local_init_net, local_finish_net)`` (return
    ``(nets, should_stop, fields)``, once per pipe thread or task instance); ``setup_ex(init_net, finish_net)``
    adds one-time work. The methods are called with the GIL taken while the plan is built, never while it runs."""

    def __init__(self, schema=None):
        if schema is not None and not isinstance(schema, Field):
            raise TypeError("Reader: schema must be a schema.Field, not %s" % type(schema).__name__)
        self._schema = schema

    def schema(self):
        if self._schema is None:
            raise _C.InvalidInput("Schema not provided for this reader.")
        return self._schema

    def _set_schema(self, schema):
        self._schema = schema

    def setup_ex(self, init_net, finish_net):
        """One-time work in the task's init net (and finish net); default nothing."""

    def read_ex(self, local_init_net, local_finish_net):
        read_net = core.Net("reader_body")
        should_stop, fields = _read_result(self, self.read(read_net))
        return [read_net], should_stop, fields

    def read_record_ex(self, local_init_net, local_finish_net):
        nets, should_stop, fields = self.read_ex(local_init_net, local_finish_net)
        if self._schema is not None:
            fields = from_blob_list(self._schema, fields)
        return nets, should_stop, fields

    def read(self, read_net):
        raise NotImplementedError("Readers must implement `read`.")

    def reset(self, net):
        raise NotImplementedError("This reader cannot be resetted.")

    def read_record(self, read_net):
        should_stop, fields = _read_result(self, self.read(read_net))
        if self._schema is not None:
            fields = from_blob_list(self._schema, fields)
        return should_stop, fields

    def execution_step(self, reader_net_name=None, external_should_stop=None):
        """(a step that reads until should_stop or external_should_stop, the record or fields it reads into)."""
        return _C.reader_execution_step(self, reader_net_name, external_should_stop)


Writer = _C.Writer
Pipe = _C.Pipe
ReaderWithLimitBase = _C.ReaderWithLimitBase
ReaderWithLimit = _C.ReaderWithLimit
ReaderWithTimeLimit = _C.ReaderWithTimeLimit
CountUntil = _C.CountUntil
ReaderWithDelay = _C.ReaderWithDelay  # Caffe2 defined it in dataio_test.py; moka's C++ has it
CompositeReader = _C.CompositeReader
CompositeReaderBuilder = _C.CompositeReaderBuilder


class ReaderBuilder:
    """Caffe2's dataio.ReaderBuilder: what CompositeReaderBuilder (and a job's reader set-up) builds readers from.

    Subclass it (or write any class with these three methods): ``schema()`` returns the records' schema.Field,
    ``setup(**kwargs)`` prepares the data once and returns a dict of data_finished blobs by name (or None), and
    ``new_reader(**kwargs)`` returns a Reader, a Queue or a Dataset. CompositeReaderBuilder passes its keyword
    arguments through, and ``limiter`` to its last builder only."""

    def schema(self):
        raise NotImplementedError()

    def setup(self, **kwargs):
        raise NotImplementedError()

    def new_reader(self, **kwargs):
        raise NotImplementedError()
