"""moka.dataio's composite and time-limited readers, moka.db_file_reader and moka.cached_reader: Caffe2's
dataio_test.py (TestCompositeReader, TestReaderWithLimit's time-limit rows, TestDBFileReader), ported in our
words with their expected values (docs/python.md §7)."""
import shutil

import pytest

import moka
from moka import core
from moka.cached_reader import CachedReader
from moka.core import NameScope
from moka.dataio import (CompositeReader, CompositeReaderBuilder, ReaderBuilder, ReaderWithDelay,
                         ReaderWithTimeLimit)
from moka.dataset import Dataset
from moka.db_file_reader import DBFileReader
from moka.pipeline import pipe
from moka.schema import FetchRecord, Scalar, Struct
from moka.session import LocalSession
from moka.task import TaskGroup, WorkspaceType

from test_pipeline import fetch_column, make_destination_dataset, make_source_dataset


def test_composite_reader():
    session = LocalSession()
    names = ["src_0", "src_1", "src_2"]
    sizes = [100] * len(names)
    offsets = [i * 100 for i in range(len(names))]
    srcs = [make_source_dataset(session, size=s, offset=o, name=n) for n, s, o in zip(names, sizes, offsets)]
    for src, size, offset in zip(srcs, sizes, offsets):
        assert sorted(fetch_column(session, src, "label")) == list(range(offset, offset + size))
    schema = Struct(*[(name, src.content().clone_schema()) for name, src in zip(names, srcs)])
    dst_ds = make_destination_dataset(session, schema)
    with TaskGroup() as tg:
        pipe(CompositeReader(names, [src.reader() for src in srcs]), dst_ds.writer(), num_runtime_threads=3)
    session.run(tg)
    dst = FetchRecord(dst_ds.content(), session.workspace())
    for name, size, offset in zip(names, sizes, offsets):
        assert sorted(dst[name].label()) == list(range(offset, offset + size))


class SourceReaderBuilder(ReaderBuilder):
    """dataio_test's TestReaderBuilder: its reader is a source dataset that setup() makes."""

    def __init__(self, name, size, offset):
        self._schema = Struct(("label", Scalar()))
        self._name, self._size, self._offset = name, size, offset
        self._src_ds = None

    def schema(self):
        return self._schema

    def setup(self, session):
        self._src_ds = make_source_dataset(session, offset=self._offset, size=self._size, name=self._name)
        return {}

    def new_reader(self, **kwargs):
        return self._src_ds


def test_composite_reader_builder():
    session = LocalSession()
    names = ["src_0", "src_1", "src_2"]
    sizes = [100] * len(names)
    offsets = [i * 100 for i in range(len(names))]
    builders = [SourceReaderBuilder(n, s, o) for n, s, o in zip(names, sizes, offsets)]
    reader_builder = CompositeReaderBuilder(names, builders)
    assert reader_builder.setup(session=session) == {}
    schema = reader_builder.schema()
    assert schema.field_names() == ["src_0:label", "src_1:label", "src_2:label"]
    dst_ds = make_destination_dataset(session, schema)
    with TaskGroup() as tg:
        pipe(reader_builder.new_reader(), dst_ds.writer(), num_runtime_threads=3)
    session.run(tg)
    dst = FetchRecord(dst_ds.content(), session.workspace())
    for name, size, offset in zip(names, sizes, offsets):
        assert sorted(dst[name].label()) == list(range(offset, offset + size))


def test_a_reader_builder_that_is_not_one_is_refused_by_name():
    with pytest.raises(moka.TypeError, match="object has no schema"):
        CompositeReaderBuilder(["a"], [object()])

    class NoReader(SourceReaderBuilder):
        def new_reader(self, **kwargs):
            return 42

    builder = CompositeReaderBuilder(["a"], [NoReader("a", 1, 0)])
    with pytest.raises(moka.InvalidInput, match="reader must be an instance of Reader or Pipe"):
        builder.new_reader()


@pytest.mark.parametrize("duration, size, num_threads, read_delay, expected_min, expected_max, expected_finish", [
    (0, 100, 8, 0.1, 100, 100, True),                   # test_time_limit_reader_without_limit
    (1 - 0.25 * 0.25, 50, 4, 0.25, 0, 16, False),       # test_time_limit_reader_with_short_limit (8 +- 8)
    (10, 50, 4, 0.2, 50, 50, True),                     # test_time_limit_reader_with_long_limit
])
def test_time_limit_reader(duration, size, num_threads, read_delay, expected_min, expected_max, expected_finish):
    session = LocalSession()
    src_ds = make_source_dataset(session, size=size)
    dst_ds = make_destination_dataset(session, src_ds.content().clone_schema())
    with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
        reader = ReaderWithTimeLimit(ReaderWithDelay(src_ds.reader(), read_delay), duration=duration)
        pipe(reader, dst_ds.writer(), num_runtime_threads=num_threads)
    session.run(tg)
    read = sorted(fetch_column(session, dst_ds, "label"))
    assert expected_min <= len(read) <= expected_max
    assert read == list(range(len(read)))
    assert bool(session.fetch("local", str(reader.data_finished()))) == expected_finish


def test_a_negative_delay_is_refused():
    session = LocalSession()
    src_ds = make_source_dataset(session, size=3)
    with pytest.raises(moka.InvalidInput, match="delay"):
        ReaderWithDelay(src_ds.reader(), -1.0)


def read_all_data(session, reader):
    """TestDBFileReader._read_all_data: pipe reader into an empty clone of its schema on 8 threads; sorted labels."""
    dst_ds = make_destination_dataset(session, reader.schema().clone_schema())
    with TaskGroup() as tg:
        pipe(reader, dst_ds.writer(), num_runtime_threads=8)
    session.run(tg)
    return sorted(fetch_column(session, dst_ds, "label"))


def source_reader(session, size):
    return make_source_dataset(session, size=size).reader()


def test_cached_reader(tmp_path):
    session = LocalSession()
    db_path = str(tmp_path / "cache_db")

    # Read data for the first time.
    cached_reader1 = CachedReader(source_reader(session, 100), db_path, loop_over=False)
    build_cache_step = cached_reader1.build_cache_step()
    assert isinstance(build_cache_step, core.ExecutionStep)
    session.run(build_cache_step)
    assert read_all_data(session, cached_reader1) == list(range(100))

    # Read data from the cache: the 200-row source is never read.
    cached_reader2 = CachedReader(source_reader(session, 200), db_path)
    session.run(cached_reader2.build_cache_step())
    assert read_all_data(session, cached_reader2) == list(range(100))

    # Without the cache the data comes from the original reader again.
    shutil.rmtree(db_path)  # a LevelDB is a directory
    cached_reader3 = CachedReader(source_reader(session, 300), db_path)
    session.run(cached_reader3.build_cache_step())
    assert read_all_data(session, cached_reader3) == list(range(300))

    # overwrite rebuilds it from the original reader even though the file exists.
    cached_reader4 = CachedReader(source_reader(session, 50), db_path)
    session.run(cached_reader4.build_cache_step(overwrite=True))
    assert read_all_data(session, cached_reader4) == list(range(50))


def test_db_file_reader(tmp_path):
    session = LocalSession()
    db_path = str(tmp_path / "cache_db")
    session.run(CachedReader(source_reader(session, 100), db_path, "LevelDB").build_cache_step())

    db_file_reader = DBFileReader(db_path=db_path, db_type="LevelDB")
    assert db_file_reader.name == "cache_db_db_file_reader"
    assert db_file_reader.batch_size == 100
    assert db_file_reader.schema().field_names() == ["label"]
    assert read_all_data(session, db_file_reader) == list(range(100))


def test_db_file_reader_bad_input(tmp_path):
    with pytest.raises(moka.InvalidInput, match="does not exist"):
        DBFileReader(str(tmp_path / "missing"), "LevelDB")
    with pytest.raises(moka.InvalidInput, match="db_type"):
        DBFileReader(str(tmp_path / "missing"), "NoSuchDB")
    with pytest.raises(moka.InvalidInput, match="original_reader"):
        CachedReader(None, str(tmp_path / "cache"))
    session = LocalSession()
    with pytest.raises(moka.InvalidInput):
        CachedReader(source_reader(session, 3), str(tmp_path / "cache"), batch_size=0)
