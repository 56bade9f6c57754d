"""moka.text_file_reader: Caffe2's text_file_reader.TextFileReader over moka's C++ one
(moka/data/text_file_reader.h): reads the rows of a delimited text file, one column per field of a Struct of
Scalars, ``batch_size`` rows per read.

``TextFileReader(init_net, filename, schema, num_passes=1, batch_size=1, delimiter='\\t')`` emits
``CreateTextFileReader`` into ``init_net``; each read emits ``TextFileReaderRead`` and ``IsEmpty`` of the first
field. The reader's position lives in its blob, so a checkpoint resumes the file where it stopped. A bad line is a
``moka.InvalidInput`` naming file, line, field and text."""
from moka import _C

__all__ = ["TextFileReader"]

TextFileReader = _C.TextFileReader
