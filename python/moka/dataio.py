"""moka.dataio: readers and writers of pipelines (caffe2.python.dataio's names) over moka's C++ readers
(moka/data/reader.h, limited_reader.h): Reader, Writer, Pipe, ReaderWithLimit, ReaderWithTimeLimit, CountUntil.

Readers are built into pipes (moka.pipeline.pipe); ``ReaderWithLimit(reader, num_iter=1).data_finished()`` is the
blob that tells whether the underlying reader ran out (valid after the task, as Caffe2 used it)."""
from moka import _C

__all__ = ["Reader", "Writer", "Pipe", "ReaderWithLimitBase", "ReaderWithLimit", "ReaderWithTimeLimit",
           "CountUntil"]

Reader = _C.Reader
Writer = _C.Writer
Pipe = _C.Pipe
ReaderWithLimitBase = _C.ReaderWithLimitBase
ReaderWithLimit = _C.ReaderWithLimit
ReaderWithTimeLimit = _C.ReaderWithTimeLimit
CountUntil = _C.CountUntil
