"""moka.schema: records (caffe2.python.schema's names) over moka's C++ records (moka/data/schema.h).

A Field is a handle, as in Caffe2: ``rec.val`` is the child field itself and ``rec.val()`` its blob (a
core.BlobReference). ``Struct(('val', np.array([...])))`` makes a data record whose scalar carries the array.
Net arguments (NewRecord, ConstRecord, InitEmptyRecord) take a core.Net or ``ops`` (the active NetBuilder's
current net), as Caffe2's did. FeedRecord and FetchRecord take a C.Workspace (``session.workspace(node)`` for
a session's node), or none for moka.workspace's current one, as Caffe2's did."""
from moka import _C

__all__ = ["Field", "Scalar", "Struct", "List", "NewRecord", "ConstRecord", "InitEmptyRecord", "from_blob_list",
           "from_column_list", "FeedRecord", "FetchRecord", "FIELD_SEPARATOR"]

FIELD_SEPARATOR = ":"

Field = _C.Field
Scalar = _C.Scalar
Struct = _C.Struct
List = _C.List
NewRecord = _C.NewRecord
ConstRecord = _C.ConstRecord
InitEmptyRecord = _C.InitEmptyRecord
from_blob_list = _C.from_blob_list
from_column_list = _C.from_column_list


def _workspace_or_current(ws):
    if ws is not None:
        return ws
    from moka import workspace  # imports moka.core, which imports this module
    return workspace._ws()


def FeedRecord(record, values, ws=None):
    """Feeds values (a record of the same schema, or one array per field) into record's blobs in ws."""
    return _C.FeedRecord(record, values, _workspace_or_current(ws))


def FetchRecord(record, ws=None):
    """A copy of record whose scalars carry their blobs' values, read from ws."""
    return _C.FetchRecord(record, _workspace_or_current(ws))
