"""moka.trace: timeline traces of runs as Chrome trace-event JSON, which Perfetto opens (docs/tracing.md).

``with Trace("run.json", level="steps"):`` records everything that runs inside the block (levels: ``steps``,
``nets``, ``ops``) and writes the file when the block ends, also when it ends with an exception.
``MOKA_TRACE=run.json`` traces a whole program without changing it."""
from moka import _C

__all__ = ["Trace", "start_trace", "stop_trace", "trace_running"]

start_trace = _C.start_trace
stop_trace = _C.stop_trace
trace_running = _C.trace_running


class Trace:
    """A trace for the duration of a ``with`` block; ``summary`` holds what stop_trace returned."""

    def __init__(self, path, level="steps", sample_period=0.02):
        self.path = str(path)
        self.level = level
        self.sample_period = sample_period
        self.summary = None

    def __enter__(self):
        start_trace(self.path, self.level, self.sample_period)
        return self

    def __exit__(self, *exc):
        self.summary = stop_trace()
        return False
