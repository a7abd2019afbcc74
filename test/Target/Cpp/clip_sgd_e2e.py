#!/usr/bin/env python3
"""CTest codegen-cpu-clip-sgd: global-norm clipping and SGD with momentum in generated code under mpirun.

    clip_sgd_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT with SGD (momentum 0.9, weight decay 0, lr 0.05) and --clip-norm 0.1 on the
   same global batch of 16 sequences: one rank (--micro-batches 4, the reference), --pp 2 (2 ranks: the tied
   embedding counted on stage 0 only) and --tp 2 --pp 2 (4 ranks: the all-reduce over [pp, tp], replicated
   parameters weighted 1 / 2); and the reference without clipping.
2. ptrain-run each for 3 steps: the step losses of pp2 and tp2pp2 within LOSS_TOL relative of the reference;
   clipping is active: the unclipped reference's step-2 loss differs from the clipped one by more than 100 x
   LOSS_TOL relative.
3. The multi-rank executor (ptrain-interpret --multi-rank) runs tp2pp2's step.mlir on the same 3 global
   batches: its step losses within EXEC_TOL relative of the MPI run.
"""

import json
import os
import sys

from e2e import check, corpus, failures, finish, global_batches, run, setup

LOSS_TOL = 1e-5   # relative, step losses vs one rank (the f32 sums of the norm and gradients grouped otherwise)
EXEC_TOL = 1e-5   # relative, MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
data = corpus(source, work)

common = ["--optimizer", "sgd", "--momentum", "0.9", "--weight-decay", "0", "--lr", "0.05", "--warmup-steps", "1",
          "--total-steps", "100", "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4", "--clip-norm", "0.1"],
           "noclip": ["--micro-batches", "4"],
           "pp2": ["--pp", "2", "--micro-batches", "4", "--clip-norm", "0.1"],
           "tp2pp2": ["--tp", "2", "--pp", "2", "--micro-batches", "4", "--clip-norm", "0.1"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
cpp = open(os.path.join(work, "tp2pp2", "step.cpp")).read()
check("ptrain_sum_squares_f32" in cpp and "ptrain_sgd_step_f32" in cpp and "comm_grid_pp_tp" in cpp,
      "step.cpp: squared norms, SGD, a communicator over pp x tp")


def train(name):
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120", "--no-plots"],
                  timeout=900)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log))["train_loss"] if rc == 0 else None


losses = {name: train(name) for name in configs}
ref = losses["ref"]
if ref:
    print(f"ref (clipped) {ref}; unclipped {losses['noclip']}")
    for name in ("pp2", "tp2pp2"):
        if losses[name]:
            worst = max(abs(x - y) / abs(x) for x, y in zip(ref, losses[name]))
            print(f"{name}: {losses[name]}; worst relative {worst:.3e}")
            check(len(losses[name]) == STEPS and worst <= LOSS_TOL, f"{name}: within {LOSS_TOL} relative of one rank")
    if losses["noclip"]:
        gap = abs(losses["noclip"][1] - ref[1]) / abs(ref[1])
        print(f"clipped vs unclipped step-2 loss: {gap:.3e} relative")
        check(losses["noclip"][0] == ref[0] and gap > 100 * LOSS_TOL,
              "clipping is active: same first loss, step 2 differs by more than 100 x LOSS_TOL")

tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
if losses["tp2pp2"]:
    rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, "tp2pp2", "step.mlir"), "--weights",
                   MODEL, "--multi-rank", "--steps", str(STEPS), "--tokens-file", tokens], timeout=900)
    check(rc == 0, "ptrain-interpret --multi-rank on tp2pp2/step.mlir" + ("" if rc == 0 else ":\n" + out[-3000:]))
    if rc == 0:
        executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
        worst = max(abs(x - y) / abs(x) for x, y in zip(executor, losses["tp2pp2"]))
        print(f"tp2pp2: executor {executor}; worst relative {worst:.3e}")
        check(len(executor) == STEPS and worst <= EXEC_TOL, f"tp2pp2: MPI run within {EXEC_TOL} relative of the executor")

finish()
