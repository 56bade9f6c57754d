"""A data pipeline built from Python (moka.pipeline: a Dataset reader, a processor, a Dataset writer) beside PyTorch's
torch.utils.data.DataLoader doing the same transform (x * 2 + 1 on float32 records of 16 values) in the same run.
Prints records/s of each and the moka / DataLoader ratios, first with a processor of moka operators (Mul, Add), then
with a Python-function processor (ops.Python) against DataLoader calling the same function.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_pipe_bench.py [--rows 1048576] [--loader-rows 65536]
        [--repeats 3] [--no-install]

DataLoader runs in two forms: the idiomatic map-style Dataset (one record per __getitem__, default collate) and a
batched one (a BatchSampler with batch_size=None, one __getitem__ per batch), each with num_workers 0 and 2. It
needs Debian's python3-torch, which it installs with apt-get when missing (unless --no-install; the tests never do).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from debian_torch import ensure_debian_python, import_torch  # noqa: E402

if __name__ == "__main__":
    ensure_debian_python()
torch = import_torch("--no-install" not in sys.argv)

import numpy as np  # noqa: E402
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler  # noqa: E402

from moka import core  # noqa: E402
from moka.core import NameScope  # noqa: E402
from moka.dataset import Dataset  # noqa: E402
from moka.net_builder import ops  # noqa: E402
from moka.pipeline import pipe  # noqa: E402
from moka.schema import FeedRecord, FetchRecord, NewRecord, Struct  # noqa: E402
from moka.session import LocalSession  # noqa: E402
from moka.task import TaskGroup, WorkspaceType  # noqa: E402

WIDTH = 16


def transform(x):
    """The function both Python-function pipelines call on a batch (a numpy array)."""
    return x * np.float32(2) + np.float32(1)


def operator_processor(rec):
    y = ops.Add([ops.Mul([rec.x(), ops.Const(np.float32(2))]), ops.Const(np.float32(1))])
    return Struct(("x", y))


def python_processor(rec):
    def f(inputs, outputs):
        outputs[0].feed(transform(inputs[0].data))
    y = ops.Python(f)([rec.x()], 1)
    return Struct(("x", y))


class MokaPipe:
    """The source records fed once into a LocalSession; each run pipes them into a fresh destination Dataset."""

    def __init__(self, x):
        self.session, self.x, self.runs = LocalSession(), x, 0
        init = core.Net("src_init")
        with NameScope("src"):
            values = Struct(("x", x))
            blobs = NewRecord(init, values)
            self.src = Dataset(blobs, name="src")
            FeedRecord(blobs, values, self.session.workspace())
        self.schema = values.clone_schema()
        self.session.run(init)

    def run(self, batch, threads, processor):
        self.runs += 1
        init = core.Net("dst_init_%d" % self.runs)
        with NameScope("dst_%d" % self.runs):
            dst = Dataset(self.schema, name="dst_%d" % self.runs)
            dst.init_empty(init)
        self.session.run(init)
        with TaskGroup(workspace_type=WorkspaceType.GLOBAL) as tg:
            pipe(self.src.reader(batch_size=batch), dst.writer(), num_runtime_threads=threads, processor=processor)
        t0 = time.perf_counter()
        self.session.run(tg)
        seconds = time.perf_counter() - t0
        got = FetchRecord(dst.content(), self.session.workspace()).x()
        check(got, self.x)
        return len(self.x) / seconds


class PerRecord(torch.utils.data.Dataset):
    """The idiomatic DataLoader input: one record per __getitem__, batched by the default collate."""

    def __init__(self, x, fn):
        self.x, self.fn = x, fn

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.fn(self.x[i])


class PerBatch(PerRecord):
    """The fast DataLoader input: __getitem__ takes a list of indices (BatchSampler, batch_size=None)."""

    def __getitem__(self, indices):
        return self.fn(self.x[indices[0]:indices[-1] + 1])


def torch_transform(x):
    return torch.from_numpy(x) * 2 + 1


def numpy_transform(x):
    return torch.from_numpy(transform(x))


def loader_rate(x, batch, workers, fn, batched):
    if batched:
        loader = DataLoader(PerBatch(x, fn), batch_size=None, num_workers=workers,
                            sampler=BatchSampler(SequentialSampler(range(len(x))), batch, drop_last=False))
    else:
        loader = DataLoader(PerRecord(x, fn), batch_size=batch, num_workers=workers)
    out = np.empty_like(x)
    t0 = time.perf_counter()
    pos = 0
    for b in loader:  # the writer's part: each batch appended to the output
        out[pos:pos + len(b)] = b.numpy()
        pos += len(b)
    seconds = time.perf_counter() - t0
    check(out, x)
    return len(x) / seconds


def check(got, x):
    """Every record transformed exactly once (order may differ between moka's runtime threads)."""
    want = transform(x)
    if got.shape != want.shape:
        raise SystemExit("wrong shape %s, expected %s" % (got.shape, want.shape))
    if not np.array_equal(got[np.argsort(got[:, 0], kind="stable")], want):
        raise SystemExit("wrong records")


def best(repeats, fn):
    return max(fn() for _ in range(repeats))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1 << 20, help="records through each moka pipeline")
    parser.add_argument("--loader-rows", type=int, default=1 << 16, help="records through each DataLoader run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each; the best is reported")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing python3-torch")
    a = parser.parse_args()
    x = np.arange(a.rows * WIDTH, dtype=np.float32).reshape(a.rows, WIDTH)
    xl = x[:a.loader_rows].copy()
    moka_pipe = MokaPipe(x)
    print("records of %d float32, x * 2 + 1; moka %d records, DataLoader %d; best of %d; torch %s, %d intra-op "
          "thread(s); records/s in millions" % (WIDTH, a.rows, a.loader_rows, a.repeats, torch.__version__,
                                                 torch.get_num_threads()))
    for title, processor, fn in [("moka operators (Mul, Add) vs torch ops in DataLoader", operator_processor,
                                  torch_transform),
                                 ("a Python function, the same in both (numpy on the batch)", python_processor,
                                  numpy_transform)]:
        print("\n" + title)
        print("%6s  %-22s %9s   %-26s %9s  %s" % ("batch", "moka", "M rec/s", "DataLoader", "M rec/s", "moka / it"))
        for batch in (64, 1024):
            peers = [("per-record, workers %d" % w, best(a.repeats, lambda w=w: loader_rate(xl, batch, w, fn, False)))
                     for w in (0, 2)]
            peers += [("per-batch, workers %d" % w, best(a.repeats, lambda w=w: loader_rate(xl, batch, w, fn, True)))
                      for w in (0, 2)]
            for threads in (1, 2):
                rate = best(a.repeats, lambda: moka_pipe.run(batch, threads, processor))
                for name, peer in peers:
                    print("%6d  %-22s %9.3f   %-26s %9.3f  %6.1fx" % (batch, "threads %d" % threads, rate / 1e6, name,
                                                                   peer / 1e6, rate / peer))


if __name__ == "__main__":
    main()
