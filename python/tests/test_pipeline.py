"""moka.pipeline, moka.dataio, moka.dataset, moka.queue_util and moka.schema: Caffe2's dataio_test.py
(ReaderWithLimit, runtime threads) and pipeline_test.py (test_dequeue_many), ported in our words with their expected
values (docs/python.md §7). Source datasets are fed into the session's "local" workspace (`session.workspace()`),
where Caffe2's tests fed their one workspace."""
import numpy as np
import pytest

import moka
from moka import core
from moka.core import NameScope
from moka.dataio import CountUntil, ReaderWithLimit
from moka.dataset import Dataset
from moka.net_builder import ops
from moka.pipeline import Output, pipe, pipe_and_output
from moka.queue_util import Queue
from moka.schema import ConstRecord, FeedRecord, FetchRecord, InitEmptyRecord, NewRecord, Scalar, Struct
from moka.session import LocalSession
from moka.task import TaskGroup, WorkspaceType, final_output


def make_source_dataset(session, size=100, offset=0, name="src"):
    src_init = core.Net("{}_init".format(name))
    with NameScope(name):
        src_values = Struct(("label", np.array(range(offset, offset + size))))
        src_blobs = NewRecord(src_init, src_values)
        src_ds = Dataset(src_blobs, name=name)
        FeedRecord(src_blobs, src_values, session.workspace())
    session.run(src_init)
    return src_ds


def make_destination_dataset(session, schema, name="dst"):
    dst_init = core.Net("{}_init".format(name))
    with NameScope(name):
        dst_ds = Dataset(schema, name=name)
        dst_ds.init_empty(dst_init)
    session.run(dst_init)
    return dst_ds


def fetch_column(session, ds, column):
    return FetchRecord(ds.content(), session.workspace())[column]()


def test_runtime_threads():
    session = LocalSession()
    src_ds = make_source_dataset(session)
    totals = [None] * 3

    def proc(rec):
        # executed once
        with ops.task_init():
            counter1 = ops.CreateCounter([], ["global_counter"])
            counter2 = ops.CreateCounter([], ["global_counter2"])
            counter3 = ops.CreateCounter([], ["global_counter3"])
        # executed once per thread
        with ops.task_instance_init():
            task_counter = ops.CreateCounter([], ["task_counter"])
        # executed on each iteration
        ops.CountUp(counter1)
        ops.CountUp(task_counter)
        # executed once per thread
        with ops.task_instance_exit():
            with ops.loop(ops.RetrieveCount(task_counter)):
                ops.CountUp(counter2)
            ops.CountUp(counter3)
        # executed once
        with ops.task_exit():
            totals[0] = final_output(ops.RetrieveCount(counter1))
            totals[1] = final_output(ops.RetrieveCount(counter2))
            totals[2] = final_output(ops.RetrieveCount(counter3))
        return rec

    # Read 100 records on 8 instances.
    with TaskGroup() as tg:
        pipe(src_ds.reader(), num_runtime_threads=8, processor=proc)
    session.run(tg)
    assert [int(t.fetch()) for t in totals] == [100, 100, 8]

    # Read 25 of them through two queues and a limit, then process on 6 instances.
    with TaskGroup() as tg:
        q1 = pipe(src_ds.reader(), num_runtime_threads=2)
        q2 = pipe(ReaderWithLimit(q1.reader(), num_iter=25), num_runtime_threads=3)
        pipe(q2, processor=proc, num_runtime_threads=6)
    session.run(tg)
    assert [int(t.fetch()) for t in totals] == [25, 25, 6]


@pytest.mark.parametrize("num_iter, expected_read_len, expected_finish", [
    (None, 100, True),   # test_count_limit_reader_without_limit
    (0, 0, False),       # test_count_limit_reader_with_zero_limit
    (10, 10, False),     # test_count_limit_reader_with_low_limit
    (110, 100, True),    # test_count_limit_reader_with_high_limit
])
def test_count_limit_reader(num_iter, expected_read_len, expected_finish):
    session = LocalSession()
    src_ds = make_source_dataset(session, size=100)
    dst_ds = make_destination_dataset(session, src_ds.content().clone_schema())
    # GLOBAL, so that data_finished outlives the run.
    with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        reader = ReaderWithLimit(src_ds.reader(), num_iter=num_iter)
        pipe(reader, dst_ds.writer(), num_runtime_threads=8)
    session.run(tg)
    read = fetch_column(session, dst_ds, "label")
    assert len(read) == expected_read_len
    assert sorted(read) == list(range(expected_read_len))
    assert bool(session.fetch("local", str(reader.data_finished()))) == expected_finish


def test_dequeue_many():
    session = LocalSession()
    init_net = core.Net("init")
    N = 17
    NUM_DEQUEUE_RECORDS = 3
    src_values = Struct(("uid", np.array(range(N))), ("value", 0.1 * np.array(range(N))))
    expected_dst = Struct(("uid", 2 * np.array(range(N))), ("value", np.array(N * [0.0])))

    with NameScope("init"):
        src_blobs = NewRecord(init_net, src_values)
        dst_blobs = InitEmptyRecord(init_net, src_values.clone_schema())
        counter = init_net.Const(0)
        ONE = init_net.Const(1)

    def proc1(rec):
        with NameScope("proc1"):
            out = NewRecord(ops, rec)
        ops.Add([rec.uid(), rec.uid()], [out.uid()])
        out.value.set(blob=rec.value(), unsafe=True)
        return out

    def proc2(rec):
        with NameScope("proc2"):
            out = NewRecord(ops, rec)
        out.uid.set(blob=rec.uid(), unsafe=True)
        ops.Sub([rec.value(), rec.value()], [out.value()])
        ops.Add([counter, ONE], [counter])
        return out

    src_ds = Dataset(src_blobs)
    dst_ds = Dataset(dst_blobs)
    with TaskGroup() as tg:
        out1 = pipe(src_ds.reader(), output=Queue(capacity=11, num_dequeue_records=NUM_DEQUEUE_RECORDS),
                    processor=proc1)
        out2 = pipe(out1, processor=proc2)
        pipe(out2, dst_ds.writer())

    ws = session.workspace()
    FeedRecord(src_blobs, src_values, ws)
    session.run(init_net)
    session.run(tg)
    assert int(ws.fetch_blob(str(counter))) == -(-N // NUM_DEQUEUE_RECORDS)  # one per dequeue of up to 3 records
    got = FetchRecord(dst_blobs, ws)
    for name in ["uid", "value"]:
        np.testing.assert_array_equal(got[name](), expected_dst[name]())


def test_pipe_and_output_and_python_processor():
    # A processor returning an Output, pipe_and_output's final outputs, and a Python operator per record.
    session = LocalSession()
    src_ds = make_source_dataset(session, size=10)
    seen = []

    def record(inputs, outputs):
        seen.extend(int(v) for v in inputs[0].fetch())

    with TaskGroup() as tg:
        def proc(rec):
            ops.Python(record)([rec.label()], [])
            return Output(record=rec)

        queue, out = pipe_and_output(src_ds.reader(), processor=proc, final_outputs=src_ds.get_blobs()[0])
        pipe(queue)
    session.run(tg)
    assert sorted(seen) == list(range(10))
    np.testing.assert_array_equal(out.fetch(), np.arange(10))


def test_count_until_and_bad_input():
    with pytest.raises(moka.TypeError, match="pipe: input"):
        with TaskGroup():
            pipe(42)
    with pytest.raises(TypeError, match="processor returns"):
        session = LocalSession()
        src_ds = make_source_dataset(session, size=3)
        with TaskGroup():
            pipe(src_ds.reader(), processor=lambda rec: 7)
    assert CountUntil(5).data_finished() is not None
    rec = Struct(("a", Scalar()), ("b", np.array([1, 2])))
    assert rec.field_names() == ["a", "b"]
    np.testing.assert_array_equal(rec.b(), np.array([1, 2]))
    with pytest.raises(AttributeError):
        rec.c
    with pytest.raises(moka.TypeError, match="ConstRecord: expected a core.Net or ops"):
        ConstRecord(42, rec)
    with pytest.raises(moka.TypeError, match="pipe: output"):
        with TaskGroup():
            pipe(src_ds.reader(), output=42)


def test_processor_returns_struct_of_blobs():
    # A processor may return Struct(("name", blob)) of blobs it made, as Caffe2's schema._normalize_field allows:
    # the transform x * 2 + 1 on float32 records keeps the dtype because Const takes np.float32's own dtype.
    session = LocalSession()
    src_init = core.Net("src_init")
    with NameScope("fsrc"):
        values = Struct(("x", np.arange(8, dtype=np.float32)))
        blobs = NewRecord(src_init, values)
        src_ds = Dataset(blobs, name="fsrc")
        FeedRecord(blobs, values, session.workspace())
    session.run(src_init)
    dst_ds = make_destination_dataset(session, src_ds.content().clone_schema(), name="fdst")

    def proc(rec):
        y = ops.Add([ops.Mul([rec.x(), ops.Const(np.float32(2))]), ops.Const(np.float32(1))])
        return Struct(("x", y))

    with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        pipe(src_ds.reader(batch_size=3), dst_ds.writer(), processor=proc)
    session.run(tg)
    got = fetch_column(session, dst_ds, "x")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32) * 2 + 1)
