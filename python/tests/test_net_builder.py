"""moka.net_builder and moka.task: Caffe2's net_builder_test.py and task_test.py, ported in our words with their
expected values (docs/python.md §7); every with block is the C++ builder's."""
import pytest

import moka
from moka import core, task, workspace
from moka.core import Plan, to_execution_step
from moka.net_builder import NetBuilder, ops
from moka.session import LocalSession
from moka.task import Task, TaskGroup, final_output

Const = ops.Const


def test_repr():
    # Objects made with no active context (task_test.py testRepr).
    assert repr(task.Cluster()) == "Cluster(nodes=[], node_kwargs={})"
    assert repr(task.Node()) == "Node(name=local, kwargs={})"
    assert repr(task.TaskGroup()) == "TaskGroup(tasks=[], workspace_type=None, remote_nets=[])"
    assert repr(task.TaskOutput([])) == "TaskOutput(names=[], values=None)"
    assert repr(task.Task()) == "Task(name=local/task, node=local, outputs=[])"
    assert repr(task.SetupNets()) == "SetupNets(init_nets=None, exit_nets=None)"


def _test_loop():
    x = Const(5)
    y = Const(0)
    with ops.loop():
        ops.stop_if(ops.EQ([x, Const(0)]))
        ops.Add([x, Const(-1)], [x])
        ops.Add([y, Const(1)], [y])
    return y


def _test_inner_stop(x):
    ops.stop_if(ops.LT([x, Const(5)]))


def _test_outer():
    x = Const(10)
    with ops.stop_guard() as g1:
        _test_inner_stop(x)
    y = Const(3)
    with ops.stop_guard() as g2:
        _test_inner_stop(y)
    with ops.stop_guard() as g4:
        Const(0)
    with ops.stop_guard() as g3:
        pass
    return g1.has_stopped(), g2.has_stopped(), g3.has_stopped(), g4.has_stopped()


def _test_if(x):
    y = Const(1)
    with ops.If(ops.GT([x, Const(50)])):
        Const(2, blob_out=y)
    with ops.If(ops.LT([x, Const(50)])):
        Const(3, blob_out=y)
        ops.stop()
        Const(4, blob_out=y)
    return y


def test_ops():
    with NetBuilder() as nb:
        y = _test_loop()
        z, w, a, b = _test_outer()
        p = _test_if(Const(75))
        q = _test_if(Const(25))
    plan = Plan("name")
    plan.AddStep(to_execution_step(nb))
    ws = workspace.C.Workspace()
    ws.run(plan)
    expected = [(y, 5), (z, False), (w, True), (a, False), (b, False), (p, 2), (q, 3)]
    for blob, value in expected:
        assert ws.blobs[str(blob)].fetch() == value, str(blob)


def test_net_multi_use():
    with Task() as t:
        total = Const(0)
        net = core.Net("my_net")
        net.Add([total, net.Const(1)], [total])
        ops.net(net)
        ops.net(net)  # the same net twice: it runs twice
        result = final_output(total)
    with LocalSession() as session:
        session.run(t)
        assert result.fetch() == 2


def test_loops():
    with Task() as t:
        total, total_large, total_small, total_tiny = Const(0), Const(0), Const(0), Const(0)
        with ops.loop(10) as loop:
            outer = ops.Mul([loop.iter(), Const(10)])
            with ops.loop(loop.iter()) as inner:
                val = ops.Add([outer, inner.iter()])
                with ops.If(ops.GE([val, Const(80)])) as c:
                    ops.Add([total_large, val], [total_large])
                with c.Elif(ops.GE([val, Const(50)])) as c:
                    ops.Add([total_small, val], [total_small])
                with c.Else():
                    ops.Add([total_tiny, val], [total_tiny])
                ops.Add([total, val], total)
        outs = [final_output(x) for x in (total, total_large, total_small, total_tiny)]
    LocalSession().run(t)
    reference = [0, 0, 0, 0]
    for i in range(10):
        for j in range(i):
            v = 10 * i + j
            reference[0] += v
            reference[1 if v >= 80 else 2 if v >= 50 else 3] += v
    assert reference == [2970, 1514, 1146, 310]
    assert [int(o.fetch()) for o in outs] == reference


def test_setup():
    with Task() as t:
        with ops.task_init():
            one = Const(1)
        two = ops.Add([one, one])
        with ops.task_init():
            three = Const(3)
        accum = ops.Add([two, three])
        with ops.task_exit():
            seven_1 = ops.Add([accum, one])
        six = ops.Add([accum, one])
        ops.Add([accum, one], [accum])
        seven_2 = ops.Add([accum, one])
        o6, o7_1, o7_2 = final_output(six), final_output(seven_1), final_output(seven_2)
    LocalSession().run(t)
    assert o6.fetch() == 6 and o7_1.fetch() == 7 and o7_2.fetch() == 7


def test_multi_instance():
    instances, iters = 10, 15
    with TaskGroup() as tg:
        with Task(num_instances=instances):
            with ops.task_init():
                counter1 = ops.CreateCounter([], ["global_counter"])
                counter2 = ops.CreateCounter([], ["global_counter2"])
                counter3 = ops.CreateCounter([], ["global_counter3"])
            with ops.task_instance_init():
                task_counter = ops.CreateCounter([], ["task_counter"])
            local_counter = ops.CreateCounter([], ["local_counter"])
            with ops.loop(iters):
                ops.CountUp(counter1)
                ops.CountUp(task_counter)
                ops.CountUp(local_counter)
            with ops.task_instance_exit():
                count2 = ops.RetrieveCount(task_counter)
                with ops.loop(ops.Mul([count2, count2])):
                    ops.CountUp(counter2)
            count3 = ops.RetrieveCount(local_counter)
            with ops.loop(ops.Mul([count3, count3])):
                ops.CountUp(counter3)
            with ops.task_exit():
                total1 = final_output(ops.RetrieveCount(counter1))
                total2 = final_output(ops.RetrieveCount(counter2))
                total3 = final_output(ops.RetrieveCount(counter3))
    LocalSession().run(tg)
    assert total1.fetch() == instances * iters
    assert total2.fetch() == instances * iters ** 2
    assert total3.fetch() == instances * iters ** 2


def test_nodes_run_their_tasks_in_their_own_workspaces():
    with TaskGroup(workspace_type=task.WorkspaceType.GLOBAL) as tg:
        with task.Node("reader"):
            with Task():
                x = final_output(ops.Const(7, blob_out="x"))
        with task.Node("trainer"):
            with Task():
                ops.Const(8, blob_out="x")
    s = LocalSession()
    s.run(tg)
    assert x.fetch() == 7
    assert s.fetch("trainer", "x") == 8
    assert sorted(tg.used_nodes()) == ["reader", "trainer"]


def test_a_python_error_inside_a_block_unwinds_the_builder_and_propagates():
    with pytest.raises(ZeroDivisionError):
        with NetBuilder():
            with ops.loop(3):
                Const(1)
                1 / 0
    # The builders' stacks are clean again: a new block works, and ops outside any builder are refused.
    with NetBuilder() as nb:
        y = Const(3)
    ws = workspace.C.Workspace()
    ws.run(Plan(to_execution_step(nb)))
    assert ws.blobs[str(y)].fetch() == 3
    with pytest.raises(moka.InvalidInput, match="NetBuilder"):
        ops.Add(["a", "b"])


def test_a_loop_without_a_stop_condition_is_refused_when_its_block_ends():
    with pytest.raises(moka.InvalidInput, match="requires a stop condition"):
        with NetBuilder():
            with ops.loop():
                Const(1)


def test_elif_after_else_is_refused():
    with NetBuilder():
        with ops.If(Const(True)) as c:
            Const(1)
        with c.Else() as e:
            Const(2)
        with pytest.raises(moka.InvalidInput, match="Elif not allowed for an Else"):
            with e.Elif(Const(True)):
                pass


def test_a_failing_run_raises_the_runtime_error_and_the_session_works_on():
    with Task() as bad:
        ops.Add([Const(1), Const("x")])
    s = LocalSession()
    with pytest.raises(moka.TypeError, match=r"\(Add\)"):
        s.run(bad)
    with Task() as good:
        out = final_output(Const(5))
    s.run(good)
    assert out.fetch() == 5
