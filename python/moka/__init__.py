"""moka: dataflow jobs over moka's C++ runtime, with caffe2.python's module layout (docs/python.md).

A Caffe2 program of this layer runs with ``from caffe2.python import core, workspace`` changed to
``from moka import core, workspace``. moka's errors are Python exceptions: every one is a ``moka.Error`` and
also the built-in exception a caller would catch for it (``moka.InvalidInput`` is a ``ValueError``,
``moka.NotFound`` a ``LookupError``, ``moka.TypeError`` a ``TypeError``, ``moka.RuntimeError`` a
``RuntimeError``); messages are the C++ runtime's, unchanged.
"""
from moka._C import (Cancelled, CorruptData, Error, InvalidInput, NotFound, OutOfMemory, RuntimeError,
                     TypeError)

__all__ = ["Error", "InvalidInput", "CorruptData", "TypeError", "NotFound", "RuntimeError", "OutOfMemory",
           "Cancelled", "core", "workspace", "net_builder", "task", "session", "schema", "dataset", "dataio",
           "queue_util", "pipeline", "checkpoint"]

from moka import core, net_builder, session, task, workspace  # noqa: E402  (after the errors they raise)
from moka import checkpoint, dataio, dataset, pipeline, queue_util, schema  # noqa: E402
