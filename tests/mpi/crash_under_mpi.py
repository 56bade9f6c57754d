"""Crash safety across ranks: `moka job run` under mpirun, with checkpoints, loses one random rank to SIGKILL
at a random moment (during an epoch, a save or a commit); every rank must be gone, non-zero, within 10 s, and
the same mpirun with `--resume latest` must end with the outputs of a run never interrupted, without finding a
committed epoch it cannot read (docs/distributed.md §6.2). `make crash-test` runs 50 trials, ctest a few.
Usage: crash_under_mpi.py TRIALS MOKA_CLI SOURCE_DIR MPIRUN [MPIRUN_ARGS...]"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

trials, moka, source = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mpirun = sys.argv[4:]
job = os.path.join(source, "examples", "jobs", "counting.json")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def job_run(ranks, args, timeout=120):
    return subprocess.run(mpirun + ["-np", str(ranks), moka, "job", "run", job] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def ranks_of(pid):
    """The moka processes mpirun `pid` started (its descendants named moka)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append((int(entry), name))
    found, todo = [], [pid]
    while todo:
        for child, name in children.get(todo.pop(), []):
            todo.append(child)
            if name == "moka":
                found.append(child)
    return found


reference = subprocess.run([moka, "job", "run", job, "--no-checkpoints", "--fetch", "total,checksum"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
check(reference.returncode == 0, f"reference run: {reference.returncode} {reference.stderr}")
want = reference.stdout.splitlines()[-1]
rng = random.Random(int(os.environ.get("MOKA_CRASH_SEED", "1")))

with tempfile.TemporaryDirectory(prefix="moka-mpi-crash-") as tmp:
    # How long an uninterrupted run takes: the kills land anywhere in it.
    start = time.monotonic()
    full = job_run(2, ["--checkpoint-dir", os.path.join(tmp, "full"), "--fetch", "total,checksum"])
    duration = time.monotonic() - start
    check(full.returncode == 0 and full.stdout.splitlines()[-1] == want,
          f"uninterrupted run: {full.returncode} {full.stdout!r} {full.stderr}")
    killed_early = 0
    for trial in range(trials):
        ranks = 2 + trial % 2
        ckpt = os.path.join(tmp, f"trial{trial}")
        p = subprocess.Popen(mpirun + ["-np", str(ranks), moka, "job", "run", job, "--checkpoint-dir", ckpt],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.25 * duration, duration))
        victims = ranks_of(p.pid)
        if victims and p.poll() is None:
            victim = rng.choice(victims)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            try:
                p.communicate(timeout=10)
                check(p.returncode != 0, f"trial {trial}: mpirun exited 0 after losing a rank")
                check(time.monotonic() - killed_at < 10, f"trial {trial}: ranks outlived the lost one by > 10 s")
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                check(False, f"trial {trial}: still running 10 s after a rank was killed")
        else:
            killed_early += 1
            p.communicate(timeout=60)
        committed = sorted(int(f.split(".")[1]) for f in os.listdir(ckpt) if f.startswith("moka-manifest.")) \
            if os.path.isdir(ckpt) else []
        r = job_run(ranks, ["--checkpoint-dir", ckpt, "--resume", "latest", "--fetch", "total,checksum"])
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and lines and lines[-1] == want,
              f"trial {trial} ({ranks} ranks): resume gave {r.returncode} {lines[-3:]} {r.stderr}")
        check(not any(l.startswith("skipping checkpoint") for l in lines),
              f"trial {trial}: a committed epoch did not verify: {lines}")
        print(f"trial {trial}: {ranks} ranks, committed {committed[-1] if committed else 'none'} when killed, "
              f"{lines[0] if lines else ''}", flush=True)
    print(f"{trials} trials ({killed_early} ended before the kill)")

print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
