#!/usr/bin/env python3
"""CTest codegen-cpu-data-parallel: dp=2 x pp=2 and interleaved 1F1B under mpirun equal one rank and the executor.

    data_parallel_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT twice with the same global batch of 16 sequences and AdamW settings:
   --dp 2 --pp 2 --micro-batches 2 (4 ranks; replica d trains on rows [8d, 8d + 8) of each global batch) and
   --dp 1 --pp 1 --micro-batches 4 (one rank, FB0..FB3 O over the same 16 rows in the same order).
2. ptrain-run both for 3 steps (mpirun -np 4 --oversubscribe, OPENBLAS_NUM_THREADS=1, mpi_yield_when_idle):
   the validation loss before training must be identical (the same kernels on the same rows, each
   replica's mean over its rows, then the mean of the two replicas: an exact f32 division by 2 of a sum of
   two f32 values is not always the one-rank mean, so it is compared within 1e-6 relative); the step losses
   within 1e-5 relative. What differs is the order of the gradient sums: one rank adds 4 micro-batches in
   sequence, dp=2 adds 2 per replica and averages the replicas (MPI's f32 sum), the tied embedding is
   summed over pp: a few f32 ulps of each gradient, which AdamW's normalized update turns into changes of
   entries whose gradient is ~eps only (measured: steps 1-2 bit-identical, step 3 within 1.1e-7).
3. The multi-rank executor (ptrain-interpret --multi-rank) runs dp2pp2/step.mlir on the same 3 global
   batches: its step losses agree with the MPI run within 1e-5 relative (it computes each op in double and
   rounds once to f32, the runtime's kernels accumulate in f32, so the two differ by f32 rounding).
4. --pp 2 --virtual-stages 2 --schedule interleaved (2 ranks, each with 2 model chunks; 4 micro-batches): the
   same losses as one rank within 1e-5 relative (measured: bit-identical).
5. --np 3 for a dp=2 x pp=2 step is refused by ptrain-run.
6. ptrain-run's own torchrun-style launcher (--launcher env, python/ptrain/launcher.py) on the one-rank plan (MPI
   as a singleton, no mpirun): the same losses as under mpirun, bit for bit, its output prefixed "[rank 0] ";
   the dp=2 x pp=2 CPU plan is refused under it (the CPU step needs MPI).
"""

import json
import os
import sys

from e2e import check, corpus, failures, finish, global_batches, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 3
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"dp2pp2": ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"],
           "dp1pp1": ["--dp", "1", "--pp", "1", "--micro-batches", "4"],
           "interleaved": ["--pp", "2", "--virtual-stages", "2", "--schedule", "interleaved", "--micro-batches", "4"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    sys.exit(1)
plan = json.load(open(os.path.join(work, "dp2pp2", "plan.json")))
check(plan["dp"] == 2 and plan["pp"] == 2 and plan["replica_batch"] == 8 and plan["global_batch"] == 16,
      "plan.json: dp 2, pp 2, replica batch 8, global batch 16")

logs = {}
for name in configs:
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps",
                   str(STEPS), "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120"],
                  timeout=600)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        logs[name] = json.load(open(log))
if len(logs) == 3:
    a, b, c = logs["dp1pp1"], logs["dp2pp2"], logs["interleaved"]
    print(f"interleaved pp=2 v=2 train {c['train_loss']} val {c['val_loss']}")
    worst = max(abs(x - y) / abs(x) for x, y in zip(a["train_loss"], c["train_loss"]))
    print(f"worst relative difference of the step losses, interleaved vs one rank: {worst:.3e}")
    check(c["val_loss"][0][1] == a["val_loss"][0][1] and worst <= 1e-5,
          f"interleaved 1F1B (pp=2, 2 chunks): eval identical, steps within 1e-5 relative of one rank")
    print(f"dp=1 pp=1 train {a['train_loss']} val {a['val_loss']}")
    print(f"dp=2 pp=2 train {b['train_loss']} val {b['val_loss']}")
    check(abs(a["val_loss"][0][1] - b["val_loss"][0][1]) <= 1e-6 * abs(a["val_loss"][0][1]),
          "eval before training: within 1e-6 relative")
    worst = max(abs(x - y) / abs(x) for x, y in zip(a["train_loss"], b["train_loss"]))
    print(f"worst relative difference of the step losses, dp2pp2 vs one rank: {worst:.3e}")
    check(worst <= 1e-5, f"steps 1-{STEPS}: dp=2 x pp=2 within 1e-5 relative of one rank")
    check(b["train_loss"][-1] < b["train_loss"][0], "the loss decreases")

    # The same global batches as ptrain-run's workers draw (run_data.py's batch(): random.Random(seed * 1000003 + i),
    # 16 windows of 64 bytes), as raw int64 for the executor.
    tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
    rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, "dp2pp2", "step.mlir"),
                   "--weights", MODEL, "--multi-rank", "--steps", str(STEPS), "--tokens-file", tokens], timeout=600)
    check(rc == 0, "ptrain-interpret --multi-rank on dp2pp2/step.mlir" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
        print(f"executor train {executor}")
        worst = max(abs(x - y) / abs(x) for x, y in zip(executor, b["train_loss"]))
        print(f"worst relative difference of the step losses, executor vs MPI: {worst:.3e}")
        check(len(executor) == STEPS and worst <= 1e-5, f"executor within 1e-5 relative of the MPI run")

rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp2pp2"), "--data", data, "--steps", "1",
               "--np", "3"], timeout=60)
check(rc != 0 and "compiled for dp * pp = 2 * 2 = 4 ranks" in out, "--np 3 for a dp=2 x pp=2 step")


# 6. The env launcher on the one-rank CPU plan.
log = os.path.join(work, "dp1pp1-env.json")
rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp1pp1"), "--data", data, "--steps", str(STEPS),
               "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120", "--launcher", "env"],
              timeout=600)
env_log = json.load(open(log)) if rc == 0 else {}
check(rc == 0 and "dp1pp1" in logs and env_log.get("train_loss") == logs["dp1pp1"]["train_loss"] and
      env_log.get("val_loss") == logs["dp1pp1"]["val_loss"] and "[rank 0] step 3: train loss" in out,
      f"--launcher env on one rank: losses {env_log.get('train_loss')} = mpirun's, output prefixed"
      + ("" if rc == 0 else ":\n" + out))
rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp2pp2"), "--data", data, "--steps", "1",
               "--launcher", "env"])
check(rc == 1 and "the CPU step communicates over MPI: only a world of 1 runs without mpirun" in out,
      "--launcher env refuses the 4-rank CPU plan")
finish()
