"""moka.checkpoint: Caffe2's checkpoint_test.py, ported in our words with its expected values (docs/python.md §7).

The job is Caffe2's build_pipeline: a trainer node's init group makes a dataset of val = 0..9 and total = [100];
every epoch reads three records into total; the job stops when the reader's data is finished (after epoch 4). Each
node runs in a workspace of its own (decision 1), so totals are fetched through a task's output, as Caffe2's test
did, or from the session's node workspace instead of a shared `ws`."""
import os

import numpy as np
import pytest

import moka
from moka import core
from moka.checkpoint import (CheckpointManager, Job, JobRunner, MultiNodeCheckpointManager, UploadTaskGroupBuilder,
                             db_name, epoch_limiter)
from moka.dataio import ReaderWithLimit
from moka.dataset import Dataset
from moka.net_builder import ops
from moka.pipeline import pipe
from moka.schema import ConstRecord, Struct
from moka.session import LocalSession
from moka.task import Cluster, Node, Task, TaskGroup, WorkspaceType

EXPECTED_TOTALS = [103, 115, 136, 145]


def build_pipeline(node_id):
    with Node("trainer_%d" % node_id):
        with Job.current().init_group, Task():
            data_arr = Struct(("val", np.array(list(range(10)))))
            data = ConstRecord(ops, data_arr)
            ds = Dataset(data, name="dataset:%d" % node_id)
            full_reader = ds.reader(ops)
            total = ops.Const([100])

        def inc_total(rec):
            ops.Add([total, rec.val()], [total])

        epoch_reader = ReaderWithLimit(full_reader, num_iter=3)
        pipe(epoch_reader, processor=inc_total)
        Job.current().add_stop_condition(epoch_reader.data_finished())
    return [total]


def run_with(builder):
    with Cluster():
        with Job() as job:
            outputs = build_pipeline(node_id=0)
        with Node("trainer_0"):  # where total lives (Caffe2 had one workspace for all nodes)
            output_fetcher = Task(step=core.Net("empty"), outputs=outputs)

        def fetch_total(session):
            session.run(output_fetcher)
            return output_fetcher.outputs()[0].fetch()

        session, checkpoint = builder()
        job.compile(LocalSession)
        num_epochs = JobRunner(job, checkpoint).train(session)
        assert num_epochs == len(EXPECTED_TOTALS)
        assert fetch_total(session) == EXPECTED_TOTALS[-1]

        for initial_epoch in range(1, num_epochs + 1):
            session, checkpoint = builder()
            JobRunner(job, checkpoint, resume_from_epoch=initial_epoch).train(session)
            assert fetch_total(session) == EXPECTED_TOTALS[-1]

        for epoch in range(1, num_epochs + 1):
            session.run(checkpoint.load(epoch))
            assert fetch_total(session) == EXPECTED_TOTALS[epoch - 1]


def test_single_checkpoint(tmp_path):
    # One node's manager: files <dir>/temp_node.<epoch>.
    single = tmp_path / "single"
    single.mkdir()
    run_with(lambda: (LocalSession(), CheckpointManager(str(single), "temp_node", "minidb")))
    assert (single / "temp_node.4").exists()

    # One manager per node: files <dir>/trainer_0.<epoch>.
    multi = tmp_path / "multi"
    multi.mkdir()
    run_with(lambda: (LocalSession(), MultiNodeCheckpointManager(str(multi), "minidb")))
    assert (multi / "trainer_0.4").exists()


def test_ckpt_names_and_load_blobs_from_checkpoints(tmp_path):
    # Naming: <prefix>/<node>.<epoch> for every node of the job.
    checkpoint = MultiNodeCheckpointManager(str(tmp_path), "minidb")
    with Cluster():
        with Job() as job:
            for node_id in range(3):
                build_pipeline(node_id)
    job.compile(LocalSession)
    checkpoint.init(job.nodes_to_checkpoint())
    for node_id in range(3):
        assert checkpoint.get_ckpt_db_name("trainer_%d" % node_id, 5) == \
            str(tmp_path) + "/trainer_%d.5" % node_id
    assert db_name(5, "trainer_0", str(tmp_path)) == str(tmp_path) + "/trainer_0.5"

    # Train each node separately, then load one blob of each trainer from every epoch's checkpoint.
    train_dir = tmp_path / "train"
    train_dir.mkdir()
    totals = {}
    for node_id in range(3):
        session = LocalSession()
        manager = MultiNodeCheckpointManager(str(train_dir), "minidb")
        with Cluster():
            with Job() as job:
                totals[node_id] = build_pipeline(node_id)[0]
        job.compile(LocalSession)
        assert JobRunner(job, manager).train(session) == len(EXPECTED_TOTALS)

    session = LocalSession()
    manager = MultiNodeCheckpointManager(str(train_dir), "minidb")
    with Cluster():
        with Job() as job:
            for node_id in range(3):
                build_pipeline(node_id)
    job.compile(LocalSession)
    runner = JobRunner(job, manager)
    names = [str(totals[1]), str(totals[2])]
    for epoch in range(1, len(EXPECTED_TOTALS) + 1):
        assert runner.load_blobs_from_checkpoints(blob_names=names, epoch=epoch, session=session)
        for node_id, name in ((1, names[0]), (2, names[1])):
            ws = session.workspace("trainer_%d" % node_id)
            assert ws.has_blob(name)
            np.testing.assert_array_equal(ws.fetch_blob(name), np.array([EXPECTED_TOTALS[epoch - 1]]))
    assert not runner.load_blobs_from_checkpoints(blob_names=names, epoch=5, session=session)


def test_ckpt_save_failure():
    # Every save fails (the directory does not exist); training still completes, as in Caffe2.
    for node_id in range(3):
        session = LocalSession()
        checkpoint = MultiNodeCheckpointManager("/tmp/path_does_not_exist/", "minidb")
        with Cluster():
            with Job() as job:
                build_pipeline(node_id)
        job.compile(LocalSession)
        assert JobRunner(job, checkpoint).train(session) == len(EXPECTED_TOTALS)


def test_download_group_simple():
    # The download group runs after the epochs and sees their results (Caffe2's ModelHelper nets written out).
    init_net = core.Net("param_init_net")
    train_net = core.Net("train_net")
    download_net = core.Net("download_net")
    for name in ["input1", "input2", "output", "download_result"]:
        init_net.ConstantFill([], [name], shape=[8], value=1.0)  # Caffe2's run_once=0 is not an argument in moka
    train_net.Add(["input1", "input2"], ["output"])
    download_net.Copy(["output"], ["download_result"])
    with Job() as job:
        with Node("trainer:0"):
            with job.init_group:
                Task(step=init_net)
            with job.epoch_group:
                with Task():
                    with ops.loop(1):
                        ops.net(train_net)
            with job.download_group:
                Task(step=download_net)
            epoch_limiter(job, 1)
    session = LocalSession()
    assert JobRunner(job).train(session) == 1
    expected = np.full(8, 2.0).astype(np.float32)
    np.testing.assert_array_equal(session.fetch("trainer:0", "output"), expected)
    np.testing.assert_array_equal(session.fetch("trainer:0", "download_result"), expected)


def test_reuse_checkpoint_manager(tmp_path):
    # One session and one manager for several runners: re-init keeps the first blob lists.
    session = LocalSession()
    checkpoint = MultiNodeCheckpointManager(str(tmp_path), "minidb")
    with Job() as job:
        outputs = build_pipeline(node_id=0)
    with Node("trainer_0"):
        output_fetcher = Task(step=core.Net("empty"), outputs=outputs)

    def fetch_total():
        session.run(output_fetcher)
        return output_fetcher.outputs()[0].fetch()

    job.compile(LocalSession)
    num_epochs = JobRunner(job, checkpoint).train(session)
    for initial_epoch in range(1, num_epochs + 1):
        JobRunner(job, checkpoint, resume_from_epoch=initial_epoch).train(session)
        assert fetch_total() == EXPECTED_TOTALS[-1]


def test_job_errors():
    # A Job's groups refuse tasks once it is compiled; epoch_limiter needs at least one epoch.
    with Job() as job:
        with Node("n"):
            with job.init_group:
                Task(step=core.Net("init"))
            with pytest.raises(moka.InvalidInput):
                epoch_limiter(job, 0)
    job.compile()
    with pytest.raises(moka.InvalidInput, match="compiled"):
        with job.init_group:
            Task(step=core.Net("late"))
    with pytest.raises(moka.TypeError, match="metadata_handler: object has no set_params"):
        CheckpointManager("/tmp", "n", "minidb", metadata_handler=object())
    assert Job.current(required=False) is None
    with pytest.raises(moka.TypeError, match="upload_task_group_builder: expected an object with build"):
        JobRunner(job, upload_task_group_builder=object())


def test_corrupt_checkpoint_is_refused(tmp_path):
    # A truncated checkpoint file is an error naming it, not a silently wrong resume.
    session = LocalSession()
    checkpoint = CheckpointManager(str(tmp_path), "temp_node", "minidb")
    with Cluster():
        with Job() as job:
            build_pipeline(node_id=0)
    assert JobRunner(job, checkpoint).train(session) == len(EXPECTED_TOTALS)
    path = tmp_path / "temp_node.2"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(moka.Error, match="temp_node.2"):
        JobRunner(job, CheckpointManager(str(tmp_path), "temp_node", "minidb"),
                  resume_from_epoch=2).train(LocalSession())
    assert os.path.exists(tmp_path / "temp_node.4")


class RecordingHandler:
    """A metadata handler (Caffe2's duck-typed interface) that records every call."""

    def __init__(self, resume=None, accessible=True):
        self.calls, self.stats, self.resume, self.accessible = [], [], resume, accessible

    def set_params(self, db_prefix, db_type, node_names, path_prefix, path_type):
        self.calls.append(("set_params", os.path.basename(db_prefix), db_type, node_names, path_prefix))

    def last_epoch(self, user_epoch):
        self.calls.append(("last_epoch", user_epoch))
        return self.resume if self.resume is not None else user_epoch

    def write(self, epoch):
        self.calls.append(("write", epoch))

    def report(self, action_name, stats):
        self.calls.append(("report", action_name))
        self.stats.append(stats)

    def cp_accessible(self, epoch=None):
        return self.accessible


def test_a_python_metadata_handler_records_saves_and_chooses_the_epoch_to_resume(tmp_path):
    handler = RecordingHandler()
    with Cluster():
        with Job() as job:
            build_pipeline(node_id=0)
    job.compile(LocalSession)
    manager = MultiNodeCheckpointManager(str(tmp_path), "minidb", metadata_handler=handler)
    assert JobRunner(job, manager).train(LocalSession()) == len(EXPECTED_TOTALS)
    epochs = range(len(EXPECTED_TOTALS) + 1)  # epoch 0 is the checkpoint right after init
    assert handler.calls == [("set_params", tmp_path.name, "minidb", ["trainer_0"], None), ("last_epoch", None)] + \
        [c for e in epochs for c in (("write", e), ("report", "checkpoint_save"))]
    for e, stats in zip(epochs, handler.stats):
        [(path, ns)] = stats.items()
        assert path == str(tmp_path / ("trainer_0.%d" % e)) and ns > 0

    # The handler's last_epoch chooses where to resume, over the user's None.
    resumed = RecordingHandler(resume=2)
    manager = MultiNodeCheckpointManager(str(tmp_path), "minidb", metadata_handler=resumed)
    assert JobRunner(job, manager).train(LocalSession()) == len(EXPECTED_TOTALS)
    assert resumed.calls[1] == ("last_epoch", None) and resumed.calls[2] == ("report", "checkpoint_load")

    # Not accessible: nothing saved.
    closed_dir = tmp_path / "closed"
    closed_dir.mkdir()
    closed = RecordingHandler(accessible=False)
    JobRunner(job, MultiNodeCheckpointManager(str(closed_dir), "minidb", metadata_handler=closed)).train(LocalSession())
    assert not [c for c in closed.calls if c[0] == "write"]
    assert sorted(p.name for p in closed_dir.iterdir()) == ["moka.lock"]


def test_a_metadata_handler_that_raises_or_lacks_a_method_is_an_error(tmp_path):
    with pytest.raises(moka.TypeError, match="has no cp_accessible"):
        CheckpointManager(str(tmp_path), "trainer_0", "minidb", metadata_handler=type("H", (), {
            m: (lambda self, *a, **k: None) for m in ("set_params", "last_epoch", "write", "report")})())

    class Broken(RecordingHandler):
        def write(self, epoch):
            raise ValueError("metadata store is down")

    with Cluster():
        with Job() as job:
            build_pipeline(node_id=0)
    job.compile(LocalSession)
    manager = MultiNodeCheckpointManager(str(tmp_path), "minidb", metadata_handler=Broken())
    with pytest.raises(moka.Error, match="metadata store is down"):
        JobRunner(job, manager).train(LocalSession())


class UploadFinalEpoch(UploadTaskGroupBuilder):
    """Records what it was given, and uploads the epoch number into a blob of trainer_0."""

    def __init__(self):
        self.given = None

    def build(self, epoch, checkpoint_manager):
        self.given = (epoch, checkpoint_manager)
        with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as upload, Node("trainer_0"), Task():
            ops.Const(np.int64(epoch), blob_out="uploaded_epoch")
        return upload


def test_upload_task_group_builder_runs_after_the_last_epoch(tmp_path):
    with Cluster():
        with Job() as job:
            build_pipeline(node_id=0)
    job.compile(LocalSession)
    manager = MultiNodeCheckpointManager(str(tmp_path), "minidb")
    upload = UploadFinalEpoch()
    session = LocalSession()
    assert JobRunner(job, manager, upload_task_group_builder=upload).train(session) == len(EXPECTED_TOTALS)
    assert upload.given == (len(EXPECTED_TOTALS), manager)
    assert int(session.fetch("trainer_0", "uploaded_epoch")) == len(EXPECTED_TOTALS)

    class NotAGroup(UploadTaskGroupBuilder):
        def build(self, epoch, checkpoint_manager):
            return 42

    with pytest.raises(moka.TypeError, match="must return a TaskGroup, not int"):
        JobRunner(job, upload_task_group_builder=NotAGroup()).train(LocalSession())
    with pytest.raises(moka.Error, match="NotImplementedError"):
        JobRunner(job, upload_task_group_builder=UploadTaskGroupBuilder()).train(LocalSession())


def test_a_second_training_in_one_session_leaves_queues_out_of_the_checkpoint(tmp_path):
    # The first run (no manager) leaves a queue and its pipe's blobs in the node workspace; the second one,
    # checkpointed, lists only what Save can write (decision 67), so every epoch is saved.
    from moka.queue_util import Queue
    session = LocalSession()
    with Job() as job:
        with Node("trainer_0"):
            with Job.current().init_group, Task():
                ds = Dataset(ConstRecord(ops, Struct(("val", np.array(list(range(10)))))), name="ds")
                full_reader = ds.reader(ops)
                total = ops.Const([100])
            queue = Queue(capacity=4, name="q")
            epoch_reader = ReaderWithLimit(full_reader, num_iter=3)
            pipe(epoch_reader, output=queue, num_threads=2)

            def inc_total(rec):
                ops.Add([total, rec.val()], [total])

            pipe(queue.reader(), processor=inc_total)
            Job.current().add_stop_condition(epoch_reader.data_finished())
    job.compile(LocalSession)
    assert JobRunner(job).train(session) == len(EXPECTED_TOTALS)
    manager = MultiNodeCheckpointManager(str(tmp_path), "minidb")
    assert JobRunner(job, manager).train(session) == len(EXPECTED_TOTALS)
    assert session.fetch("trainer_0", str(total)) == EXPECTED_TOTALS[-1]
    assert [(tmp_path / ("trainer_0.%d" % e)).exists() for e in range(5)] == [True] * 5
    from moka import workspace
    workspace.ResetWorkspace()
    load = core.Net("load_epoch_4")
    load.Load([], [], db=str(tmp_path / "trainer_0.4"), db_type="minidb", absolute_path=1, load_all=1)
    workspace.RunNetOnce(load)
    assert str(total) in workspace.Blobs()
    assert "q/handler" not in workspace.Blobs()  # the queue; its writer count is a counter, saved
    workspace.ResetWorkspace()
