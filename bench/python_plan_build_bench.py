"""Building a plan of 1,000 nets from Python (moka.core) beside the same plan built in C++ (plan_build_bench), in
the same run: each net a Const and 9 Adds, one step per net, then its definition and plan JSON. Prints the medians
and the Python / C++ time ratio.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_plan_build_bench.py [--build build/release]
"""
import argparse
import os
import statistics
import subprocess
import time

from moka import core


def build_plan(nets, ops):
    plan = core.Plan("plan")
    for i in range(nets):
        net = core.Net("net_%d" % i)
        x = net.Const(1)
        for _ in range(1, ops):
            x = net.Add([x, x])
        plan.AddStep(core.ExecutionStep("step_%d" % i, [net]))
    return plan


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/release", help="the build tree holding bench/plan_build_bench")
    parser.add_argument("--nets", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    a = parser.parse_args()
    build, json = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        plan = build_plan(a.nets, a.ops)
        t1 = time.perf_counter()
        text = plan._plan.to_json()
        t2 = time.perf_counter()
        build.append(t1 - t0)
        json.append(t2 - t1)
    cpp = subprocess.run([os.path.join(a.build, "bench", "plan_build_bench"), "--nets", str(a.nets), "--ops",
                          str(a.ops), "--repeats", str(a.repeats)], check=True, capture_output=True, text=True)
    fields = dict(kv.split("=") for kv in cpp.stdout.split())
    py_build, cpp_build = statistics.median(build), float(fields["cpp_build_s"])
    py_json, cpp_json = statistics.median(json), float(fields["cpp_json_s"])
    print("plan of %d nets x %d ops (%d JSON bytes in C++, %d from Python), median of %d" %
          (a.nets, a.ops, int(fields["json_bytes"]), len(text), a.repeats))
    print("build: python %.1f ms, c++ %.1f ms, python / c++ %.2fx" % (py_build * 1e3, cpp_build * 1e3,
                                                                     py_build / cpp_build))
    print("json:  python %.1f ms, c++ %.1f ms" % (py_json * 1e3, cpp_json * 1e3))


if __name__ == "__main__":
    main()
