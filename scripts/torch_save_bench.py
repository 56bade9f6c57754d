#!/usr/bin/python3
"""torch.save/torch.load throughput on the tensors of bench/save_load_bench.cpp (issue 5, part 5), for comparison.

1 GiB of float32 as 10 and as 10,000 tensors (a dict name -> tensor), saved with torch.save and loaded with
torch.load, beside plain write+fsync+rename / read() of the same bytes in the same run. torch.save does not
fsync, so the save is timed both bare and followed by fsync + rename + directory fsync (what moka's save
does); the ratio uses the latter. Rates are MiB/s of tensor payload, median (min-max) over --reps.

With --moka PATH (a release build's bench/save_load_bench), every repetition also runs
`save_load_bench --backends=minidb --reps=3` on the same byte count and tensor count, right after torch's,
and takes the median of its three repetitions (a first repetition in a fresh process pays page faults for
all its new memory, which torch, running its repetitions in one process, pays only once); a second table
gives moka (durable minidb save_blobs / load_blobs) against torch in the same run: the issue's "moka faster
on both" compares these, not numbers from different runs.

Usage (Debian's Python, not a pyenv one; the script re-executes itself with /usr/bin/python3):
  scripts/torch_save_bench.py [--bytes N] [--blobs 10,10000] [--reps 3] [--cold] [--dir DIR] [--no-install]
                              [--moka build/release/bench/save_load_bench]
  Environment: MOKA_BENCH_SAVE_BYTES, MOKA_BENCH_REPS, MOKA_BENCH_COLD=1, MOKA_BENCH_DIR (as save_load_bench).
Installs Debian's python3-torch with apt-get when torch is missing (needs root), unless --no-install.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from debian_torch import ensure_debian_python, import_torch  # noqa: E402


def drop_page_cache():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def fsync_dir(d):
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_tensors(torch, total_bytes, count):
    elems = total_bytes // 4
    per = elems // count
    gen = torch.Generator().manual_seed(12345)
    out = {}
    for i in range(count):
        n = elems - per * (count - 1) if i == count - 1 else per
        out[f"t{i:05d}"] = torch.rand(n, generator=gen, dtype=torch.float32)
    return out


def plain_save(tensors, d):
    path, tmp = os.path.join(d, "plain.bin"), os.path.join(d, "plain.bin.tmp")
    t0 = time.perf_counter()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for t in tensors.values():
        mv = memoryview(t.numpy()).cast("B")
        while mv:
            mv = mv[os.write(fd, mv):]
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, path)
    fsync_dir(d)
    return time.perf_counter() - t0


def plain_load(tensors, d):
    path = os.path.join(d, "plain.bin")
    t0 = time.perf_counter()
    bufs = []
    with open(path, "rb", buffering=0) as f:
        for t in tensors.values():
            b = bytearray(t.numel() * 4)  # fresh memory, as a load needs
            mv = memoryview(b)
            while mv:
                mv = mv[f.readinto(mv):]
            bufs.append(b)
    return time.perf_counter() - t0


def torch_save(torch, tensors, d):
    path, tmp = os.path.join(d, "t.pt"), os.path.join(d, "t.pt.tmp")
    t0 = time.perf_counter()
    with open(tmp, "wb") as f:
        torch.save(tensors, f)
        f.flush()
        bare = time.perf_counter() - t0
        os.fsync(f.fileno())
    os.rename(tmp, path)
    fsync_dir(d)
    return bare, time.perf_counter() - t0


def torch_load(torch, tensors, d, verify):
    path = os.path.join(d, "t.pt")
    t0 = time.perf_counter()
    loaded = torch.load(path)
    s = time.perf_counter() - t0
    if verify:
        assert len(loaded) == len(tensors) and all(torch.equal(loaded[k], v) for k, v in tensors.items()), "torch.load differs"
    return s


def moka_rates(binary, total_bytes, count, d, cold):
    """save_load_bench (minidb), 3 repetitions: median (save MiB/s, load MiB/s), parsed from its table row."""
    cmd = [binary, f"--bytes={total_bytes}", f"--blobs={count}", "--backends=minidb", "--reps=3", f"--dir={d}"]
    if cold:
        cmd.append("--cold")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {out.returncode}):\n{out.stderr.strip()}")
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 8 and cells[0] == str(count) and cells[1] == "minidb":
            return float(cells[2].split()[0]), float(cells[5].split()[0])
    sys.exit(f"could not find the minidb row for {count} blobs in the output of {' '.join(cmd)}:\n{out.stdout}")


def fmt(xs, ratio=False):
    f = "{:.2f}" if ratio else "{:.0f}"
    return (f + " (" + f + "–" + f + ")").format(statistics.median(xs), min(xs), max(xs))


def main():
    ensure_debian_python()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bytes", type=int, default=int(os.environ.get("MOKA_BENCH_SAVE_BYTES", 1 << 30)))
    p.add_argument("--blobs", default="10,10000")
    p.add_argument("--reps", type=int, default=int(os.environ.get("MOKA_BENCH_REPS", 3)))
    p.add_argument("--cold", action="store_true", default=os.environ.get("MOKA_BENCH_COLD") == "1")
    p.add_argument("--dir", default=os.environ.get("MOKA_BENCH_DIR", "/tmp"),
                   help="where the run makes (and then removes) its own scratch directory")
    p.add_argument("--no-install", action="store_true")
    p.add_argument("--moka", metavar="PATH", help="save_load_bench binary to run in the same repetitions")
    a = p.parse_args()
    if a.moka and not os.access(a.moka, os.X_OK):
        sys.exit(f"--moka {a.moka}: not an executable file (build it: cmake --build build/release --target "
                 "save_load_bench)")
    torch = import_torch(not a.no_install)
    torch.set_num_threads(1)
    os.makedirs(a.dir, exist_ok=True)
    a.dir = tempfile.mkdtemp(prefix="moka-torch-save-bench-", dir=a.dir)  # removed at the end, not --dir itself
    mib = a.bytes / (1 << 20)
    print(f"torch_save_bench: torch {torch.__version__}, Python {sys.version.split()[0]} ({sys.executable}), "
          f"{mib:.0f} MiB float32, {a.reps} repetitions, {'cold' if a.cold else 'warm'} page cache, dir {a.dir}")
    print("rates in MiB/s of tensor payload, median (min–max); ratio = torch / plain of the same repetition\n")
    print("| tensors | torch.save (no fsync) | torch.save + fsync + rename | plain write+fsync+rename | save ratio "
          "| torch.load | plain read() | load ratio |")
    print("|---|---|---|---|---|---|---|---|")
    versus = []
    for count in [int(x) for x in a.blobs.split(",")]:
        tensors = make_tensors(torch, a.bytes, count)
        r = {k: [] for k in ("bare", "save", "psave", "sratio", "load", "pload", "lratio", "msave", "mload",
                             "msratio", "mlratio")}
        for rep in range(a.reps):
            ps = plain_save(tensors, a.dir)
            if a.cold:
                drop_page_cache()
            pl = plain_load(tensors, a.dir)
            os.remove(os.path.join(a.dir, "plain.bin"))
            bare, ts = torch_save(torch, tensors, a.dir)
            if a.cold:
                drop_page_cache()
            tl = torch_load(torch, tensors, a.dir, rep == 0)
            os.remove(os.path.join(a.dir, "t.pt"))
            r["bare"].append(mib / bare)
            r["save"].append(mib / ts)
            r["psave"].append(mib / ps)
            r["sratio"].append(ps / ts)
            r["load"].append(mib / tl)
            r["pload"].append(mib / pl)
            r["lratio"].append(pl / tl)
            if a.moka:
                ms, ml = moka_rates(a.moka, a.bytes, count, os.path.join(a.dir, "moka"), a.cold)
                r["msave"].append(ms)
                r["mload"].append(ml)
                r["msratio"].append(ms / (mib / ts))
                r["mlratio"].append(ml / (mib / tl))
        print(f"| {count} | {fmt(r['bare'])} | {fmt(r['save'])} | {fmt(r['psave'])} | {fmt(r['sratio'], True)} "
              f"| {fmt(r['load'])} | {fmt(r['pload'])} | {fmt(r['lratio'], True)} |", flush=True)
        if a.moka:
            versus.append(f"| {count} | {fmt(r['msave'])} | {fmt(r['save'])} | {fmt(r['msratio'], True)} "
                          f"| {fmt(r['mload'])} | {fmt(r['load'])} | {fmt(r['mlratio'], True)} |")
        del tensors
    if versus:
        print("\nmoka (minidb save_blobs with fsync + rename, load_blobs) vs torch in the same repetitions; "
              "ratio = moka / torch\n")
        print("| tensors | moka save | torch.save + fsync + rename | save ratio | moka load | torch.load | load ratio |")
        print("|---|---|---|---|---|---|---|")
        for line in versus:
            print(line)
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
