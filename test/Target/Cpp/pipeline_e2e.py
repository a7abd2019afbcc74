#!/usr/bin/env python3
"""CTest codegen-cpu-pipeline: pp=2 training under mpirun equals the single-process pipeline (pp=1).

    pipeline_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT twice with the same global batch (4 micro-batches of 4 x 64 tokens) and
   AdamW settings: --pp 2 --schedule 1f1b (two ranks under mpirun) and --pp 1 (one rank, the same driver
   running FB0..FB3, O).
2. ptrain-run both for 3 steps on the same byte-level data and seed: the validation loss before training
   (ptrain_step_eval) and the first step's loss must be identical (the same kernels on the same inputs;
   the stage split only moves where the ops run); steps 2 and 3 within 1e-5 relative. The only
   reordering is the tied embedding gradient: pp=1 adds the embedding and LM-head contributions per
   micro-batch, pp=2 accumulates each on its stage and adds them with the all-reduce over pp, a few fp32
   ulps (~1e-7 relative) of that gradient; AdamW's first steps normalize the update (m / sqrt(v) ~ +-1), so
   a rounding difference can change only entries whose gradient is ~eps, and the loss moves by far less
   than 1e-5 relative (measured: see docs/CodegenCpu.md).
3. Bad input is an error, never a hang: a missing out/ folder, a corrupt plan.json, missing data,
   --np other than pp, and the compiled step's own world-size check (the pp=2 step launched on 1 rank).
"""

import json
import os
import shutil
import subprocess
import sys

from e2e import check, corpus, failures, finish, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--micro-batches", "4",
          "--target", "cpu"]
for pp in (1, 2):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--pp", str(pp), *common, "-o",
                   os.path.join(work, f"pp{pp}")])
    check(rc == 0, f"ptrain-compile --pp {pp}" + ("" if rc == 0 else ":\n" + out))
if failures:
    sys.exit(1)
plan = json.load(open(os.path.join(work, "pp2", "plan.json")))
check(plan["pp"] == 2 and plan["micro_batches"] == 4 and plan["batch"] == 4 and plan["seq"] == 64
      and plan["vocab"] == 256, "plan.json: pp 2, micro-batches 4, batch 4, seq 64, vocab 256")

logs = {}
for pp in (1, 2):
    log = os.path.join(work, f"pp{pp}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, f"pp{pp}"), "--data", data, "--steps", "3",
                   "--val-batches", "1", "--seed", "3", "--log", log, "--timeout", "60",
                   "--checkpoint", os.path.join(work, f"pp{pp}.ckpt")])
    check(rc == 0, f"ptrain-run pp={pp} 3 steps" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        logs[pp] = json.load(open(log))
if len(logs) == 2:
    a, b = logs[1], logs[2]
    print(f"pp=1 train {a['train_loss']} val {a['val_loss']}")
    print(f"pp=2 train {b['train_loss']} val {b['val_loss']}")
    check(a["val_loss"][0][1] == b["val_loss"][0][1], "eval before training: identical")
    check(a["train_loss"][0] == b["train_loss"][0], "step 1 loss: identical")
    worst = max(abs(x - y) / abs(x) for x, y in zip(a["train_loss"], b["train_loss"]))
    print(f"worst relative difference of the step losses: {worst:.3e}")
    check(worst <= 1e-5, "steps 1-3: pp=2 within 1e-5 relative of pp=1")
    check(b["train_loss"][2] < b["train_loss"][0], "the loss decreases")
    check(os.path.isfile(os.path.join(work, "pp2.ckpt.stage0")) and
          os.path.isfile(os.path.join(work, "pp2.ckpt.stage1")), "one checkpoint per stage")

# Bad input: clear errors, no hang.
runner = os.path.join(BIN, "ptrain-run")
rc, out = run([runner, os.path.join(work, "nope"), "--data", data, "--steps", "1"], timeout=60)
check(rc != 0 and "no such directory" in out, "missing out/ folder")
bad = os.path.join(work, "bad")
shutil.copytree(os.path.join(work, "pp2"), bad)
with open(os.path.join(bad, "plan.json"), "w") as f:
    f.write("{ not json")
rc, out = run([runner, bad, "--data", data, "--steps", "1"], timeout=60)
check(rc != 0 and "not valid JSON" in out, "corrupt plan.json")
rc, out = run([runner, os.path.join(work, "pp2"), "--data", os.path.join(work, "missing"), "--steps", "1"],
              timeout=60)
check(rc != 0 and "no such file" in out, "missing data")
rc, out = run([runner, os.path.join(work, "pp2"), "--data", data, "--steps", "1", "--np", "3"], timeout=60)
check(rc != 0 and "compiled for dp * pp = 1 * 2 = 2 ranks" in out, "--np 3 for a pp=2 step")
# The step's own check: the pp=2 library on a world of 1 rank.
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1",
           PTRAIN_COMM_TIMEOUT_S="10", PYTHONPATH=os.path.join(source, "python"))
p = subprocess.run(["mpirun", "-np", "1", "--oversubscribe", "-x", "PYTHONPATH", sys.executable, "-m", "ptrain.run",
                    "--worker", os.path.join(work, "pp2"),
                    "--data", data, "--steps", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                   timeout=120, env=env)
check(p.returncode != 0 and "compiled for 2 ranks" in p.stdout, "world-size mismatch inside the step")

finish()
