#!/usr/bin/env python3
"""CTest codegen-cpu-pipeline-train: pp=2 (1F1B, 4 micro-batches of 4 x 64 bytes) learns real text.

    pipeline_train.py BUILD_DIR SOURCE_DIR WORK_DIR

Builds a 2 MB byte-level corpus from the Python standard library (python/ptrain/data.py, which prints the
val unigram entropy H in nats), compiles the bundled GPT with --pp 2 --micro-batches 4 --lr 3e-3
--warmup-steps 10 --total-steps 150, trains 150 steps under mpirun (about 100 s on 2 cores) and requires the
final validation loss to be below H - 0.1 nats: the model must use context, not just byte frequencies
(measured: 5.42 at step 0, 2.88 at step 150, H = 3.13).
"""

import json
import os
import re
import shutil
import subprocess
import sys

build, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
MARGIN = 0.1
STEPS = 150


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=540)
    if p.returncode:
        print(p.stdout)
        sys.exit(f"failed (exit {p.returncode}): {' '.join(cmd)}")
    return p.stdout


data = os.path.join(work, "data")
out = run([sys.executable, os.path.join(source, "python", "ptrain", "data.py"), "--out", data, "--max-bytes",
           "2000000"])
entropy = float(re.search(r"= ([0-9.]+) nats/byte", out).group(1))
run([os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models", "gpt", "gpt.onnx"), "--pp", "2",
     "--micro-batches", "4", "--lr", "3e-3", "--warmup-steps", "10", "--total-steps", str(STEPS), "--target", "cpu",
     "-o", os.path.join(work, "out")])
log = os.path.join(work, "log.json")
run([os.path.join(build, "bin", "ptrain-run"), os.path.join(work, "out"), "--data", data, "--steps", str(STEPS),
     "--val-every", "50", "--log", log, "--checkpoint", os.path.join(work, "final.ckpt")])
result = json.load(open(log))
val = result["val_loss"]
print(f"unigram entropy of val.bin: {entropy:.4f} nats/byte")
print("validation loss: " + ", ".join(f"step {s}: {v:.4f}" for s, v in val))
print(f"throughput: {result['tokens_per_s']:.0f} tokens/s")
final = val[-1][1]
ok = final < entropy - MARGIN
print(("ok" if ok else "FAIL") + f": final val loss {final:.4f} < H - {MARGIN} = {entropy - MARGIN:.4f}")
sys.exit(0 if ok else 1)
