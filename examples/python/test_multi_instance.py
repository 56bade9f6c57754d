"""Seed `test_multi_instance` (net_builder_test.py) in Python: a Task with 10 instances running concurrently.

task_init/task_exit run once per task in the node's workspace (global counters); task_instance_init/exit and the
body run once per instance, each instance in its own child workspace (so task_counter and local_counter are
per instance). Prints what examples/seeds/test_multi_instance.cpp prints."""
from moka.net_builder import ops
from moka.session import LocalSession
from moka.task import Task, TaskGroup, final_output

NUM_INSTANCES = 10
NUM_ITERS = 15

with TaskGroup() as tg:
    with Task(num_instances=NUM_INSTANCES):
        with ops.task_init():
            counter1 = ops.CreateCounter([], ["global_counter"])
            counter2 = ops.CreateCounter([], ["global_counter2"])
            counter3 = ops.CreateCounter([], ["global_counter3"])
        # both task_counter and local_counter should be thread local
        with ops.task_instance_init():
            task_counter = ops.CreateCounter([], ["task_counter"])
        local_counter = ops.CreateCounter([], ["local_counter"])
        with ops.loop(NUM_ITERS):
            ops.CountUp(counter1)
            ops.CountUp(task_counter)
            ops.CountUp(local_counter)
        # gather sum of squares of local counters to make sure that each local counter counted exactly up to
        # NUM_ITERS, and that there was no false sharing of counter instances.
        with ops.task_instance_exit():
            count2 = ops.RetrieveCount(task_counter)
            with ops.loop(ops.Mul([count2, count2])):
                ops.CountUp(counter2)
        # This should have the same effect as the above
        count3 = ops.RetrieveCount(local_counter)
        with ops.loop(ops.Mul([count3, count3])):
            ops.CountUp(counter3)
        # The code below will only run once
        with ops.task_exit():
            total1 = final_output(ops.RetrieveCount(counter1))
            total2 = final_output(ops.RetrieveCount(counter2))
            total3 = final_output(ops.RetrieveCount(counter3))

LocalSession().run(tg)
# NUM_INSTANCES * NUM_ITERS, then NUM_INSTANCES * NUM_ITERS**2 twice.
print(f"total1={int(total1.fetch())}")
print(f"total2={int(total2.fetch())}")
print(f"total3={int(total3.fetch())}")
