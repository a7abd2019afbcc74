#!/usr/bin/env python3
"""CTest codegen-cpu-fe-subgroup: fused embedding sync over a sub-group, compiled to C++ under mpirun (issue 8).

    fe_subgroup_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT at pp = 4 (1F1B, 4 micro-batches; 4 ranks, one BLAS thread), AdamW (lr 1e-3, warm-up 1), the
same global batches of 16 x 64 bytes (seed 3), 3 steps. The tied wte.weight is held by stages 0 and 3.
1. `--policy optimus-cc --compress-options "cb=false sc=false"` (FE only): the plan's tied sync is one
   all-reduce over [pp] with the subgroup pp = [0, 3] on stages 0 and 3, and none on the middle stages; the
   generated step creates that communicator on the members only (MPI_Comm_create_group).
2. Its losses under mpirun equal the multi-rank executor's on the same plan and tokens within 1e-5 relative,
   and the uncompressed plan's (the [pp] sum where the middle stages add zeros) bit for bit: x0 + x3 is
   x0 + 0 + 0 + x3 in floating point.
3. The runtime's byte counters per step: the subgroup's communicator carries the tied gradient, 256 x 128 x 4
   bytes from each of its 2 members; the whole [pp] communicator then carries only the 4-byte loss of each of
   the 4 ranks. Uncompressed, the [pp] communicator carries 4 x (256 x 128 x 4 + 4) bytes.
"""

import os
import re
import sys

from e2e import check, corpus, failures, finish, global_batches, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
SEED, STEPS = 3, 3
data = corpus(source, work)

common = ["--pp", "4", "--micro-batches", "4", "--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100",
          "--target", "cpu"]
configs = {"none": [], "fe": ["--policy", "optimus-cc", "--compress-options", "cb=false sc=false"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *flags, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()

# 1. The plan and the generated communicator.
step = open(os.path.join(work, "fe", "step.mlir")).read()
optimizer = {int(s): body for s, body in re.findall(r"func\.func @stage(\d)_optimizer_step\((.*?)\n  }", step, re.S)}
subgroup = {s: len(re.findall(r"axes \[pp\] reduction = sum \{ptrain\.subgroup = \{pp = array<i64: 0, 3>\}\} : tensor<256x128xf32>", body))
            for s, body in optimizer.items()}
check(subgroup == {0: 1, 1: 0, 2: 0, 3: 1}, f"one subgroup sync on stages 0 and 3, none on 1 and 2: {subgroup}")
check(all("all_reduce_start" not in optimizer[s] for s in (1, 2)), "the middle stages post no all-reduce")
cpp = open(os.path.join(work, "fe", "step.cpp")).read()
check("createGroup(in_group, &comm_grid_pp_pp_0_3, 0, members, 2)" in cpp,
      "the generated step creates the subgroup's communicator (pp axis 0, members {0, 3})")


def train(name):
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120"], timeout=600)
    check(rc == 0, f"ptrain-run {name}" + ("" if rc == 0 else ":\n" + out))
    import json
    return json.load(open(log)) if rc == 0 else None


logs = {name: train(name) for name in configs}
if any(v is None for v in logs.values()):
    finish()
for name, log in logs.items():
    print(f"{name}: train {log['train_loss']} val {log['val_loss']}")

# 2. Against the executor and the uncompressed plan.
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, "fe", "step.mlir"), "--weights", MODEL,
               "--multi-rank", "--steps", str(STEPS), "--tokens-file", tokens], timeout=600)
check(rc == 0, "ptrain-interpret --multi-rank on fe/step.mlir" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    mpi = logs["fe"]["train_loss"][:STEPS]
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, mpi)) if len(executor) == STEPS else float("inf")
    print(f"fe: executor {executor}, worst relative difference to mpirun {worst:.3e}")
    check(worst <= 1e-5, "the compiled FE plan under mpirun = the executor within 1e-5 relative")
check(logs["fe"]["train_loss"] == logs["none"]["train_loss"] and logs["fe"]["val_loss"] == logs["none"]["val_loss"],
      "FE over {0, 3}: bit-equal to the uncompressed plan (the middle stages only added zeros)")

# 3. Bytes per step.
TIED = 256 * 128 * 4
for name, log in logs.items():
    print(f"{name}: collectives per step " + ", ".join(f"{k} {v['bytes'] // STEPS}" for k, v in log["traffic"].items()
                                                     if "collectives" in k))
fe, none = logs["fe"]["traffic"], logs["none"]["traffic"]
check(fe.get("pp{0, 3} collectives", {}).get("bytes") == STEPS * 2 * TIED,
      f"FE: the subgroup carries 2 x {TIED} bytes per step")
check(fe["pp collectives"]["bytes"] == STEPS * 4 * 4, "FE: the whole [pp] communicator carries only the 4 losses")
check(none["pp collectives"]["bytes"] == STEPS * 4 * (TIED + 4),
      f"uncompressed: the [pp] communicator carries 4 x ({TIED} + 4) bytes per step")

finish()
