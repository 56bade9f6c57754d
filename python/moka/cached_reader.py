"""moka.cached_reader: Caffe2's cached_reader.CachedReader over moka's C++ one (moka/data/cached_reader.h): a
DBFileReader whose file is filled once from another reader.

``CachedReader(original_reader, db_path, db_type='LevelDB', name=None, batch_size=100, loop_over=False)``;
``build_cache_step(overwrite=False)`` returns the core.ExecutionStep that fills the cache (an empty step when
``db_path`` exists and not ``overwrite``: the original reader is then never read). Run it, then pipe the
CachedReader like any reader."""
from moka import _C, core

__all__ = ["CachedReader"]


class CachedReader(_C.CachedReader):
    __doc__ = _C.CachedReader.__doc__

    def build_cache_step(self, overwrite=False):
        """The step that builds the cache file (Caffe2's build_cache_step)."""
        return core.ExecutionStep(super().build_cache_step(overwrite))
