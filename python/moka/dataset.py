"""moka.dataset: Dataset (caffe2.python.dataset's name), an in-memory table in blobs read through a shared cursor
(moka/data/dataset.h). ``Dataset(record, name=None)``; ``reader(init_net=None, cursor_name=None, batch_size=1,
enforce_batch_size=False)`` takes a core.Net or ``ops`` as init_net; ``writer(init_net=None)``."""
from moka import _C

__all__ = ["Dataset"]

Dataset = _C.Dataset
