"""moka.dataio.Reader subclassed in Python (Caffe2's way of writing a reader): a reader that wraps a C++ one
(dataio_test's ReaderWithDelay, with a Python operator that sleeps), one that makes its own data with operators,
passed to pipe and to the C++ readers that wrap a reader; its errors; and that it outlives the Python names that
made it (docs/python.md §5)."""
import gc
import time

import numpy as np
import pytest

import moka
from moka import core
from moka.cached_reader import CachedReader
from moka.dataio import CompositeReader, Reader, ReaderWithLimit, ReaderWithTimeLimit
from moka.net_builder import ops
from moka.pipeline import pipe
from moka.schema import Scalar, Struct, from_blob_list
from moka.session import LocalSession
from moka.task import TaskGroup, WorkspaceType

from test_pipeline import fetch_column, make_destination_dataset, make_source_dataset


class PyReaderWithDelay(Reader):
    """dataio_test's ReaderWithDelay: read_ex adds a Python operator that sleeps, then the wrapped reader's read."""

    def __init__(self, reader, delay):
        super().__init__(schema=reader.schema())
        self.reader = reader
        self.delay = delay

    def setup_ex(self, global_init_net, global_finish_net):
        self.reader.setup_ex(global_init_net, global_finish_net)

    def read_ex(self, local_init_net, local_finish_net):
        read_net = core.Net("reader_body")

        def sleep_op(*args, **argd):
            time.sleep(self.delay)

        read_net.Python(sleep_op)([], [])
        return ([read_net],) + self.reader.read(read_net)


class CountingReader(Reader):
    """Reads 0, 1, ..., n - 1 (one record per read, from any number of threads): each read takes the next count
    of a counter made in setup_ex with CountUp (atomic: two threads never take the same count) and stops at n."""

    def __init__(self, n):
        super().__init__(schema=Struct(("label", Scalar(np.int64))))
        self.n = n
        self.setups = 0

    def setup_ex(self, init_net, finish_net):
        self.setups += 1
        self.counter = init_net.CreateCounter([], init_count=0)

    def read(self, read_net):
        taken = read_net.CountUp([self.counter])
        should_stop = read_net.GE([taken, read_net.Const(self.n)])
        label = read_net.Add([read_net.Const([0]), taken], broadcast=1)  # a 1-d row
        return should_stop, [label]


class RecordCountingReader(CountingReader):
    """CountingReader whose read returns its fields as a record of its schema."""

    def read(self, read_net):
        should_stop, fields = super().read(read_net)
        return should_stop, from_blob_list(self.schema(), fields)


def pipe_into_dataset(session, reader, num_threads, schema=None):
    dst_ds = make_destination_dataset(session, schema or reader.schema().clone_schema())
    with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        pipe(reader, dst_ds.writer(), num_runtime_threads=num_threads)
    session.run(tg)
    return sorted(fetch_column(session, dst_ds, "label"))


def test_readers_of_both_kinds_are_dataio_readers():
    session = LocalSession()
    src = make_source_dataset(session, size=3).reader()
    assert isinstance(src, Reader) and isinstance(CountingReader(3), Reader)
    assert issubclass(CountingReader, Reader) and issubclass(ReaderWithLimit, Reader)
    assert not isinstance(CountingReader(3), ReaderWithLimit)


@pytest.mark.parametrize("num_threads", [1, 2, 4])
def test_a_python_reader_wrapping_a_dataset_reader_delivers_every_record(num_threads):
    session = LocalSession()
    src_ds = make_source_dataset(session, size=40)
    assert pipe_into_dataset(session, PyReaderWithDelay(src_ds.reader(), 0.001), num_threads) == list(range(40))


@pytest.mark.parametrize("num_threads", [1, 3])
def test_a_python_reader_of_its_own_data(num_threads):
    session = LocalSession()
    reader = CountingReader(25)
    assert pipe_into_dataset(session, reader, num_threads) == list(range(25))
    assert reader.setups == 1
    assert pipe_into_dataset(session, RecordCountingReader(6), num_threads) == list(range(6))


def test_python_readers_inside_the_cpp_readers_outlive_their_python_names():
    session = LocalSession()
    limited = ReaderWithLimit(CountingReader(100), num_iter=7)  # the CountingReader has no other name
    gc.collect()
    assert pipe_into_dataset(session, limited, 1) == list(range(7))

    composite = CompositeReader(["a", "b"], [CountingReader(5), PyReaderWithDelay(CountingReader(5), 0.0)])
    gc.collect()
    schema = Struct(("a", Struct(("label", Scalar(np.int64)))), ("b", Struct(("label", Scalar(np.int64)))))
    dst_ds = make_destination_dataset(session, schema)
    with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        pipe(composite, dst_ds.writer())
    session.run(tg)
    assert list(fetch_column(session, dst_ds, "a:label")) == list(range(5))
    assert list(fetch_column(session, dst_ds, "b:label")) == list(range(5))


def test_a_time_limited_python_reader_stops_in_time():
    session = LocalSession()
    src_ds = make_source_dataset(session, size=1000)
    reader = ReaderWithTimeLimit(PyReaderWithDelay(src_ds.reader(), 0.01), duration=0.2)
    start = time.monotonic()
    read = pipe_into_dataset(session, reader, 2, schema=src_ds.content().clone_schema())
    assert time.monotonic() - start < 5
    assert 0 < len(read) < 1000 and read == list(range(len(read)))
    assert not bool(session.fetch("local", str(reader.data_finished())))


def test_a_cached_python_reader(tmp_path):
    session = LocalSession()
    cached = CachedReader(CountingReader(12), db_path=str(tmp_path / "cache"), db_type="LevelDB")
    gc.collect()
    session.run(cached.build_cache_step())
    assert pipe_into_dataset(session, cached, 2) == list(range(12))


def test_execution_step_of_a_python_reader():
    session = LocalSession()
    reader = CountingReader(4)
    init = core.Net("init")
    reader.setup_ex(init, None)
    step, record = reader.execution_step(reader_net_name="read_all")
    assert record.field_names() == ["label"]
    plan = core.Plan("p")
    plan.AddStep(core.execution_step("init", init))
    plan.AddStep(step)
    session.run(plan)
    # Four reads of 0..3, then the read that stops: CountDown past zero leaves the count at -1, so label 4.
    np.testing.assert_array_equal(session.fetch("local", str(record.label())), np.array([4]))


def test_the_base_class_and_wrong_results_are_errors_that_name_the_reader():
    session = LocalSession()
    with pytest.raises(moka.InvalidInput, match="Schema not provided for this reader."):
        Reader().schema()
    with pytest.raises(TypeError, match="schema.Field"):
        Reader(schema=3)

    class NoRead(Reader):
        pass

    with pytest.raises(NotImplementedError, match="read"):
        with TaskGroup():
            pipe(NoRead(), make_destination_dataset(session, Struct(("label", Scalar()))).writer())

    class WrongShape(Reader):
        def read(self, read_net):
            return read_net.Const(True)

    with pytest.raises(moka.TypeError, match=r"WrongShape.read\(\) returns a tuple of \(should_stop, fields\)"):
        with TaskGroup():
            pipe(WrongShape(), processor=lambda rec: None)

    class Raises(Reader):
        def read(self, read_net):
            raise ValueError("no data today")

    with pytest.raises(ValueError, match="no data today"):
        with TaskGroup():
            pipe(Raises(), processor=lambda rec: None)

    with pytest.raises(moka.TypeError, match="ReaderWithLimit: expected a Reader, not int"):
        ReaderWithLimit(3)
