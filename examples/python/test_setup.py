"""Seed `test_setup` (net_builder_test.py) in Python: task_init runs before the task's body, task_exit after it,
so o7_1 (computed in task_exit) sees accum after the body incremented it. Prints what
examples/seeds/test_setup.cpp prints."""
from moka.net_builder import ops
from moka.session import LocalSession
from moka.task import Task, final_output

with Task() as task:
    with ops.task_init():
        one = ops.Const(1)
    two = ops.Add([one, one])
    with ops.task_init():
        three = ops.Const(3)
    accum = ops.Add([two, three])
    # here, accum should be 5
    with ops.task_exit():
        # here, accum should be 6, since this executes after the lines below
        seven_1 = ops.Add([accum, one])
    six = ops.Add([accum, one])
    ops.Add([accum, one], [accum])
    seven_2 = ops.Add([accum, one])
    o6 = final_output(six)
    o7_1 = final_output(seven_1)
    o7_2 = final_output(seven_2)

with LocalSession() as session:
    session.run(task)
    print(f"o6={int(o6.fetch())}")
    print(f"o7_1={int(o7_1.fetch())}")
    print(f"o7_2={int(o7_2.fetch())}")
