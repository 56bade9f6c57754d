"""Python operators: Caffe2's 64-instance test (net_builder_test.py test_multi_instance_python_op), calls from
many threads at once, blob views, and a Python exception surfacing from session.run with its traceback."""
import threading

import numpy as np
import pytest

import moka
from moka import core, workspace
from moka.net_builder import ops
from moka.session import LocalSession
from moka.task import Task, final_output


class PythonOpStats:
    lock = threading.Lock()
    num_instances = 0
    num_calls = 0


def python_op_builder():
    with PythonOpStats.lock:
        PythonOpStats.num_instances += 1

    def my_op(inputs, outputs):
        with PythonOpStats.lock:
            PythonOpStats.num_calls += 1
    return my_op


def test_multi_instance_python_op():
    # Operators are made and destroyed by 64 instances at once: one construction per instance, 4 calls each.
    with Task(num_instances=64) as t:
        with ops.loop(4):
            ops.Python((python_op_builder, [], {}))([], [])
    PythonOpStats.num_instances = 0
    PythonOpStats.num_calls = 0
    LocalSession().run(t)
    assert PythonOpStats.num_instances == 64
    assert PythonOpStats.num_calls == 256


def test_a_python_op_reads_its_inputs_and_feeds_its_outputs():
    def double_and_sum(inputs, outputs):
        x = inputs[0].fetch()
        outputs[0].feed(x * 2)
        outputs[1].feed(np.array(x.sum(), dtype=np.int64))

    with Task() as t:
        x = ops.Const([1, 2, 3])
        doubled, total = ops.Python(double_and_sum)([x], 2)
        outs = final_output(doubled), final_output(total)
    LocalSession().run(t)
    assert outs[0].fetch().tolist() == [2, 4, 6] and outs[1].fetch() == 6


def test_data_is_a_numpy_view_of_the_blob():
    def add_one_in_place(inputs, outputs):
        inputs[0].data[...] += 1  # no copy: writes the tensor itself

    net = core.Net("view")
    net.ConstantFill([], "v", shape=[3], value=1.0)
    net.Python(add_one_in_place)(["v"], [])
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("v").tolist() == [2.0, 2.0, 2.0]


def test_64_instances_calling_python_at_once_neither_deadlock_nor_crash():
    seen = []

    def record(inputs, outputs):
        v = inputs[0].fetch()
        with PythonOpStats.lock:
            seen.append(int(v))

    with Task(num_instances=64) as t:
        with ops.loop(50) as loop:
            ops.Python(record)([loop.iter()], [])
    LocalSession().run(t)
    assert len(seen) == 64 * 50 and sorted(set(seen)) == list(range(50))


def test_an_exception_in_python_surfaces_from_run_with_its_traceback():
    def broken(inputs, outputs):
        raise ValueError("the value is wrong")

    with Task() as t:
        ops.Python(broken)([], [])
    with pytest.raises(moka.RuntimeError) as e:
        LocalSession().run(t)
    text = str(e.value)
    assert "ValueError: the value is wrong" in text
    assert "Traceback" in text and "in broken" in text
    assert "(Callable)" in text  # where it ran, as for any operator


def test_a_builder_that_raises_fails_the_run():
    def bad_builder():
        raise KeyError("no such model")

    with Task() as t:
        ops.Python((bad_builder, [], {}))([], [])
    with pytest.raises(moka.RuntimeError, match="KeyError"):
        LocalSession().run(t)
