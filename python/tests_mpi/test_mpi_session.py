"""moka.session.MpiSession from Python, run by ctest without a launcher (one rank) and under mpirun with 2 and 3
ranks (docs/python.md §7): nodes run on their ranks, outputs and fetches agree on every rank, Python operators
and Allreduce run on the nodes' ranks, an error on one rank raises on all, and a job with checkpoints across
ranks ends, and resumes, as in one process. Every rank runs every test in the same order (the calls are
collective); the checkpoint directory is MOKA_PY_MPI_DIR, the same on every rank."""
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

import moka
from moka import core
from moka.checkpoint import Job, JobRunner, MultiNodeCheckpointManager
from moka.net_builder import ops
from moka.session import LocalSession, MpiSession
from moka.task import Cluster, Node, Task, TaskGroup, WorkspaceType, final_output

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_checkpoint import EXPECTED_TOTALS, build_pipeline  # noqa: E402

NODES = 4


def test_nodes_run_on_their_ranks_and_outputs_agree_everywhere():
    session = MpiSession()
    outputs = []
    with Cluster(), TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        for i in range(NODES):
            with Node("n%d" % i), Task():
                outputs.append(final_output(ops.Const(np.array([i, i * 10]))))
    session.run(tg)
    for i, out in enumerate(outputs):
        np.testing.assert_array_equal(out.fetch(), [i, i * 10])
        assert session.rank_of("n%d" % i) == i % session.size
        assert session.hosts("n%d" % i) == (i % session.size == session.rank)
    assert 0 <= session.rank < session.size


def test_node_ranks_pin_nodes_and_python_operators_run_where_their_node_is():
    last = None
    with MpiSession() as probe:
        last = probe.size - 1
    session = MpiSession(node_ranks={"a": last, "b": 0})
    seen = []

    def where(inputs, outputs):
        seen.append(session.rank)
        outputs[0].feed(np.array([session.rank], dtype=np.int64))

    with Cluster(), TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        for node in ("a", "b"):
            with Node(node), Task():
                ops.Python(where)([], ["rank_seen"])
    session.run(tg)
    assert session.fetch("a", "rank_seen").tolist() == [last]
    assert session.fetch("b", "rank_seen").tolist() == [0]
    # Each rank ran the operators of the nodes it hosts, and only those.
    assert sorted(seen) == sorted(r for r in (last, 0) if r == session.rank)


def test_allreduce_sums_over_nodes_on_every_rank():
    session = MpiSession()
    with Cluster(), TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        for i in range(NODES):
            with Node("n%d" % i), Task():
                cw = ops.CreateCommonWorld([], ["cw"])
                grad = ops.Const(np.array([float(i), 1.0], dtype=np.float32))
                ops.Allreduce([cw, grad], ["sum"])
    session.run(tg)
    for i in range(NODES):
        np.testing.assert_array_equal(session.fetch("n%d" % i, "sum"), np.array([6.0, 4.0], dtype=np.float32))


def test_an_error_on_one_node_raises_on_every_rank_and_the_session_works_on():
    session = MpiSession()
    with Cluster(), TaskGroup(workspace_type=WorkspaceType.GLOBAL) as bad:
        for i in range(NODES):
            with Node("n%d" % i), Task():
                if i == NODES - 1:
                    ops.Add([ops.Const(np.array([1, 2])), ops.Const(np.array([1, 2, 3]))], ["x"])
                else:
                    ops.Const(np.array([i]), blob_out="x")
    with pytest.raises(moka.Error, match="Add"):
        session.run(bad)
    with Cluster(), TaskGroup(workspace_type=WorkspaceType.GLOBAL) as good:
        with Node("n0"), Task():
            ops.Const(np.array([7]), blob_out="y")
    session.run(good)
    assert session.fetch("n0", "y").tolist() == [7]
    with pytest.raises(moka.NotFound):
        session.fetch("n0", "no_such_blob")


def checkpoint_dir(name):
    """The same directory on every rank (MOKA_PY_MPI_DIR; without it, one rank's own)."""
    root = os.environ.get("MOKA_PY_MPI_DIR") or os.path.join(tempfile.gettempdir(), "moka-py-mpi-%d" % os.getpid())
    return os.path.join(root, name)


def test_a_job_with_checkpoints_across_ranks_ends_and_resumes_as_in_one_process():
    path = checkpoint_dir("job")
    session = MpiSession()
    if session.rank == 0:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    totals = {}
    with Cluster():
        with Job() as job:
            for node_id in range(3):
                totals[node_id] = build_pipeline(node_id)[0]
    job.compile(LocalSession)

    def check(session):
        for node_id, total in totals.items():
            assert session.fetch("trainer_%d" % node_id, str(total)).tolist() == [EXPECTED_TOTALS[-1]]

    session.run(core.Net("barrier"))  # collective: every rank goes on once rank 0 has emptied the directory
    assert JobRunner(job, MultiNodeCheckpointManager(path, "minidb")).train(session) == len(EXPECTED_TOTALS)
    check(session)
    if session.rank == 0:
        for node_id in range(3):
            assert os.path.exists(os.path.join(path, "trainer_%d.%d" % (node_id, len(EXPECTED_TOTALS))))

    for epoch in (1, 3):
        resumed = MpiSession()
        JobRunner(job, MultiNodeCheckpointManager(path, "minidb"), resume_from_epoch=epoch).train(resumed)
        check(resumed)
