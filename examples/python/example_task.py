"""Seed `example_task` (net_printer_test.py) in Python: a function that builds a Task — joining whatever TaskGroup
is active when it is called — and returns the task's outputs for later. The caller gathers it into a TaskGroup,
runs the group and fetches the outputs. Prints what examples/seeds/example_task.cpp prints."""
from moka.net_builder import ops
from moka.session import LocalSession
from moka.task import Task, TaskGroup, final_output


def example_task():
    with Task():
        with ops.task_init():
            one = ops.Const(1)
        two = ops.Add([one, one])
        with ops.task_init():
            three = ops.Const(3)
        accum = ops.Add([two, three])
        # here, accum should be 5
        with ops.task_exit():
            # here, accum should be 6, since this executes after lines below
            seven_1 = ops.Add([accum, one])
        six = ops.Add([accum, one])
        ops.Add([accum, one], [accum])
        seven_2 = ops.Add([accum, one])
        o6 = final_output(six)
        o7_1 = final_output(seven_1)
        o7_2 = final_output(seven_2)
    return o6, o7_1, o7_2


with TaskGroup() as tg:  # the Task made inside example_task() joins this group
    o6, o7_1, o7_2 = example_task()

LocalSession().run(tg)
print(f"num_tasks={len(tg.tasks())}")
print(f"task={tg.tasks()[0].name}")
print(f"o6={int(o6.fetch())}")
print(f"o7_1={int(o7_1.fetch())}")
print(f"o7_2={int(o7_2.fetch())}")
