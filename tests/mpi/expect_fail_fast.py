"""Runs a command that must fail: passes when it exits non-zero within the given seconds (a killed rank must
end its whole MPI job, not hang it).  Usage: expect_fail_fast.py SECONDS COMMAND..."""
import subprocess
import sys
import time


def main() -> int:
    limit = float(sys.argv[1])
    command = sys.argv[2:]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=limit * 3)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace"))
        print(f"FAIL: still running after {limit * 3:.0f} s (it must exit within {limit:.0f} s)")
        return 1
    elapsed = time.monotonic() - start
    sys.stdout.write(proc.stdout.decode(errors="replace"))
    if proc.returncode == 0:
        print("FAIL: exited 0, but a rank was killed")
        return 1
    if elapsed > limit:
        print(f"FAIL: exited {proc.returncode} after {elapsed:.1f} s (more than {limit:.0f} s)")
        return 1
    print(f"ok: exited {proc.returncode} after {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
