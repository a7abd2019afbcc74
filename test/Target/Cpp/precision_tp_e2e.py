#!/usr/bin/env python3
"""CTest codegen-cpu-precision-tp: 16-bit tensor-parallel all-reduces (issue 24: "Activations, pipeline messages and
TP collectives are 16-bit"; docs/MixedPrecision.md, "16-bit TP collectives").

    precision_tp_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (models/gpt) is compiled with `ptrain-compile --precision fp32`, `bf16` and `fp16` (its loss scaler
from 2^16) at tp 2 and at dp 2 x tp 2, and trained by `ptrain-run` under mpirun for STEPS AdamW steps on the same
batches. Requires of each plan:
* the tp communicator's bytes (the runtime's counters, "tp collectives" of run.jsonl's traffic): exactly half of
  fp32's in bf16 and in fp16 (every tp all-reduce of the model moves 16-bit values: Megatron's g after the
  row-parallel linears, f's gradients before the column-parallel ones; nothing else uses that communicator);
* each 16-bit run's loss at every step within BOUND (relative) of fp32's, and finite;
* the compiled 16-bit step (mpirun) equals the multi-rank executor on the same IR and batches (ptrain-interpret
  --multi-rank; the 16-bit sums are defined bit for bit, the fp32 ops within the interpreter's fp64) within
  EXECUTOR_BOUND relative at the first step and EXECUTOR_DRIFT_BOUND over STEPS, at tp 2 in bf16 and fp16.
About 40 s on 2 cores.
"""

import json
import math
import os
import sys

from e2e import check, corpus, executor_losses, failures, finish, global_batches, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 4, 5
BOUND = 0.01  # 16-bit vs fp32 loss, relative, at every step (precision_plans_e2e.py's bound)
# Compiled vs executor, relative: the first step's loss (forward and backward of the same weights: the 16-bit sums
# and GEMMs are bit-equal, the fp32 ops agree within the interpreter's fp64) within 1e-5 (loss_scale_e2e.py's
# bound); later steps within 1e-4, since AdamW at lr 1e-3 without warm-up turns a one-ulp bf16 difference of a GEMM
# operand (an fp32 value on a rounding boundary, computed in fp64 by the executor) into an lr-sized step (ENV.md).
# Measured: bf16 1.8e-7 at step 1, 2.1e-5 over 4 steps; fp16 2.3e-10 at step 1, 2.0e-6 over 4 steps; fp32 1e-9.
EXECUTOR_BOUND, EXECUTOR_DRIFT_BOUND = 1e-5, 1e-4
PLANS = {"tp2": ["--tp", "2"], "dp2tp2": ["--dp", "2", "--tp", "2"]}
EXECUTOR = {"tp2"}
data = corpus(source, work)


def train(name, precision, flags):
    out = os.path.join(work, f"{name}-{precision}")
    scaler = ["--initial-loss-scale", "65536"] if precision == "fp16" else []
    rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, "-o", out, "--precision", precision, "--lr", "1e-3",
                    *scaler, *flags])
    check(rc == 0, f"ptrain-compile {name} {precision}" + ("" if rc == 0 else ":\n" + text[-3000:]))
    if rc:
        return None
    log = os.path.join(work, f"{name}-{precision}.json")
    rc, text = run([os.path.join(BIN, "ptrain-run"), out, "--data", data, "--steps", str(STEPS), "--seed", str(SEED),
                    "--val-batches", "1", "--log", log, "--timeout", "120", "--no-tensorboard", "--no-plots"],
                   timeout=600)
    check(rc == 0, f"ptrain-run {name} {precision}" + ("" if rc == 0 else ":\n" + text[-3000:]))
    if rc:
        return None
    return out, json.load(open(log)), json.load(open(os.path.join(out, "plan.json")))


for name, flags in PLANS.items():
    runs = {p: train(name, p, flags) for p in ("fp32", "bf16", "fp16")}
    if None in runs.values():
        continue
    _, log32, _ = runs["fp32"]
    t32 = log32["traffic"]["tp collectives"]["bytes"]
    for half in ("bf16", "fp16"):
        out, log, plan = runs[half]
        t16 = log["traffic"]["tp collectives"]["bytes"]
        print(f"{name}: tp collectives fp32 {t32:,} B, {half} {t16:,} B ({t16 / t32:.4f}); links "
              + ", ".join(f"{k} {v['bytes']:,}" for k, v in log["traffic"].items()))
        # fp16 at tp 2 alone: the loss scaler's overflow count (one fp32) is summed over the tp communicator too,
        # 4 bytes per training step and rank (docs/MixedPrecision.md, "The loss scaler in the step").
        scaler = 4 * STEPS * plan.get("tp", 1) if half == "fp16" and name == "tp2" else 0
        check(2 * (t16 - scaler) == t32, f"{name}: the tp all-reduces move exactly half of fp32's bytes in {half} "
              f"({t16:,} B, {scaler} of them the loss scaler's, against {t32:,} B)")
        l32, l16 = log32["train_loss"], log["train_loss"]
        worst = max(abs(a - b) / abs(a) for a, b in zip(l32, l16))
        print(f"{name}: {half} losses {l16}, fp32 {l32}: worst relative difference {worst:.2e}")
        check(len(l16) == STEPS and all(math.isfinite(v) for v in l16) and worst <= BOUND,
              f"{name}: {STEPS} finite {half} losses within {BOUND} relative of fp32's")
        if name in EXECUTOR:
            tokens = global_batches(source, data, os.path.join(work, f"{name}-{half}-tokens.bin"), STEPS, SEED,
                                    rows=plan["global_batch"], seq=plan["seq"])
            losses = executor_losses(BIN, MODEL, out, tokens, STEPS)
            if losses:
                gaps = [abs(a - b) / abs(b) for a, b in zip(l16, losses)]
                print(f"{name}: {half} executor losses {losses}: relative differences "
                      + ", ".join(f"{g:.2e}" for g in gaps))
                check(len(losses) == STEPS and gaps[0] <= EXECUTOR_BOUND and max(gaps) <= EXECUTOR_DRIFT_BOUND,
                      f"{name}: the compiled {half} step within {EXECUTOR_BOUND} relative of the executor at step 1, "
                      f"{EXECUTOR_DRIFT_BOUND} over {STEPS} steps")
finish()
