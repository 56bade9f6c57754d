"""moka.net_builder: NetBuilder and ``ops`` (caffe2.python.net_builder's names) over moka's C++ DSL
(moka/builder/net_builder.h, ops*.h). Every ``with`` block is the C++ builder's own block: the Python body runs
while the builder is active, and the builder finishes (freezes, merges, checks) when the block ends."""
from moka import _C
from moka.core import BlobReference, ScopedName

__all__ = ["NetBuilder", "ops", "Operations"]


class NetBuilder(_C.NetBuilder):
    """Builds one step out of nets, steps and nested builders (Caffe2's NetBuilder); ``with NetBuilder() as nb:``
    then ``core.to_execution_step(nb)`` or ``session.run(nb)``."""

    def __init__(self, name=None, initial_scope=None, _stop_blob_required=False, _stop_blob=None,
                 _fullname=None, _use_control_ops=False):
        super().__init__(name or "", _fullname or "", bool(_stop_blob_required), _stop_blob, initial_scope,
                         bool(_use_control_ops))

    @staticmethod
    def current(required=True):
        raise NotImplementedError("NetBuilder.current() is not available from Python yet")


def _scoped(blobs):
    if blobs is None:
        return []
    if isinstance(blobs, (str, bytes)):
        return [ScopedName(blobs.decode() if isinstance(blobs, bytes) else blobs)]
    if isinstance(blobs, BlobReference):
        return [blobs]
    return [b if isinstance(b, BlobReference) else ScopedName(b.decode() if isinstance(b, bytes) else b)
            for b in blobs]


def _refs(names):
    refs = [BlobReference(n) for n in names]
    return refs[0] if len(refs) == 1 else tuple(refs)


class Operations:
    """``ops``: any registered operator by attribute (``ops.Add(inputs, outputs=None, **args)``), added to the
    active NetBuilder's current net, and the DSL's blocks (Caffe2's net_builder.Operations)."""
    _moka_ops = True  # the native record and reader helpers read this as "the active NetBuilder's current net"

    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)

        def add(inputs=None, outputs=None, **kwargs):
            kwargs.pop("device_option", None)
            outs = outputs if outputs is None or isinstance(outputs, int) else _scoped(outputs)
            return _refs(_C.ops.op(op_type, _scoped(inputs), outs, kwargs))
        return add

    def Python(self, f, grad_f=None, pass_workspace=False, python_func_type=None, *args, **kwargs):
        """A Python operator (Caffe2's ops.Python): ``ops.Python(f)(inputs, outputs)``, where f(inputs, outputs)
        gets lists of blobs with ``fetch()``/``feed(value)`` (and ``data``, a numpy view), or ``f`` is
        ``(builder, args, kwargs)`` and each operator instance calls ``builder(*args, **kwargs)`` for its own
        function. The GIL is taken only for the call; an exception raised in it fails the run with its
        traceback in the message. Only the forward function: ``grad_f`` and ``pass_workspace`` are not
        supported (docs/python.md)."""
        if grad_f is not None or pass_workspace or python_func_type is not None:
            raise NotImplementedError("ops.Python: grad_f, pass_workspace and python_func_type are not supported")

        def add(inputs, outputs=0, **kw):
            outs = outputs if isinstance(outputs, int) else _scoped(outputs)
            return _refs(_C.python_op(f, _scoped(inputs), outs))
        return add

    def net(self, net=None, name=None):
        """The active builder's current net (a new one named ``name``), or adds ``net`` (a Net or a step) to it."""
        from moka import core
        got = _C.ops.net(net, name or "")
        return core.Net(got) if isinstance(got, _C.Net) else core.ExecutionStep(got)

    def Const(self, value, blob_out=None, dtype=None):
        """A constant: Python int → int64, float → float64 (decision 32), bool → bool, str → string; a numpy
        value keeps its dtype; 0-d, or 1-d for a list."""
        return BlobReference(_C.ops.Const(value, _scoped(blob_out)[0] if blob_out is not None else None, dtype))

    def stop(self):
        _C.ops.stop()

    def stop_if(self, blob):
        _C.ops.stop_if(blob)

    def loop(self, iters=None, name=None):
        """``with ops.loop(n) as l:`` (``l.iter()`` the counter); ``n`` an int, a blob, or None (until stop_if)."""
        return _C.ops.loop(iters, name or "")

    def stop_guard(self, has_stopped_blob=None, name=None):
        return _C.ops.stop_guard(has_stopped_blob, name or "")

    def If(self, cond, name=None):
        """``with ops.If(c) as c:`` ..., then ``with c.Elif(d) as c:`` ..., ``with c.Else():`` ..."""
        return _C.ops.If(cond, name or "")

    def task_init(self):
        return _C.ops.task_init()

    def task_exit(self):
        return _C.ops.task_exit()

    def task_instance_init(self):
        return _C.ops.task_instance_init()

    def task_instance_exit(self):
        return _C.ops.task_instance_exit()

    def local_init(self):
        return _C.ops.local_init()

    def local_exit(self):
        return _C.ops.local_exit()

    def task_reporter(self, interval_ms=1000, name=None):
        return _C.ops.task_reporter(interval_ms, name or "")


ops = Operations()
