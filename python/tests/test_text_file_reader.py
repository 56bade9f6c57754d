"""moka.text_file_reader: Caffe2's text_file_reader_test.py (every batch size and 1-2 passes over a TSV of strings
and floats), ported with its expected values, plus a pipe of two threads, a bad line and a schema it refuses."""
import numpy as np
import pytest

import moka
from moka import core, workspace
from moka.pipeline import pipe
from moka.schema import FetchRecord, Scalar, Struct
from moka.session import LocalSession
from moka.task import TaskGroup
from moka.text_file_reader import TextFileReader

from test_pipeline import fetch_column, make_destination_dataset


def test_text_file_reader(tmp_path):
    schema = Struct(('field1', Scalar(dtype=str)), ('field2', Scalar(dtype=str)),
                    ('field3', Scalar(dtype=np.float32)))
    num_fields = 3
    col_data = [['l1f1', 'l2f1', 'l3f1', 'l4f1'], ['l1f2', 'l2f2', 'l3f2', 'l4f2'],
                [0.456, 0.789, 0.10101, -24342.64]]
    row_data = list(zip(*col_data))
    path = tmp_path / "data.txt"
    path.write_text('\n'.join('\t'.join(str(x) for x in f) for f in row_data) + '\n')
    for num_passes in range(1, 3):
        for batch_size in range(1, len(row_data) + 2):
            workspace.ResetWorkspace()
            init_net = core.Net('init_net')
            reader = TextFileReader(init_net, filename=str(path), schema=schema, batch_size=batch_size,
                                    num_passes=num_passes)
            workspace.RunNetOnce(init_net)
            net = core.Net('read_net')
            should_stop, record = reader.read_record(net)
            results = [np.array([])] * num_fields
            while True:
                workspace.RunNetOnce(net)
                arrays = FetchRecord(record).field_blobs()
                for i in range(num_fields):
                    results[i] = np.append(results[i], arrays[i])
                if workspace.FetchBlob(should_stop):
                    break
            for i in range(num_fields):
                col_batch = np.tile(col_data[i], num_passes)
                if col_batch.dtype in (np.float32, np.float64):
                    np.testing.assert_array_almost_equal(col_batch, results[i], decimal=3)
                else:  # strings come back as bytes (moka.workspace, as Caffe2's under Python 3)
                    np.testing.assert_array_equal(col_batch, [b.decode() for b in results[i]])


def test_a_text_file_through_a_pipe_of_two_threads(tmp_path):
    path = tmp_path / "rows.tsv"
    path.write_text(''.join(f"{i}\t{i * 0.5}\n" for i in range(5000)))
    session = LocalSession()
    init_net = core.Net('init')
    reader = TextFileReader(init_net, str(path), Struct(('label', Scalar(dtype=np.int64)),
                                                         ('value', Scalar(dtype=np.float64))), batch_size=100)
    session.run(init_net)
    dst = make_destination_dataset(session, reader.schema().clone_schema())
    with TaskGroup() as tg:
        pipe(reader, dst.writer(), num_runtime_threads=2)
    session.run(tg)
    assert sorted(fetch_column(session, dst, "label")) == list(range(5000))


def test_a_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2\n3,x\n")
    workspace.ResetWorkspace()
    init_net = core.Net('init')
    reader = TextFileReader(init_net, str(path), Struct(('a', Scalar(dtype=np.int64)), ('b', Scalar(dtype=np.int64))),
                            batch_size=10, delimiter=',')
    workspace.RunNetOnce(init_net)
    net = core.Net('read')
    reader.read_record(net)
    with pytest.raises(moka.InvalidInput, match=r'bad.csv:2: field 1 \("b"\): "x" is not a int64 value'):
        workspace.RunNetOnce(net)


def test_a_nested_schema_is_refused():
    with pytest.raises(moka.InvalidInput, match="Only scalar fields"):
        TextFileReader(core.Net('init'), "x.tsv", Struct(('a', Struct(('b', Scalar(dtype=np.float32))))))


def test_a_trace_of_a_pipe_from_python(tmp_path):
    import json
    from moka.trace import Trace, trace_running
    path = tmp_path / "rows.tsv"
    path.write_text(''.join(f"{i}\t{i * 0.5}\n" for i in range(500)))
    session = LocalSession()
    init_net = core.Net('init')
    reader = TextFileReader(init_net, str(path), Struct(('label', Scalar(dtype=np.int64)),
                                                         ('value', Scalar(dtype=np.float64))), batch_size=50)
    session.run(init_net)
    dst = make_destination_dataset(session, reader.schema().clone_schema())
    with TaskGroup() as tg:
        pipe(reader, dst.writer(), num_runtime_threads=2)
    with Trace(tmp_path / "t.json", level="ops") as trace:
        assert trace_running()
        session.run(tg)
    assert not trace_running()
    assert trace.summary["events"] > 0 and trace.summary["dropped"] == 0
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert any(n.startswith("TextFileReaderRead") for n in names), names
    with pytest.raises(moka.InvalidInput, match="unknown trace level"):
        Trace(tmp_path / "x.json", level="everything").__enter__()
