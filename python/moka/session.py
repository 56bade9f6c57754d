"""moka.session: LocalSession (caffe2.python.session's name) over moka's C++ LocalSession.

moka differs from Caffe2 here (docs/decisions.md, decision 1): each node runs in a workspace of its own, not all
in the one current workspace; ``LocalSession(shared_workspace=True)`` puts every node in one workspace, as
Caffe2 did. Runs release the GIL; Ctrl-C stops a run and raises KeyboardInterrupt."""
from moka import _C

__all__ = ["LocalSession", "Session"]


class LocalSession(_C.LocalSession):
    def __init__(self, ws=None, shared_workspace=False):
        if ws is not None:
            raise NotImplementedError("LocalSession(ws=...): a session over a given workspace is not available "
                                      "from Python yet (use shared_workspace=True)")
        super().__init__(bool(shared_workspace))

    def run(self, runnable, workspace_type=None):
        _C.LocalSession.run(self, runnable)

    def fetch_output(self, output):
        return output.fetch()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


Session = LocalSession
