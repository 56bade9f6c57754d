"""moka.queue_util: Queue (caffe2.python.queue_util's name), a bounded queue of records between pipes
(moka/data/queue.h): ``Queue(capacity, schema=None, name='queue', num_dequeue_records=1)``. A full queue blocks
its writer; a closed one refuses writes and drains to its readers; an error anywhere wakes both sides."""
from moka import _C

__all__ = ["Queue"]

Queue = _C.Queue
