"""moka.dataio: readers and writers of pipelines (caffe2.python.dataio's names) over moka's C++ readers
(moka/data/reader.h, limited_reader.h): Reader, Writer, Pipe, ReaderWithLimit, ReaderWithTimeLimit, CountUntil,
ReaderWithDelay (moka's, for tests), CompositeReader, ReaderBuilder and CompositeReaderBuilder.

Readers are built into pipes (moka.pipeline.pipe); ``ReaderWithLimit(reader, num_iter=1).data_finished()`` is the
blob that tells whether the underlying reader ran out (valid after the task, as Caffe2 used it)."""
from moka import _C

__all__ = ["Reader", "Writer", "Pipe", "ReaderWithLimitBase", "ReaderWithLimit", "ReaderWithTimeLimit",
           "CountUntil", "ReaderWithDelay", "CompositeReader", "ReaderBuilder", "CompositeReaderBuilder"]

Reader = _C.Reader
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
