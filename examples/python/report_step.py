"""TaskGroup.report_step (task.py reference page) in Python: a step that runs every interval_ms on a node while
the group runs there and — guaranteed — at least once after every task of that node has finished. Three tasks each
sleep a little (Python operators); the report step counts its runs and notes whether it ever ran after all three
had finished. Prints what examples/seeds/report_step.cpp prints."""
import threading
import time

from moka.net_builder import NetBuilder, ops
from moka.session import LocalSession
from moka.task import Task, TaskGroup

TASKS = 3
lock = threading.Lock()
state = {"tasks_done": 0, "report_runs": 0, "ran_after_all": False}


def work(inputs, outputs):
    time.sleep(0.002)


def task_done(inputs, outputs):
    with lock:
        state["tasks_done"] += 1


def report(inputs, outputs):
    with lock:
        state["report_runs"] += 1
        if state["tasks_done"] == TASKS:
            state["ran_after_all"] = True


with TaskGroup() as tg:
    for i in range(TASKS):
        with Task(name=f"worker{i}"):
            with ops.loop(10):  # ~20 ms of work: 10 iterations of a 2 ms sleep
                ops.Python(work)([], [])
            ops.Python(task_done)([], [])  # the task's last op

# The report step: a builder holding one Python operator, run on "local" every 5 ms.
with NetBuilder(name="report") as report_builder:
    ops.Python(report)([], [])
tg.report_step(report_builder, node="local", interval_ms=5)

LocalSession().run(tg)
# The run count depends on timing; only its lower bound is printed.
print(f"tasks_done={state['tasks_done']}")
print("report_ran_at_least_once=" + str(state["report_runs"] >= 1).lower())
print("report_ran_after_all_tasks=" + str(state["ran_after_all"]).lower())
