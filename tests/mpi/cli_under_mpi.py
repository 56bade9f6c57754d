"""`moka run` under mpirun (docs/distributed.md, docs/cli.md): each node on its rank, --fetch from the rank
that hosts the blob, the result and error lines printed once (by rank 0), the same exit code as without
MPI, `moka job run` across ranks (with and without checkpoints; a resume after a damaged file on one rank),
a trace per rank (--trace, docs/tracing.md), and SIGINT stopping every rank.
Usage: cli_under_mpi.py MOKA_CLI SOURCE_DIR MPIRUN [MPIRUN_ARGS...]"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

moka, source = sys.argv[1], sys.argv[2]
mpirun = sys.argv[3:]
group = os.path.join(source, "examples", "task_groups", "two_nodes.json")
failures = []


def run(args, ranks=None, timeout=60):
    command = (mpirun + ["-np", str(ranks)] if ranks else []) + [moka] + args
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


plain = run(["run", group, "--fetch", "total,product"])
check(plain.returncode == 0, f"without mpirun: exit {plain.returncode}: {plain.stderr}")
for ranks in (1, 2, 3):
    r = run(["run", group, "--fetch", "total,product"], ranks)
    check(r.returncode == 0, f"{ranks} ranks: exit {r.returncode}: {r.stderr}")
    check(r.stdout == plain.stdout, f"{ranks} ranks: printed {r.stdout!r}, without mpirun {plain.stdout!r}")
    check(json.loads(plain.stdout)["total"]["data"] == [15], f"total: {plain.stdout}")

# An error: one line, from rank 0 only, and the exit code moka has without mpirun.
r = run(["run", group, "--fetch", "nosuch"], 3)
lines = [l for l in r.stderr.splitlines() if l.startswith("moka:")]
check(r.returncode == 1, f"missing --fetch blob: exit {r.returncode}")
check(lines == ['moka: error: --fetch: blob "nosuch" does not exist on any node after the run'],
      f"missing --fetch blob: error lines {lines}")

with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"name": "g", "nodes": [{"node": "a", "plan": {"network": [], "execution_step": [{"name": "s", '
                '"network": ["nope"]}]}}]}')
    r = run(["run", bad], 2)
    lines = [l for l in r.stderr.splitlines() if l.startswith("moka:")]
    check(r.returncode == 2, f"invalid group: exit {r.returncode}")
    check(len(lines) == 1 and lines[0].startswith("moka: invalid input: "), f"invalid group: error lines {lines}")

    example = os.path.join(source, "examples", "jobs",
                           sorted(j for j in os.listdir(os.path.join(source, "examples", "jobs"))
                                  if j.endswith(".json"))[0])
    # The example's tensors shrunk to at most 1024 elements: its 4 MiB weights (there to make each checkpoint take
    # time, which the crash tests want) made every step a million-float Add, about 25 s a run under TSan, and
    # nothing here depends on their size.
    def shrink(value):
        if isinstance(value, dict):
            if value.get("name") == "shape" and isinstance(value.get("ints"), list):
                value["ints"] = [min(d, 1024) for d in value["ints"]]
            for v in value.values():
                shrink(v)
        elif isinstance(value, list):
            for v in value:
                shrink(v)
        return value

    job = os.path.join(tmp, "job.json")
    with open(example) as f:
        small = shrink(json.load(f))
    with open(job, "w") as f:
        json.dump(small, f)
    # `moka job run` across ranks: each node on its rank, the same epochs and outputs as without mpirun
    # (the seconds of each epoch aside), printed once.
    def without_timings(text):
        return [re.sub(r"[0-9.]+ s", "T s", line) for line in text.splitlines()]

    plain_job = run(["job", "run", job, "--no-checkpoints", "--fetch", "total"])
    check(plain_job.returncode == 0, f"job run without mpirun: exit {plain_job.returncode}: {plain_job.stderr}")
    check("finished after epoch" in plain_job.stdout, f"job run without mpirun printed {plain_job.stdout!r}")
    for ranks in (1, 2, 3):
        r = run(["job", "run", job, "--no-checkpoints", "--fetch", "total"], ranks)
        check(r.returncode == 0, f"job run, {ranks} ranks: exit {r.returncode}: {r.stderr}")
        check(without_timings(r.stdout) == without_timings(plain_job.stdout),
              f"job run, {ranks} ranks: printed {r.stdout!r}, without mpirun {plain_job.stdout!r}")

    # One rank hosts every node: checkpoints work as without mpirun.
    r = run(["job", "run", job, "--checkpoint-dir", os.path.join(tmp, "one")], 1)
    check(r.returncode == 0 and without_timings(r.stdout)[-1] == without_timings(plain_job.stdout)[-1],
          f"job run, 1 rank with checkpoints: {r.returncode} {r.stdout!r} {r.stderr}")
    check(any(f.startswith("moka-manifest.12") for f in os.listdir(os.path.join(tmp, "one"))),
          f"job run, 1 rank: no manifest in {os.listdir(os.path.join(tmp, 'one'))}")

    # Checkpoints across ranks: each rank writes the DBs of its nodes, every epoch is committed once, the
    # outputs are those of one process; a resume loads the same epoch on every rank.
    for ranks in (2, 3):
        ckpt = os.path.join(tmp, f"ckpt{ranks}")
        r = run(["job", "run", job, "--checkpoint-dir", ckpt, "--fetch", "total"], ranks)
        check(r.returncode == 0 and without_timings(r.stdout)[-1] == without_timings(plain_job.stdout)[-1],
              f"job run, {ranks} ranks with checkpoints: {r.returncode} {r.stdout!r} {r.stderr}")
        manifests = sorted(f for f in os.listdir(ckpt) if f.startswith("moka-manifest."))
        check(len(manifests) == 13, f"job run, {ranks} ranks: manifests {manifests}")
        for epoch in (11, 12):
            os.remove(os.path.join(ckpt, f"moka-manifest.{epoch}.json"))
        # The reader's DB of epoch 10 (its node is on rank 1) damaged: every rank falls back to epoch 9,
        # and the reason is printed once.
        reader_db = os.path.join(ckpt, "reader.10")
        with open(reader_db, "r+b") as f:
            f.seek(os.path.getsize(reader_db) // 2)
            byte = f.read(1)
            f.seek(os.path.getsize(reader_db) // 2)
            f.write(bytes([byte[0] ^ 0x5A]))
        r = run(["job", "run", job, "--checkpoint-dir", ckpt, "--resume", "latest", "--fetch", "total"], ranks)
        lines = r.stdout.splitlines()
        skips = [l for l in lines if l.startswith("skipping checkpoint epoch 10:")]
        check(r.returncode == 0 and lines[-1] == plain_job.stdout.splitlines()[-1],
              f"resume, {ranks} ranks: {r.returncode} {r.stdout!r} {r.stderr}")
        check(len(skips) == 1 and "rank 1" in skips[0] and "node 'reader'" in skips[0],
              f"resume, {ranks} ranks: skip lines {skips}")
        check("resuming from epoch 9" in lines, f"resume, {ranks} ranks: printed {lines}")

    # SIGINT to mpirun reaches every rank: the run stops, exit 130 (mpirun may report its own code for a
    # signalled job; what matters is that it ends promptly and not with 0).
    forever = os.path.join(tmp, "forever.json")
    with open(forever, "w") as f:
        json.dump({"name": "g", "nodes": [{"node": n, "plan": {
            "network": [{"name": n + "_net", "op": [{"type": "ConstantFill", "output": ["x"],
                                                      "arg": [{"name": "shape", "ints": []}]}]}],
            "execution_step": [{"name": n + "_loop", "network": [n + "_net"], "num_iter": 10 ** 15}]}}
            for n in ("a", "b")]}, f)
    # --trace under mpirun: one file per rank, FILE with .rank<r> before its extension, each a complete trace of
    # its own rank's nodes (process "rank r", pids from r * 1000), every span closed.
    trace = os.path.join(tmp, "trace.json")
    r = run(["job", "run", job, "--no-checkpoints", "--trace", trace], 2)
    check(r.returncode == 0, f"job run --trace, 2 ranks: exit {r.returncode}: {r.stderr}")
    check(not os.path.exists(trace), "job run --trace, 2 ranks: an unsuffixed trace file was written")
    for rank in (0, 1):
        path = os.path.join(tmp, f"trace.rank{rank}.json")
        try:
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        except (OSError, ValueError) as e:
            check(False, f"trace of rank {rank}: {e}")
            continue
        names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        check(f"rank {rank}" in names, f"trace of rank {rank}: process names {names}")
        spans = [e for e in events if e["ph"] == "X"]
        check(spans and all("dur" in e and e["dur"] >= 0 for e in spans), f"trace of rank {rank}: open spans")
        check(all(rank * 1000 <= e["pid"] < (rank + 1) * 1000 for e in spans), f"trace of rank {rank}: pids")
        check(any(e["cat"] == "epoch" for e in spans), f"trace of rank {rank}: no epoch span")
        check(any(e["cat"] == "step" for e in spans), f"trace of rank {rank}: no step span")

    p = subprocess.Popen(mpirun + ["-np", "2", moka, "run", forever], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(2.0)
    start = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=10)
        elapsed = time.monotonic() - start
        check(p.returncode != 0, f"SIGINT: exit {p.returncode}")
        check(elapsed < 5, f"SIGINT: took {elapsed:.1f} s")
        print(f"SIGINT: exit {p.returncode} after {elapsed:.2f} s")
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "SIGINT: still running 10 s later")

print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
