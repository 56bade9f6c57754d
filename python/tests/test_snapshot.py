"""moka.snapshot.SnapshotManager (the seeds'; decision 10): exports of chosen blobs of one node, with
CheckpointManager's interface, never used to resume (docs/python.md §7)."""
import numpy as np
import pytest

import moka
from moka.checkpoint import JobRunner, Job
from moka.net_builder import ops
from moka.session import LocalSession
from moka.snapshot import SnapshotManager
from moka.task import Node, Task


def make_blobs(session):
    with Node("n"), Task() as task:
        ops.Const(np.int64(5), blob_out="w")
        ops.Const(np.int64(6), blob_out="b")
        ops.Const(np.int64(7), blob_out="other")
    session.run(task)


def test_a_snapshot_exports_the_chosen_blobs_and_loads_them_back(tmp_path):
    session = LocalSession()
    make_blobs(session)
    snap = SnapshotManager(str(tmp_path), "n", "minidb", blob_names=["w", "b"])
    session.run(snap.init(nodes=["n"]))
    assert snap.blob_list() == ["w", "b"]
    session.run(snap.save(3))
    assert (tmp_path / "n.snapshot.3").exists()
    assert not (tmp_path / "n.3").exists()
    assert snap.snapshot_epochs() == [3]

    fresh = LocalSession()
    reader = SnapshotManager(str(tmp_path), "n", "minidb", blob_names=["w", "b"])
    fresh.run(reader.init(nodes=["n"]))
    fresh.run(reader.load(3))
    assert int(fresh.fetch("n", "w")) == 5 and int(fresh.fetch("n", "b")) == 6
    assert not fresh.workspace("n").has_blob("other")
    exists = reader.check_db_exists(4)
    fresh.run(exists)
    assert not exists.outputs()[0].fetch()


def test_retention_keeps_the_newest_snapshots(tmp_path):
    session = LocalSession()
    make_blobs(session)
    snap = SnapshotManager(str(tmp_path), "n", "minidb", blob_names=["w"], keep_last=2)
    session.run(snap.init(nodes=["n"]))
    for epoch in range(1, 5):
        session.run(snap.save(epoch))
    assert snap.apply_retention() == [1, 2]
    assert snap.snapshot_epochs() == [3, 4]


def test_a_snapshot_manager_is_one_node_and_never_a_checkpoint_manager(tmp_path):
    snap = SnapshotManager(str(tmp_path), "n", "minidb")
    with pytest.raises(moka.InvalidInput, match="SnapshotManager only supports single node."):
        snap.init(nodes=["a", "b"])
    with pytest.raises(TypeError):
        JobRunner(Job(), snap)
