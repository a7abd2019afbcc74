#!/usr/bin/env python3
"""CTest codegen-cpu-dp-tp-compressed: mcbench's TP codecs under data parallelism (dp = 2 x tp = 2) under mpirun.

    dp_tp_compressed_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (4 layers, hidden 128) at --dp 2 --tp 2 (4 MPI ranks, row-major over (dp, tp)), 2 micro-batches of
4 x 64 per replica (the global batch of 16 sequences, seed 5), AdamW lr 1e-3, 3 steps:
1. Identity TP codecs (`tp-fwd-codec=topk:ratio=1 tp-bwd-codec=randk:ratio=1,seed=3`, error feedback on the
   backward sites: the residual stays 0) give the uncompressed dp2 x tp2 plan's losses exactly.
2. 8-bit per-channel quantization on every forward and backward TP all-reduce with error feedback trains within
   LOSS_TOL of uncompressed, and its losses are the multi-rank executor's on the same step.mlir and tokens
   within QUANT_EXEC_TOL (docs/Compression.md, "The TP site": the executor's f64 model ops may land a partial
   sum on the neighbouring 8-bit level).
3. The runtime's byte counters: "tp collectives" = 2 replicas x 2 tp ranks x 4 layers x 4 sites x M all-reduces
   per step of B S H x 4 bytes uncompressed, of B S H + 4 H code bytes with 8 bits (ratio 0.2539); the "dp
   collectives" (the gradient all-reduces, not compressed by mcbench) are the same bytes in all three plans.
4. Resume: the 8-bit plan checkpointed after 2 steps and resumed to 3 gives the straight run's third loss and
   its final checkpoints byte for byte. Every dp replica keeps its own backward-site residuals (each is what its
   own partial sums lost, different on every rank), so ptrain-run saves one checkpoint per (dp, tp) rank when
   the plan has codec states (PATH.tp<t> for replica 0, PATH.tp<t>.dp<d> for the others).
"""

import json
import math
import os
import struct
import sys

from e2e import (check, compile_plans, corpus, executor_losses, failures, finish, global_batches,
                 print_losses, read_checkpoint, run, setup)

LOSS_TOL = 1e-3        # relative, the 8-bit TP codecs' step losses vs uncompressed (measured: below 1e-4)
QUANT_EXEC_TOL = 1e-4  # relative, MPI vs the executor for quantized plans (as codegen-cpu-tp-compressed)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
B, S, H, M, LAYERS, DP, TP = 4, 64, 128, 2, 4, 2, 2
data = corpus(source, work)

common = ["--dp", str(DP), "--tp", str(TP), "--micro-batches", str(M), "--lr", "1e-3", "--warmup-steps", "1",
          "--total-steps", "100", "--target", "cpu"]
mcbench = ["--policy", "mcbench", "--compress-options"]
configs = {"none": [],
           "identity": mcbench + ["tp-fwd-codec=topk:ratio=1 tp-bwd-codec=randk:ratio=1,seed=3"],
           "q8": mcbench + ["tp-fwd-codec=quant:bits=8 tp-bwd-codec=quant:bits=8"]}
plans = compile_plans(BIN, MODEL, work, configs, common)
if failures:
    finish()
site_keys = sorted(f"tp/layer{l}/{role}/residual" for l in range(LAYERS) for role in ("attn_in", "mlp_in"))
check(sorted(s["key"] for s in plans["q8"]["codec_states"]) == site_keys,
      "plan.json of q8: one residual per backward TP site")


def train(name, steps, extra=()):
    log = os.path.join(work, f"{name}-{steps}-{len(extra)}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120", "--no-plots",
                   *extra], timeout=600)
    check(rc == 0, f"ptrain-run {name} {steps} steps {' '.join(extra)}" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


straight = os.path.join(work, "straight")
logs = {"none": train("none", STEPS), "identity": train("identity", STEPS),
        "q8": train("q8", STEPS, ["--checkpoint", straight])}
if any(v is None for v in logs.values()):
    finish()
none = print_losses(logs)

# 1. Identity codecs: the uncompressed losses exactly.
check(logs["identity"]["train_loss"] == none and logs["identity"]["val_loss"] == logs["none"]["val_loss"],
      "dp2 x tp2 identity TP codecs (top-k and rand-k keeping every element, error feedback): losses equal to "
      "uncompressed")

# 2. 8-bit TP codecs train close to uncompressed and match the executor.
q8 = logs["q8"]["train_loss"]
worst = max(abs(x - y) / y for x, y in zip(q8, none))
check(len(q8) == STEPS and worst <= LOSS_TOL and q8[-1] < q8[0] and q8[0] != none[0],
      f"q8: trains, every step loss within {LOSS_TOL} relative of uncompressed (worst {worst:.2e}), the first "
      "differs (quantized forward all-reduces)")
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
executor = executor_losses(BIN, MODEL, os.path.join(work, "q8"), tokens, STEPS)
if executor:
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, q8))
    print(f"q8: executor train {executor}; MPI {q8}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= QUANT_EXEC_TOL, f"q8: MPI run within {QUANT_EXEC_TOL} of the executor")

# 3. Bytes per step.
full, code8 = B * S * H * 4, B * S * H + 4 * H
calls = DP * TP * LAYERS * 4 * M
tp_bytes = {name: log["traffic"]["tp collectives"]["bytes"] // STEPS for name, log in logs.items()}
dp_bytes = {name: log["traffic"]["dp collectives"]["bytes"] // STEPS for name, log in logs.items()}
print("tp collectives per step: " + ", ".join(f"{k} {v:,}" for k, v in tp_bytes.items()))
print("dp collectives per step: " + ", ".join(f"{k} {v:,}" for k, v in dp_bytes.items()))
check(tp_bytes["none"] == calls * full, f"none: tp collectives = {calls} all-reduces x {full:,} bytes per step")
check(tp_bytes["q8"] == calls * code8,
      f"q8: tp collectives = {calls} x {code8:,} code bytes per step (ratio {tp_bytes['q8'] / tp_bytes['none']:.4f})")
check(dp_bytes["none"] > 0 and dp_bytes["q8"] == dp_bytes["none"] == dp_bytes["identity"],
      "the dp gradient all-reduces carry the same bytes in every plan (mcbench does not compress them)")

# 4. Resume after 2 steps to 3: the straight run's last loss and final checkpoints, every (dp, tp) rank's own.
after2, resumed = os.path.join(work, "after2"), os.path.join(work, "resumed")
short = train("q8", 2, ["--checkpoint", after2])
again = train("q8", STEPS, ["--resume", after2, "--checkpoint", resumed])
if short and again:
    check(short["train_loss"] == q8[:2] and again["train_loss"] == q8[2:],
          f"q8 resumed after 2 steps: step 3 loss {again['train_loss']} = the straight run's {q8[2:]}")
    files = [f"tp{t}" + ("" if d == 0 else f".dp{d}") for d in range(DP) for t in range(TP)]
    for suffix in files:
        a, b = (os.path.join(p + "." + suffix) for p in (straight, resumed))
        check(os.path.isfile(a) and os.path.isfile(b) and open(a, "rb").read() == open(b, "rb").read(),
              f"checkpoint .{suffix}: the resumed run's equals the straight run's byte for byte")
    residuals = []
    for suffix in files:
        states = read_checkpoint(straight + "." + suffix) if os.path.isfile(straight + "." + suffix) else {}
        blob = states.get("tp/layer0/attn_in/residual", b"")
        values = struct.unpack(f"<{len(blob) // 4}f", blob)
        residuals.append(blob)
        print(f".{suffix}: tp/layer0/attn_in/residual norm {math.sqrt(sum(v * v for v in values)):.4e}")
    check(all(residuals) and len(set(residuals)) == len(residuals),
          "every (dp, tp) rank's checkpoint holds its own nonzero residual")

finish()
