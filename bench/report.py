#!/usr/bin/env python3
"""bench/report.py: runs a benchmark binary and prints a markdown table pairing each moka figure with its peer.

Usage: bench/report.py build/release/bench/plan_bench [--min-time 1]
Per-item time = 1 / items_per_second (one plan iteration, one concurrent iteration, ...).
"""
import json
import subprocess
import sys

PAIRS = [  # (moka benchmark, peer benchmark, what one item is)
    ("BM_PlanLoop/1", "BM_PlainLoop/1", "num_iter loop, net of 1 scalar Add"),
    ("BM_PlanLoop/2", "BM_PlainLoop/2", "num_iter loop, net of 2 scalar Adds"),
    ("BM_PlanLoop/4", "BM_PlainLoop/4", "num_iter loop, net of 4 scalar Adds"),
    ("BM_ShouldStopLoop", "BM_PlainShouldStopLoop", "should_stop_blob loop (Add + GE + stop check)"),
    ("BM_ConcurrentSubsteps/2/real_time", "BM_ThreadPerSubstep/2/real_time", "iteration of 2 concurrent substeps"),
    ("BM_ConcurrentSubsteps/8/real_time", "BM_ThreadPerSubstep/8/real_time", "iteration of 8 concurrent substeps"),
    ("BM_ConcurrentSubstepsOnFibers/2/real_time", "BM_ThreadPerSubstep/2/real_time",
     "iteration of 2 concurrent substeps, Concurrency::fibers"),
    ("BM_ConcurrentSubstepsOnFibers/8/real_time", "BM_ThreadPerSubstep/8/real_time",
     "iteration of 8 concurrent substeps, Concurrency::fibers"),
    ("BM_PlanOfNets/10000", "BM_PlanOfSteps/10000", "plan of 10^4 one-Add nets, step i runs net i, per net (run_plan)"),
    ("BM_PlanOfNets/100000", "BM_PlanOfSteps/100000", "plan of 10^5 one-Add nets, step i runs net i, per net (run_plan)"),
]


def fmt_time(seconds):
    ns = seconds * 1e9
    return f"{ns:.1f} ns" if ns < 10_000 else f"{ns / 1000:.1f} µs"


def main():
    binary = sys.argv[1]
    min_time = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--min-time" else "1"
    out = subprocess.run([binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                         check=True, capture_output=True, text=True).stdout
    results = {b["name"]: 1.0 / b["items_per_second"] for b in json.loads(out)["benchmarks"]}
    print("| work (per item) | moka | peer | moka speed-up vs peer |")
    print("|---|---|---|---|")
    for mine, peer, what in PAIRS:
        if mine in results and peer in results:
            print(f"| {what} | {fmt_time(results[mine])} | {fmt_time(results[peer])} | "
                  f"{results[peer] / results[mine]:.2f}× |")
    if "BM_PlanLoop/1" in results and "BM_PlanLoop/4" in results:
        per_op = (results["BM_PlanLoop/4"] - results["BM_PlanLoop/1"]) / 3
        print(f"\nExtra operator in the loop's net: {fmt_time(per_op)} each (from the 1- and 4-Add nets).")


if __name__ == "__main__":
    main()
