"""moka.core: nets, blob references, execution steps and plans (caffe2.python.core's names) over moka's C++
builders (moka/builder/): names, deduplication and the checks of every added operator are the C++ runtime's.

Where moka differs from Caffe2 (docs/decisions.md), so does this module: an operator is checked against its
registered schema when it is added, so ``net.NoSuchOp(...)`` or a misspelt argument raises
``moka.InvalidInput`` at once, naming the net and operator (Caffe2 found out when the net ran); ``Proto()``
returns the definition as moka's plan JSON (docs/plan-format.md) read into attribute-accessible objects — the
field names of Caffe2's protobufs — and ``SerializeToString()`` gives its JSON text, which ``workspace.RunPlan``
and ``moka run`` take.
"""
import json

from moka import _C

__all__ = ["BlobReference", "Net", "ExecutionStep", "execution_step", "Plan", "NameScope", "ScopedName",
           "ScopedBlobReference", "CurrentNameScope", "DataType", "to_execution_step"]


class DataType:
    """Caffe2's TensorProto.DataType values (the ``dtype`` argument of fill operators)."""
    UNDEFINED = 0
    FLOAT = 1
    INT32 = 2
    BYTE = 3
    STRING = 4
    BOOL = 5
    UINT8 = 6
    INT8 = 7
    UINT16 = 8
    INT16 = 9
    INT64 = 10
    FLOAT16 = 12
    DOUBLE = 13


NameScope = _C.NameScope
CurrentNameScope = _C.current_name_scope
ScopedName = _C.scoped_name


class Proto:
    """A definition read from its JSON: fields as attributes (``proto.op[0].type``), lists as lists, absent
    repeated fields as empty lists; ``SerializeToString()`` is the JSON text (bytes)."""

    _REPEATED = {"op", "input", "output", "arg", "network", "execution_step", "substep", "external_input",
                 "external_output", "ints", "floats", "strings", "nets", "control_input"}

    def __init__(self, fields):
        self._fields = fields

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._fields:
            if name in Proto._REPEATED:
                return []
            raise AttributeError(f"this definition has no field \"{name}\"")
        return Proto._wrap(self._fields[name])

    @staticmethod
    def _wrap(value):
        if isinstance(value, dict):
            return Proto(value)
        if isinstance(value, list):
            return [Proto._wrap(v) for v in value]
        return value

    def HasField(self, name):
        return name in self._fields

    def to_dict(self):
        return self._fields

    def SerializeToString(self):
        return json.dumps(self._fields).encode()

    def __eq__(self, other):
        return isinstance(other, Proto) and self._fields == other._fields

    def __repr__(self):
        return json.dumps(self._fields, indent=2)


class BlobReference:
    """A blob's name, and the net that made it (so ``blob.Add([...], ...)`` adds an operator to that net)."""

    def __init__(self, name, net=None):
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        self._name = str(name)
        self._from_net = net

    @property
    def _moka_blob_name(self):  # what the native builders read a blob's name from
        return self._name

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        if isinstance(other, str):
            return self._name == other
        if isinstance(other, BlobReference):
            return self._name == other._name
        return NotImplemented

    def __str__(self):
        return self._name

    def __repr__(self):
        return f"BlobReference(\"{self._name}\")"

    def __add__(self, other):
        if not isinstance(other, str):
            raise TypeError("a BlobReference can only be extended by a str")
        return BlobReference(self._name + other, self._from_net)

    def __radd__(self, other):
        if not isinstance(other, str):
            raise TypeError("a BlobReference can only be extended by a str")
        return BlobReference(other + self._name, self._from_net)

    def Net(self):
        return self._from_net

    def GetNameScope(self):
        return self._name[:self._name.rfind("/") + 1]

    def GetUnscopedName(self):
        return self._name[self._name.rfind("/") + 1:]

    def _CreateAndAddToNet(self, op_type, inputs=None, *args, **kwargs):
        if inputs is None:
            inputs = []
        elif isinstance(inputs, (str, bytes, BlobReference)):
            inputs = [inputs]
        return self._from_net.__getattr__(op_type)([self] + list(inputs), *args, **kwargs)

    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        if self._from_net is None:
            raise AttributeError(f"blob \"{self._name}\" belongs to no net, so it cannot add operator {op_type}")
        return lambda *args, **kwargs: self._CreateAndAddToNet(op_type, *args, **kwargs)


def ScopedBlobReference(name, *args, **kwargs):
    return BlobReference(ScopedName(name), *args, **kwargs)


def _scoped(blobs):
    """Caffe2's _RectifyInputOutput: names given as str get the current name scope; BlobReferences are kept."""
    if blobs is None:
        return []
    if isinstance(blobs, (str, bytes)):
        return [ScopedName(blobs.decode("utf-8") if isinstance(blobs, bytes) else blobs)]
    if isinstance(blobs, BlobReference):
        return [blobs]
    return [b if isinstance(b, BlobReference) else ScopedName(b.decode("utf-8") if isinstance(b, bytes) else b)
            for b in blobs]


def _refs(names, net):
    refs = [BlobReference(n, net) for n in names]
    if len(refs) == 1:
        return refs[0]
    return tuple(refs)


class Net:
    """A net under construction (Caffe2's core.Net): operators added by attribute (``net.Add(inputs, outputs,
    **args)``; outputs None for one automatic name, a count, a name or a list of names)."""

    def __init__(self, name_or_proto, inplace=False):
        if isinstance(name_or_proto, Net):
            self._net = _C.Net.from_json(name_or_proto._net.to_json())
        elif isinstance(name_or_proto, _C.Net):
            self._net = name_or_proto
        elif isinstance(name_or_proto, Proto):
            self._net = _C.Net.from_json(json.dumps(name_or_proto.to_dict()))
        elif isinstance(name_or_proto, dict):
            self._net = _C.Net.from_json(json.dumps(name_or_proto))
        else:
            self._net = _C.Net(str(name_or_proto))

    def Name(self):
        return self._net.name

    def Proto(self):
        return Proto(json.loads(self._net.to_json()))

    def Clone(self, name):
        fields = json.loads(self._net.to_json())
        fields["name"] = name
        return Net(_C.Net.from_json(json.dumps(fields), unique_name=False))

    def Const(self, array, blob_out=None, dtype=None):
        """A constant (Caffe2's net.Const): int → int64, float → float64 (decision 32; Caffe2 made it float32),
        bool → bool, str → string; a numpy value keeps its own dtype; ``dtype`` (a DataType) converts exactly."""
        if blob_out is not None and not isinstance(blob_out, BlobReference):
            blob_out = ScopedName(str(blob_out))
        return BlobReference(self._net.const(array, blob_out, dtype), self)

    def Python(self, f, grad_f=None, pass_workspace=False, python_func_type=None, *args, **kwargs):
        """A Python operator in this net (see net_builder.ops.Python): ``net.Python(f)(inputs, outputs)``."""
        if grad_f is not None or pass_workspace or python_func_type is not None:
            raise NotImplementedError("Net.Python: grad_f, pass_workspace and python_func_type are not supported")

        def add(inputs, outputs=0, **kw):
            outs = outputs if isinstance(outputs, int) else _scoped(outputs)
            names = _C.python_op(f, _scoped(inputs), outs, self._net)
            return _refs(names, self) if names else None
        return add

    def NextName(self, prefix=None, output_id=None):
        return BlobReference(self._net.next_name(prefix or "", output_id), self)

    def NextBlob(self, prefix="unnamed"):
        return BlobReference(self._net.next_blob(str(prefix)), self)

    def NextScopedBlob(self, prefix="unnamed"):
        return BlobReference(self._net.next_scoped_blob(str(prefix)), self)

    def BlobIsDefined(self, blob):
        return self._net.is_defined(blob)

    def AddExternalInput(self, *inputs):
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = inputs[0]
        refs = [BlobReference(self._net.add_external_input(i), self) for i in inputs]
        return refs[0] if len(refs) == 1 else refs

    def AddExternalOutput(self, *outputs):
        for o in outputs:
            self._net.add_external_output(o)
        return outputs[0] if len(outputs) == 1 else outputs

    def external_inputs(self):
        return [BlobReference(n, self) for n in self.Proto().external_input]

    def external_outputs(self):
        return [BlobReference(n, self) for n in self.Proto().external_output]

    def _CreateAndAddToSelf(self, op_type, inputs, outputs=None, **kwargs):
        kwargs.pop("device_option", None)  # moka runs on the CPU
        outputs = outputs if outputs is None or isinstance(outputs, int) else _scoped(outputs)
        return _refs(self._net.op(op_type, _scoped(inputs), outputs, kwargs), self)

    def __getattr__(self, op_type):
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        return lambda *args, **kwargs: self._CreateAndAddToSelf(op_type, *args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, Net) and self._net == other._net

    def __hash__(self):
        return id(self._net)

    def __str__(self):
        return self.Name()

    def __repr__(self):
        return f"Net(\"{self.Name()}\")"


def _net(x):
    return x if isinstance(x, Net) else Net(x)


class ExecutionStep:
    """A step of a plan (Caffe2's core.ExecutionStep): nets or substeps, run ``num_iter`` times or until a
    should-stop blob is true."""

    def __init__(self, name, nets=None, num_iter=None):
        self._step = name if isinstance(name, _C.ExecutionStep) else _C.ExecutionStep(str(name))
        if nets is not None:
            for n in (nets if isinstance(nets, (list, tuple)) else [nets]):
                self.AddNet(n)
        if num_iter is not None:
            self.SetIter(num_iter)

    def Name(self):
        return self._step.name

    def Proto(self):
        return Proto(json.loads(self._step.to_json()))

    def Nets(self):
        return [Net(n) for n in self._step.nets()]

    def Substeps(self):
        return [ExecutionStep(s) for s in self._step.substeps()]

    def HasNets(self):
        return self._step.has_nets()

    def HasSubsteps(self):
        return self._step.has_substeps()

    def SetIter(self, num_iter):
        self._step.set_iter(int(num_iter))

    def SetShouldStopBlob(self, should_stop_blob):
        self._step.set_should_stop_blob(should_stop_blob)

    def SetOnlyOnce(self, only_once):
        self._step.set_only_once(bool(only_once))

    def SetConcurrentSubsteps(self, concurrent_substeps):
        self._step.set_concurrent_substeps(bool(concurrent_substeps))

    def SetNumConcurrentInstances(self, num_concurrent_instances):
        self._step.set_num_concurrent_instances(int(num_concurrent_instances))

    def SetCreateWorkspace(self, create_workspace):
        self._step.set_create_workspace(bool(create_workspace))

    def RunEveryMillis(self, interval):
        self._step.run_every_millis(int(interval))

    def SetReportNet(self, report_net, report_interval):
        self._step.set_report_net(_net(report_net)._net, int(report_interval))

    def AddSubstep(self, substep):
        self._step.add_substep(substep._step)
        return self

    def AddNet(self, net):
        self._step.add_net(_net(net)._net)
        return self

    def __repr__(self):
        return f"ExecutionStep(\"{self.Name()}\")"


def execution_step(default_name, steps_or_nets, num_iter=None, report_net=None, report_interval=None,
                   concurrent_substeps=None, should_stop_blob=None, only_once=None,
                   num_concurrent_instances=None, create_workspace=False, run_every_ms=None):
    """A step from a net, a step, or a list of either (Caffe2's core.execution_step); a single step is returned
    as it is when nothing else is set."""
    return ExecutionStep(_C.execution_step(
        default_name, steps_or_nets, num_iter=num_iter,
        report_net=_net(report_net)._net if report_net is not None else None, report_interval=report_interval,
        concurrent_substeps=concurrent_substeps, should_stop_blob=should_stop_blob, only_once=only_once,
        num_concurrent_instances=num_concurrent_instances, create_workspace=bool(create_workspace),
        run_every_ms=int(run_every_ms or 0)))


class Plan:
    """A plan: top-level steps run in order, and the nets they name (Caffe2's core.Plan)."""

    def __init__(self, name_or_step):
        if isinstance(name_or_step, ExecutionStep):
            self._plan = _C.Plan(name_or_step._step)
        else:
            self._plan = _C.Plan(str(name_or_step))

    def Name(self):
        return self._plan.name

    def AddStep(self, step):
        if not isinstance(step, ExecutionStep):
            raise TypeError(f"plan \"{self.Name()}\": AddStep takes an ExecutionStep, not {type(step).__name__}")
        self._plan.add_step(step._step)

    def Steps(self):
        return [ExecutionStep(s) for s in self._plan.steps()]

    def Nets(self):
        return [Net(n) for n in self._plan.nets()]

    def Proto(self):
        return Proto(json.loads(self._plan.to_json()))

    def __repr__(self):
        return f"Plan(\"{self.Name()}\")"


def to_execution_step(step_or_nets, default_name=None):
    """A step from a NetBuilder, a Net, an ExecutionStep or a list of them (Caffe2's core.to_execution_step)."""
    if isinstance(step_or_nets, ExecutionStep) and default_name is None:
        return step_or_nets
    return ExecutionStep(_C.to_execution_step(step_or_nets, default_name or ""))
