"""moka.pipeline: pipe and pipe_and_output (caffe2.python.pipeline's names) over moka's C++ pipes
(moka/data/pipeline.h).

``pipe(input, output=None, num_threads=1, processor=None, name=None, capacity=None, group=None,
num_runtime_threads=1)`` streams a Reader, Queue or Dataset into a Writer, Queue or Dataset (a new Queue of
``capacity`` when output is None) in a new Task and returns the output queue. A processor is a Python function of
the record read, called once at build time inside a fresh NetBuilder (so ``ops.X(...)`` in it builds the per-record
nets, as in Caffe2); it returns None, a record, a list of nets or an ``Output``. To run Python per record, use
``ops.Python(f)`` inside the processor."""
from moka import _C

__all__ = ["pipe", "pipe_and_output", "Output", "DEFAULT_QUEUE_CAPACITY"]

DEFAULT_QUEUE_CAPACITY = 100

pipe = _C.pipe
pipe_and_output = _C.pipe_and_output


class Output:
    """What a processor may return: nets to run per record, the record passed on, a blob that stops the stream."""
    _moka_processor_output = True

    def __init__(self, nets=None, record=None, should_stop=None):
        self.nets = nets
        self.record = record
        self.should_stop = should_stop
