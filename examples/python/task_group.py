"""TaskGroup reference page (task.py) in Python: five steps on three nodes. s1, s2 go to the default node "local",
s3 and s5 to "n2", s4 to "n1"; all start together and the group finishes with the last one. Every node has its own
workspace (docs/decisions.md, decision 1), so a step's blobs appear only on its node. Prints what
examples/seeds/task_group.cpp prints."""
from moka import core
from moka.session import LocalSession
from moka.task import Node, Task, TaskGroup, WorkspaceType


def make_step(name, value):
    """A net that records that it ran: writes the int64 `value` to blob "<name>_ran"."""
    net = core.Net(name)
    net.Const(value, blob_out=name + "_ran")
    return net


s1, s2, s3, s4, s5 = (make_step(f"s{i}", i) for i in range(1, 6))

# GLOBAL: tasks write into their node's workspace itself (the default, PRIVATE, would give each task a child
# workspace that is dropped after the run).
with TaskGroup(WorkspaceType.GLOBAL) as tg:
    # these tasks go to default node 'local'
    Task(step=s1)
    Task(step=s2)
    with Node("n2"):
        Task(step=s3)
    with Node("n1"):
        Task(step=s4)
    with Node("n2"):
        Task(step=s5)

# this will run all steps in parallel.
session = LocalSession()
session.run(tg)

print("used_nodes=" + ",".join(tg.used_nodes()))
nodes = ["local", "n1", "n2"]
for step in ["s1", "s2", "s3", "s4", "s5"]:
    ran_on = [n for n in nodes if session.workspace(n).has_blob(step + "_ran")]
    print(f"{step}.ran_on=" + (",".join(ran_on) or "none"))
# s3's blob lives on n2 only; n2 holds both of its steps' blobs.
for n in nodes:
    print(f"{n}.has_s3_ran=" + str(session.workspace(n).has_blob("s3_ran")).lower())
print(f"n2.s3_ran={int(session.fetch('n2', 's3_ran'))}")
print(f"n2.s5_ran={int(session.fetch('n2', 's5_ran'))}")
