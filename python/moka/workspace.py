"""moka.workspace: the current workspace and the calls that feed, fetch and run in it (caffe2.python.workspace's
names). Blobs come back as numpy arrays (strings as object arrays of bytes, 0-d arrays for scalars); every run
releases the GIL while C++ runs, and Ctrl-C stops it and raises KeyboardInterrupt."""
import json

import numpy as np

from moka import _C as C
from moka import core

__all__ = ["C", "FeedBlob", "FetchBlob", "FetchBlobs", "HasBlob", "Blobs", "Nets", "ResetWorkspace",
           "RunNetOnce", "CreateNet", "RunNet", "RunPlan", "SwitchWorkspace", "CurrentWorkspace", "Workspaces"]

_workspaces = {"default": C.Workspace()}
_current = ["default"]


def _ws():
    return _workspaces[_current[0]]


def CurrentWorkspace():
    return _current[0]


def Workspaces():
    return list(_workspaces)


def SwitchWorkspace(workspace_name, create_if_missing=False):
    """Makes ``workspace_name`` current; a missing one is an error unless ``create_if_missing``."""
    name = str(workspace_name)
    if name not in _workspaces:
        if not create_if_missing:
            raise C.NotFound(f"SwitchWorkspace: no workspace \"{name}\" (create_if_missing=True makes it)")
        _workspaces[name] = C.Workspace()
    _current[0] = name


def ResetWorkspace(root_folder=None):
    """Empties the current workspace: its blobs and nets are gone. Returns True, as Caffe2's."""
    _workspaces[_current[0]] = C.Workspace()
    return True


def FeedBlob(name, arr, device_option=None):
    """Puts ``arr`` (a numpy array, a Python scalar, bytes or str) into blob ``name``, keeping its numpy dtype
    (Python int: int64; float: float64, as numpy.asarray makes them, as in Caffe2). Returns True."""
    return _ws().feed_blob(str(name), arr)


def FetchBlob(name):
    """A copy of blob ``name`` as a numpy array."""
    return _ws().fetch_blob(str(name))


def FetchBlobs(names):
    return [FetchBlob(n) for n in names]


def HasBlob(name):
    return _ws().has_blob(str(name))


def Blobs():
    return list(_ws().blob_names())


def Nets():
    return list(_ws().net_names())


def _native_net(net):
    """A net for the native workspace: a core.Net's C++ net, or the JSON text of a definition."""
    if isinstance(net, core.Net):
        return net._net
    if isinstance(net, core.Proto):
        return json.dumps(net.to_dict())
    if isinstance(net, dict):
        return json.dumps(net)
    if isinstance(net, (str, bytes)):
        return net.decode("utf-8") if isinstance(net, bytes) else net
    raise TypeError(f"expected a core.Net, not {type(net).__name__}")


def _native_plan(plan_or_step):
    if isinstance(plan_or_step, core.ExecutionStep):
        plan_or_step = core.Plan(plan_or_step)
    if isinstance(plan_or_step, core.Plan):
        return plan_or_step._plan
    if isinstance(plan_or_step, core.Proto):
        return json.dumps(plan_or_step.to_dict())
    if isinstance(plan_or_step, dict):
        return json.dumps(plan_or_step)
    if isinstance(plan_or_step, (str, bytes)):  # a plan's JSON text (Caffe2 passed a serialized PlanDef)
        return plan_or_step.decode("utf-8") if isinstance(plan_or_step, bytes) else plan_or_step
    raise TypeError(f"RunPlan takes a core.Plan or core.ExecutionStep, not {type(plan_or_step).__name__}")


def RunNetOnce(net):
    """Instantiates ``net``, runs it once and forgets it. Returns True; an error raises."""
    _ws().run_net_once(_native_net(net))
    return True


def CreateNet(net, overwrite=False, input_blobs=None):
    """Instantiates ``net`` in the current workspace under its name (an existing one only with ``overwrite``)."""
    for b in input_blobs or []:
        if not HasBlob(b):
            FeedBlob(b, np.zeros((0,), dtype=np.float32))
    _ws().create_net(_native_net(net), overwrite)
    return True


def RunNet(name, num_iter=1, allow_fail=False):
    """Runs the net created under ``name`` (a core.Net or its name) ``num_iter`` times. With ``allow_fail`` a
    failure returns False instead of raising."""
    try:
        _ws().run_net(name.Name() if isinstance(name, core.Net) else str(name), int(num_iter))
    except C.Error:
        if allow_fail:
            return False
        raise
    return True


def RunPlan(plan_or_step):
    """Runs a core.Plan, or a core.ExecutionStep as a plan of its own. Returns True; an error raises."""
    _ws().run_plan(_native_plan(plan_or_step))
    return True


def _workspace_run(self, obj):
    """``ws.run(plan_or_step_or_net)`` on a C.Workspace, as Caffe2's: a Net runs once, a step or plan as a plan."""
    if isinstance(obj, core.Net):
        self.run_net_once(obj._net)
    else:
        self.run_plan(_native_plan(obj))
    return True


C.Workspace.run = _workspace_run


class _Blob:
    """One blob of a C.Workspace (``ws.blobs[name]``): ``fetch()`` and ``feed(value)``, as Caffe2's."""

    def __init__(self, ws, name):
        self._ws, self._name = ws, name

    def fetch(self):
        return self._ws.fetch_blob(self._name)

    def feed(self, value):
        return self._ws.feed_blob(self._name, value)


class _Blobs:
    """``ws.blobs``: the workspace's blobs by name (``name in ws.blobs``, ``ws.blobs[name].fetch()``)."""

    def __init__(self, ws):
        self._ws = ws

    def __contains__(self, name):
        return self._ws.has_blob(str(name))

    def __getitem__(self, name):
        if not self._ws.has_blob(str(name)):
            raise KeyError(str(name))
        return _Blob(self._ws, str(name))

    def __iter__(self):
        return iter(self._ws.blob_names())

    def __len__(self):
        return len(self._ws.blob_names())

    def keys(self):
        return list(self._ws.blob_names())


C.Workspace.blobs = property(lambda self: _Blobs(self))
C.Workspace.nets = property(lambda self: list(self.net_names()))
