"""moka.task: Cluster, Node, Task, TaskGroup, TaskOutput and final_output (caffe2.python.task's names) over
moka's C++ builders (moka/builder/task.h, task_group.h, cluster.h)."""
from moka import _C

__all__ = ["Cluster", "Node", "Task", "TaskGroup", "TaskOutput", "final_output", "WorkspaceType", "SetupNets"]


class WorkspaceType:
    """Where a task's blobs live: PRIVATE, a child workspace per run; GLOBAL, the node's workspace itself."""
    PRIVATE = "private"
    GLOBAL = "global"


Cluster = _C.Cluster
TaskOutput = _C.TaskOutput
final_output = _C.final_output
SetupNets = _C.SetupNets


class Node(_C.Node):
    """A node of the cluster; ``with Node("reader"):`` places the tasks made inside on it."""

    def __init__(self, node="local", **kwargs):
        super().__init__(str(node), **kwargs)


class TaskGroup(_C.TaskGroup):
    """Tasks that run together, each on its node (``with TaskGroup() as tg:``)."""
    LOCAL_SETUP = "local_setup"

    def __init__(self, workspace_type=None):
        super().__init__(workspace_type)


class Task(_C.Task):
    """A step run on one node (``with Task() as task:`` builds it with a NetBuilder)."""
    TASK_SETUP = "task_setup"
    TASK_INSTANCE_SETUP = "task_instance_setup"
    REPORT_STEP = "report_step"

    def __init__(self, step=None, outputs=None, workspace_type=None, group=None, node=None, name=None,
                 num_instances=None):
        super().__init__(step, outputs, workspace_type, group, str(node) if node is not None else None, name,
                         num_instances)
