"""Prints bench/cluster/cluster.py's verdict (calibration_problem) on single-rank calibration runs: the quiet run
of 2026-12-07 23:24 (bench/README.md, issue 25: pp1/log.json's step times, modelled 88.35 ms at efficiency 1)
and a steady one. Used by cluster-calibration.test."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "cluster"))
import cluster  # noqa: E402

# The quiet run's 20 steps; the driver drops the first 5 (--warmup).
QUIET = [0.12785, 0.121401, 0.12241, 0.122684, 0.121786, 0.121591, 0.12123, 0.123083, 0.121781, 0.1245, 0.120763,
         0.116629, 0.118206, 0.12489, 0.12014, 0.085852, 0.083106, 0.089892, 0.083585, 0.083329]
MODELLED = 0.08835

for name, steps, modelled in [
        ("quiet run, steps 6-20", QUIET[5:], MODELLED),
        ("quiet run, its last 5 steps", QUIET[15:], MODELLED),
        ("quiet run, steps 6-15", QUIET[5:15], MODELLED),
        ("steady, 81.6 ms against 74.2 modelled", [0.0816 + 0.0005 * (i % 3) for i in range(15)], 0.0742)]:
    print(f"{name}: spread {cluster.step_spread(steps):.3f}: {cluster.calibration_problem(steps, modelled) or 'usable'}")
