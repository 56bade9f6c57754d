"""moka.db_file_reader: Caffe2's db_file_reader.DBFileReader over moka's C++ one (moka/data/cached_reader.h):
reads the rows of a dataset saved as one blob per column in a DB file, ``batch_size`` rows per read.

``DBFileReader(db_path, db_type, name=None, batch_size=100, loop_over=False, field_names=None)``: ``name``
defaults to ``<file name without its extension>_db_file_reader``; without ``field_names`` the columns are the
DB's keys, read from the file when the reader is made (so the file must exist then). Errors are moka's:
``moka.InvalidInput`` for an unknown ``db_type``, a missing file or ``batch_size <= 0``."""
from moka import _C

__all__ = ["DBFileReader"]

DBFileReader = _C.DBFileReader
