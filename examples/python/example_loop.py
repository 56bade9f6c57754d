"""Seed `example_loop` (net_printer_test.py) in Python: nested ops.loop with an If/Elif/Else chain inside.

The outer loop runs i = 0..9, the inner one j = 0..i-1; val = 10*i + j is added to total and to exactly one of
total_large (>= 80), total_small (>= 50) or total_tiny. Prints what examples/seeds/example_loop.cpp prints."""
from moka.net_builder import ops
from moka.session import LocalSession
from moka.task import Task, final_output

with Task() as task:
    total = ops.Const(0)
    total_large = ops.Const(0)
    total_small = ops.Const(0)
    total_tiny = ops.Const(0)
    with ops.loop(10) as loop:
        outer = ops.Mul([loop.iter(), ops.Const(10)])
        with ops.loop(loop.iter()) as loop2:
            inner = loop2.iter()
            val = ops.Add([outer, inner])
            with ops.If(ops.GE([val, ops.Const(80)])) as c:
                ops.Add([total_large, val], [total_large])
            with c.Elif(ops.GE([val, ops.Const(50)])) as c:
                ops.Add([total_small, val], [total_small])
            with c.Else():
                ops.Add([total_tiny, val], [total_tiny])
            ops.Add([total, val], [total])
    # Not in the seed (which only builds the task): hand the totals back to print them.
    outputs = {name: final_output(blob) for name, blob in
               (("total", total), ("total_large", total_large), ("total_small", total_small),
                ("total_tiny", total_tiny))}

LocalSession().run(task)
for name, out in outputs.items():
    print(f"{name}={int(out.fetch())}")
