#!/usr/bin/python3
"""Bytes the elementwise chains of one training step move, fused vs unfused, counted from the IR (issue 26).

Compiles the bundled GPT (ptrain-compile --target cpu, the given --pp/--tp/--micro-batches) unless --plan names a
compiled plan, runs `ptrain-opt --ptrain-outline-elementwise=remarks=true` on its step.mlir (the remark of each
chain: ElementwiseChain::fusedBytes, its inputs read and outputs written once by the generated kernel, and
unfusedBytes, every operand read and every result written by one runtime call per op), and sums the chains of
the training step's function (@stage<s>_train_step) through its calls (each micro-batch's forward-backward, the
optimizer step): dynamic counts, not per source line. Traffic the kernels cannot avoid, such as GEMMs, is not
counted: this is the part of the step fusion changes.

    PYTHONPATH=python /usr/bin/python3 bench/generated_kernels/bytes_per_step.py [--build build]
        [--out out/bench-bytes] [--plan DIR] [compile args, e.g. --pp 1 --tp 2 --micro-batches 4]
"""

import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMARK = re.compile(r"remark: elementwise chain in @(\S+): (\S+), (\d+) ops, fused (\d+) bytes, unfused (\d+) bytes")
FUNC = re.compile(r"^  func\.func (?:private )?@([\w.$-]+)\(")
CALL = re.compile(r"\bcall @([\w.$-]+)\(")


def call_graph(step_mlir):
    """{function: [callee per call site]} of the top-level functions of step.mlir."""
    calls, current = collections.defaultdict(list), None
    with open(step_mlir) as f:
        for line in f:
            m = FUNC.match(line)
            if m:
                current = m.group(1)
                calls[current]
                continue
            if current:
                calls[current].extend(CALL.findall(line))
    return calls


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench-bytes"))
    p.add_argument("--plan", help="a compiled plan directory (its step.mlir) instead of compiling")
    args, compile_args = p.parse_known_args(argv)
    plan = args.plan
    if not plan:
        plan = args.out
        cmd = [os.path.join(args.build, "bin", "ptrain-compile"), os.path.join(ROOT, "models", "gpt", "gpt.onnx"),
               "--target", "cpu", "--fuse-elementwise", "on", *compile_args, "-o", plan]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode:
            print(f"bytes_per_step: ptrain-compile failed:\n{proc.stdout[-3000:]}", file=sys.stderr)
            return 1
    step = os.path.join(plan, "step.mlir")
    if not os.path.isfile(step):
        print(f"bytes_per_step: {plan}: no step.mlir", file=sys.stderr)
        return 1
    proc = subprocess.run([os.path.join(args.build, "bin", "ptrain-opt"), step,
                           "--ptrain-outline-elementwise=remarks=true", "-o", os.devnull],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        print(f"bytes_per_step: ptrain-opt failed:\n{proc.stdout[-3000:]}", file=sys.stderr)
        return 1
    own = collections.defaultdict(lambda: [0, 0, 0, 0])  # chains, ops, fused, unfused
    for m in REMARK.finditer(proc.stdout):
        t = own[m.group(1)]
        t[0] += 1
        t[1] += int(m.group(3))
        t[2] += int(m.group(4))
        t[3] += int(m.group(5))
    calls = call_graph(step)
    memo = {}

    def total(fn, depth=0):
        if fn in memo:
            return memo[fn]
        if depth > 64:
            raise RuntimeError(f"call depth beyond 64 at @{fn}")
        t = list(own[fn]) if fn in own else [0, 0, 0, 0]
        for callee in calls.get(fn, []):
            c = total(callee, depth + 1)
            t = [a + b for a, b in zip(t, c)]
        memo[fn] = t
        return t

    steps = sorted(fn for fn in calls if re.fullmatch(r"stage\d+_train_step", fn))
    if not steps:
        print(f"bytes_per_step: {step}: no @stage<s>_train_step", file=sys.stderr)
        return 1
    print(f"{step}: {' '.join(compile_args) or '(defaults)'}")
    print("| function | chains | ops in chains | bytes fused | bytes unfused | fused / unfused |\n|---|---|---|---|---|---|")
    for fn in steps:
        chains, ops, fused, unfused = total(fn)
        ratio = f"{fused / unfused:.3f}" if unfused else "-"
        print(f"| @{fn} (one training step) | {chains} | {ops} | {fused:,} | {unfused:,} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
