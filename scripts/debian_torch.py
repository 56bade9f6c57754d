"""Debian's python3 and python3-torch for the benchmarks that compare with PyTorch (never the tests): re-run under
/usr/bin/python3 (numpy and torch exist only for it), and install python3-torch with apt-get when it is missing."""
import os
import subprocess
import sys

DEBIAN_PYTHON = "/usr/bin/python3"


def ensure_debian_python():
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.path.exists(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)


def import_torch(install):
    try:
        import torch  # noqa: F401
    except ImportError:
        if not install:
            sys.exit("torch is not installed; run without --no-install (apt-get install -y python3-torch) or install it")
        print("installing Debian's python3-torch with apt-get ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        rc = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "python3-torch"], env=env).returncode
        if rc != 0:
            sys.exit(f"apt-get install python3-torch failed (exit {rc}); cannot run the torch benchmark here")
    import torch
    return torch
