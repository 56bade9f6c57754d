"""moka.checkpoint: Job, JobRunner, CheckpointManager, MultiNodeCheckpointManager, epoch_limiter and db_name
(caffe2.python.checkpoint's names) over moka's one job engine (moka/job/, docs/jobs.md).

``with Job() as job:`` builds into the epoch group; ``with job.init_group:`` (and download_group, exit_group) into
the others. ``JobRunner(job, checkpoint_manager=None, resume_from_epoch=None).train(session)`` runs init (or
resume), epochs until a stop condition, a checkpoint after every epoch, and exit; it releases the GIL and stops on
Ctrl-C. Checkpoints are written durably and committed with a manifest (docs/jobs.md). Where moka differs from
Caffe2: every node keeps its own blob list (decision 9). A metadata_handler is any object with Caffe2's set_params,
last_epoch, write, report and cp_accessible; an upload_task_group_builder any object with build(epoch,
checkpoint_manager) returning the TaskGroup to run after the last epoch."""
from moka import _C

__all__ = ["Job", "JobRunner", "CheckpointManager", "MultiNodeCheckpointManager", "SnapshotManager", "UploadTaskGroupBuilder",
           "epoch_limiter",
           "db_name", "get_ckpt_filename"]

Job = _C.Job
JobRunner = _C.JobRunner
CheckpointManager = _C.CheckpointManager
MultiNodeCheckpointManager = _C.MultiNodeCheckpointManager
SnapshotManager = _C.SnapshotManager  # the seeds'; also moka.snapshot.SnapshotManager
epoch_limiter = _C.epoch_limiter
db_name = _C.db_name
get_ckpt_filename = _C.get_ckpt_filename


class UploadTaskGroupBuilder:
    """Caffe2's UploadTaskGroupBuilder: JobRunner calls build(epoch, checkpoint_manager) once training has ended
    and runs the TaskGroup it returns (for example one that copies the final checkpoint elsewhere)."""

    def build(self, epoch, checkpoint_manager):
        raise NotImplementedError()
