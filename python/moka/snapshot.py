"""moka.snapshot: the seeds' SnapshotManager over moka's C++ one (moka/job/snapshot_manager.h; decision 10).

``SnapshotManager(db_prefix, node_name, db_type, metadata_handler=None, blob_names=None, keep_last=0)`` has
CheckpointManager's methods (init, blob_list, save, load, check_db_exists, load_blobs_from_checkpoint) and
writes ``<db_prefix>/<node_name>.snapshot.<epoch>``: exports of the chosen blobs (all of the node's, without
``blob_names``) for evaluation or serving. It is never a checkpoint: JobRunner does not take it, and its files
are named so that they cannot be mistaken for one. ``snapshot_epochs()`` lists the epochs written;
``apply_retention()`` deletes all but the newest ``keep_last`` (0 keeps all) and returns the deleted epochs."""
from moka.checkpoint import SnapshotManager

__all__ = ["SnapshotManager"]
