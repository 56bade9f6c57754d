"""moka.session: LocalSession (caffe2.python.session's name) and MpiSession over moka's C++ sessions.

moka differs from Caffe2 here (docs/decisions.md, decision 1): each node runs in a workspace of its own, not all
in the one current workspace; ``LocalSession(shared_workspace=True)`` puts every node in one workspace, as
Caffe2 did. Runs release the GIL; Ctrl-C stops a run and raises KeyboardInterrupt.

``MpiSession(node_ranks=None)`` (moka's; Caffe2 had no multi-process session of this layer) runs the same
runnables across the ranks of an Open MPI job (``mpirun -np N python3 prog.py``): every rank runs the same
program, each node runs on one rank (``node_ranks`` pins nodes to ranks, the others go round the ranks in
order), and ``run`` returns on every rank once every node is done, with the same outcome everywhere. Making
the session, every run and every ``fetch`` are collective: every rank makes the same calls in the same order.
Without a launcher the process is a job of one rank that hosts every node (docs/distributed.md)."""
from moka import _C

__all__ = ["Session", "LocalSession", "MpiSession", "launched_by_mpi"]

launched_by_mpi = _C.launched_by_mpi


class _Runs:
    """What every session adds to the C++ one: Caffe2's run signature, fetch_output and ``with``."""

    def run(self, runnable, workspace_type=None):
        _C.Session.run(self, runnable)

    def fetch_output(self, output):
        return output.fetch()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


class LocalSession(_Runs, _C.LocalSession):
    def __init__(self, ws=None, shared_workspace=False):
        if ws is not None:
            raise NotImplementedError("LocalSession(ws=...): a session over a given workspace is not available "
                                      "from Python yet (use shared_workspace=True)")
        super().__init__(bool(shared_workspace))


class MpiSession(_Runs, _C.MpiSession):
    __doc__ = __doc__.split("\n\n")[2]

    def __init__(self, node_ranks=None):
        super().__init__(dict(node_ranks or {}))


Session = LocalSession
