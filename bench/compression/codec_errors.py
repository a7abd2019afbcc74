#!/usr/bin/env python3
"""Measures every candidate send codec of policy=auto on the bundled GPT's real pipeline traffic (issue 25).

  1. builds the uncompressed plan (pp = --pp, --micro-batches, 1F1B) and lowers it;
  2. writes --steps global batches of real text (python/ptrain/data.py's training corpus, byte-level, from
     --offset) as the raw int64 tokens ptrain-interpret --tokens-file reads;
  3. runs ptrain-interpret --multi-rank --codec-errors (CodecErrorProbe.h): the file auto-codec-errors reads;
  4. prints, per site and codec, the measured error (without and with error feedback, and the cumulative one)
     beside the quality model's proxy (estimateCodecError, CompressAuto.h).
The figures do not depend on the machine's load.

    python3 bench/compression/codec_errors.py [--build build] [--out /tmp/codec-errors] [--steps 4]
        [--pp 2] [--micro-batches 4] [--offset 1000003]
"""

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ptrain import data  # noqa: E402


def proxy(codec, shape):
    """estimateCodecError (lib/Transforms/CompressAuto.cpp) for the codecs of the candidate table."""
    n = shape[-1]
    rows = math.prod(shape[:-1])
    if m := re.match(r"#ptrain.quant<bits = (\d+)>", codec):
        return 1 / (2 ** int(m.group(1)) - 1)
    if m := re.match(r"#ptrain.powersgd<rank = (\d+)>", codec):
        r, k = int(m.group(1)), min(rows, n)
        return math.sqrt(max(0.0, 1 - r / k))
    if m := re.match(r"#ptrain.topk<ratio = ([0-9.e+-]+)", codec):
        return math.sqrt(1 - float(m.group(1)))
    return {"#ptrain.cast<f16>": 2 ** -11, "#ptrain.cast<bf16>": 2 ** -8}.get(codec, float("nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/codec-errors")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--pp", type=int, default=2)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--offset", type=int, default=1000003, help="byte offset into the training corpus")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bin_ = os.path.join(a.build, "bin")
    onnx = os.path.join(ROOT, "models", "gpt", "gpt.onnx")
    gpt, plan = os.path.join(a.out, "gpt.mlir"), os.path.join(a.out, "plan.mlir")

    def run(cmd):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            sys.exit(f"codec_errors: failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}")
        return p.stdout

    run([f"{bin_}/ptrain-translate", "--import-onnx", onnx, "-o", gpt])
    run([f"{bin_}/ptrain-opt", gpt, f"--ptrain-split-stages=pp={a.pp}",
         f"--ptrain-build-training-step=micro-batches={a.micro_batches}", "--ptrain-schedule=schedule=1f1b",
         "--ptrain-lower-to-runtime", "-o", plan])
    rows, seq = map(int, re.search(r"stage0_train_step\(%arg0: tensor<(\d+)x(\d+)xi64>", open(plan).read()).groups())
    train, _, _ = data.build_corpus(data.stdlib_dir())
    n = a.steps * rows * seq
    if a.offset + n > len(train):
        sys.exit(f"codec_errors: --offset {a.offset} + {n} tokens is beyond the corpus ({len(train)} bytes)")
    tokens = os.path.join(a.out, "tokens.bin")
    with open(tokens, "wb") as f:
        f.write(struct.pack(f"<{n}q", *train[a.offset:a.offset + n]))
    errors = os.path.join(a.out, "codec-errors.json")
    print(run([f"{bin_}/ptrain-interpret", plan, "--multi-rank", "--tokens-file", tokens, "--steps", str(a.steps),
               "--weights", onnx, "--codec-errors", errors]), end="")
    f = json.load(open(errors))
    print(f"| site | codec | proxy | measured | with EF | cumulative with EF |\n|---|---|---|---|---|---|")
    for site in f["sites"]:
        by = {(e["codec"], e["error_feedback"]): e for e in site["errors"]}
        for codec in dict.fromkeys(e["codec"] for e in site["errors"]):
            no, ef = by[(codec, False)], by[(codec, True)]
            print(f"| {site['direction']} {site['boundary']} | `{codec}` | {proxy(codec, site['shape']):.4f} | "
                  f"{no['error']:.4f} | {ef['error']:.4f} | {ef['cumulative_error']:.4f} |")
    print(f"written: {errors} (auto-codec-errors)")


if __name__ == "__main__":
    main()
