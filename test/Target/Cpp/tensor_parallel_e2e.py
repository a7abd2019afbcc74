#!/usr/bin/env python3
"""CTest codegen-cpu-tensor-parallel: Megatron tensor parallelism in generated code under mpirun.

    tensor_parallel_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT (4 layers, 4 heads, hidden 128) with the same global batch of 16 sequences
   and AdamW settings: one rank (--micro-batches 4, the reference), --tp 2 (2 ranks), --tp 2 --pp 2 (4 ranks)
   and --dp 2 --tp 2 --pp 2 --micro-batches 2 (8 ranks; replica d trains on rows [8d, 8d + 8)).
2. ptrain-run each for 3 steps (mpirun --oversubscribe, OPENBLAS_NUM_THREADS=1, mpi_yield_when_idle) with a
   checkpoint. Against the reference: the validation loss before training and the step losses within LOSS_TOL
   relative; every parameter and AdamW moment of every rank's checkpoint (a sliced one against the same slice of
   the reference's, the layout of --ptrain-shard-tp): parameters within PARAM_TOL absolute with at most PARAM_OFF
   of the entries off by more than 1e-6, moments within MOMENT_TOL of the tensor's max; the replicated ones
   bit-equal on the tp ranks of a stage. What differs from one rank is the order of sums:
   the row-parallel linears and f's backward add the tp parts after each rank's partial matmul, and AdamW's
   normalized update turns a few f32 ulps of a gradient near eps into lr-sized changes (docs/Plan.md).
3. The multi-rank executor (ptrain-interpret --multi-rank) runs the 8-rank step.mlir on the same 3 global batches:
   its step losses within EXEC_TOL relative of the MPI run.
4. dp2 x tp2 x pp2 with --policy optimus-cc --compress-options "cb-sends=all sc-all=true" (CB with LEP on every
   backward send, SC's PowerSGD all-reduce of every stage's dp gradients, each of a tp slice): the generated code
   under mpirun against the executor on the same IR, 3 steps, within EXEC_TOL relative.
5. Resume: tp2 x pp2 for 2 steps with a checkpoint (one file per stage and tp rank), then --resume to step 3:
   the final checkpoint of every (stage, tp rank) equals the straight 3-step run's, byte for byte.
6. --np 3 for the 8-rank step is refused by ptrain-run, naming dp * pp * tp.
"""

import array
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import (check, compile_plans, corpus, executor_losses, failures, finish, global_batches,  # noqa: E402
                 read_checkpoint, run, setup)

LOSS_TOL = 1e-5    # relative, step losses vs one rank
# Parameters after 3 AdamW steps (lr 1e-3): AdamW's update g / (sqrt(v) + eps) turns a few f32 ulps of a gradient
# near eps into a change of up to lr per step, so a handful of entries differ by ~1e-5 while the rest agree to
# f32 rounding; a wrong slice would be off by the weights' size, 1e-2 and more.
PARAM_TOL = 1e-4   # absolute, every entry (lr / 10)
PARAM_OFF = 1e-3   # fraction of entries off by more than 1e-6
MOMENT_TOL = 1e-4  # AdamW's m and v (the gradients' moving averages): |diff| / max |moment| of the tensor
EXEC_TOL = 1e-5    # relative, MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4"],
           "tp2": ["--tp", "2", "--micro-batches", "4"],
           "tp2pp2": ["--tp", "2", "--pp", "2", "--micro-batches", "4"],
           "dp2tp2pp2": ["--dp", "2", "--tp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"],
           "dp2tp2pp2occ": ["--dp", "2", "--tp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes",
                            "1000000", "--policy", "optimus-cc", "--compress-options", "cb-sends=all sc-all=true"]}
plans = compile_plans(BIN, MODEL, work, configs, common)
if failures:
    finish()
p = plans["dp2tp2pp2"]
sliced = [s for s in p["states"] if "tp_slice" in s]
check(p["dp"] == 2 and p["tp"] == 2 and p["pp"] == 2 and p["global_batch"] == 16 and len(sliced) > 0,
      f"plan.json: dp 2, tp 2, pp 2, global batch 16, {len(sliced)} states with tp_slice")
cpp = open(os.path.join(work, "tp2", "step.cpp")).read()
check("comm_grid_tp" in cpp and "initStates(path)" in cpp, "step.cpp: a tp communicator and the sliced-state init")


def train(name, steps=STEPS, tag=None, extra=()):
    tag = tag or name
    log, ckpt = os.path.join(work, f"{tag}.json"), os.path.join(work, f"{tag}.ckpt")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--checkpoint", ckpt, "--timeout", "120",
                   "--no-plots", *extra], timeout=900)
    check(rc == 0, f"ptrain-run {name} {steps} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


def read_parameters(path):
    """{key: array('f')} of a checkpoint's states (the i64 step counter too, as pairs of floats: unused)."""
    out = {}
    for key, blob in read_checkpoint(path).items():
        out[key] = array.array("f")
        if len(blob) % 4 == 0:
            out[key].frombytes(blob)
    return out


def tp_part(values, shape, dim, groups, parts, index):
    """Part `index` of `parts` of a row-major tensor: dimension `dim` viewed as groups x parts x chunk, [:, index, :]
    (MultiRankExecutor.h's tensorParallelSlice)."""
    outer = 1
    for d in shape[:dim]:
        outer *= d
    inner = 1
    for d in shape[dim + 1:]:
        inner *= d
    chunk = shape[dim] // (groups * parts)
    out = array.array("f")
    for o in range(outer):
        for g in range(groups):
            start = (o * shape[dim] + (g * parts + index) * chunk) * inner
            out.extend(values[start:start + chunk * inner])
    return out


def compare_states(name, ref):
    """Every parameter and AdamW moment of every rank of `name`'s checkpoint against one rank's (a sliced one, and
    its moments, against the same part of the reference): (worst parameter |diff|, fraction of parameter entries
    off by more than 1e-6, worst moment |diff| / the tensor's max |moment|)."""
    plan = plans[name]
    states = {s["key"]: s for s in plan["states"]}
    worst, count, off, worst_m, keys, replicated_equal, seen = 0.0, 0, 0, 0.0, {}, True, set()
    for s in range(plan["pp"]):
        parts = []
        for t in range(plan["tp"]):
            path = os.path.join(work, f"{name}.ckpt") + (f".stage{s}" if plan["pp"] > 1 else "") + f".tp{t}"
            parts.append(read_parameters(path))
        for key in parts[0]:
            kind = states[key]["kind"]
            if kind not in ("parameter", "optimizer_moment"):
                continue
            seen.add(key)
            param = states[key.split("/")[0]]  # a moment "<key>/adam_m" is sliced like its parameter
            for t, part in enumerate(parts):
                if "tp_slice" in param:
                    sl = param["tp_slice"]
                    expected = tp_part(ref[key], sl["global_shape"], sl["dim"], sl["groups"], plan["tp"], t)
                else:
                    expected = ref[key]
                    replicated_equal = replicated_equal and part[key] == parts[0][key]
                if len(expected) != len(part[key]):
                    check(False, f"{name}: {key} of tp rank {t} has {len(part[key])} values, expected {len(expected)}")
                    return 1.0, 1.0, 1.0
                diffs = [abs(a - b) for a, b in zip(part[key], expected)]
                if kind == "parameter":
                    count += len(diffs)
                    off += sum(d > 1e-6 for d in diffs)
                    if max(diffs) > worst:
                        worst, keys["parameter"] = max(diffs), key
                else:
                    scaled = max(diffs) / (max(abs(v) for v in expected) or 1.0)
                    if scaled > worst_m:
                        worst_m, keys["moment"] = scaled, key
    missing = {k for k in ref if states.get(k, {}).get("kind") in ("parameter", "optimizer_moment")} - seen
    check(not missing, f"{name}: every parameter and moment of the reference is in some rank's checkpoint")
    check(replicated_equal, f"{name}: the replicated parameters and moments are bit-equal on the tp ranks")
    print(f"{name}: worst parameter difference {worst:.3e} ({keys.get('parameter')}), {off} of {count} entries "
          f"({off / count:.1e}) off by more than 1e-6; worst moment difference {worst_m:.3e} of the tensor's max "
          f"({keys.get('moment')})")
    return worst, off / count, worst_m


logs = {name: train(name) for name in ("ref", "tp2", "tp2pp2", "dp2tp2pp2")}
if logs["ref"]:
    ref = read_parameters(os.path.join(work, "ref.ckpt"))
    a = logs["ref"]
    print(f"one rank train {a['train_loss']} val {a['val_loss']}")
    for name in ("tp2", "tp2pp2", "dp2tp2pp2"):
        b = logs[name]
        if not b:
            continue
        print(f"{name} train {b['train_loss']} val {b['val_loss']}")
        val = abs(a["val_loss"][0][1] - b["val_loss"][0][1]) / abs(a["val_loss"][0][1])
        worst = max(abs(x - y) / abs(x) for x, y in zip(a["train_loss"], b["train_loss"]))
        print(f"{name}: eval before training {val:.3e}, worst relative step-loss difference {worst:.3e}")
        check(val <= LOSS_TOL and worst <= LOSS_TOL and len(b["train_loss"]) == STEPS,
              f"{name}: eval and {STEPS} step losses within {LOSS_TOL} relative of one rank")
        worst, off, worst_m = compare_states(name, ref)
        check(worst <= PARAM_TOL and off <= PARAM_OFF, f"{name}: parameters within {PARAM_TOL} absolute of one "
              f"rank's, at most {PARAM_OFF} of them off by more than 1e-6")
        check(worst_m <= MOMENT_TOL, f"{name}: AdamW moments within {MOMENT_TOL} of each tensor's max |moment|")

# 3 + 4: the executor on the same IR and the same global batches (run.py's batch()).
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED)
logs["dp2tp2pp2occ"] = train("dp2tp2pp2occ")
for name in ("dp2tp2pp2", "dp2tp2pp2occ"):
    if not logs[name]:
        continue
    executor = executor_losses(BIN, MODEL, os.path.join(work, name), tokens, STEPS)
    if executor is None:
        continue
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, logs[name]["train_loss"]))
    print(f"{name}: executor train {executor}; MPI {logs[name]['train_loss']}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= EXEC_TOL, f"{name}: MPI run within {EXEC_TOL} relative of the executor")
if logs["dp2tp2pp2occ"] and logs["dp2tp2pp2"]:
    check(logs["dp2tp2pp2occ"]["train_loss"][0] == logs["dp2tp2pp2"]["train_loss"][0],
          "optimus-cc x tp: the first step's loss equals uncompressed (compression acts on its backward)")

if logs["tp2pp2"] and train("tp2pp2", 2, "after2"):
    resumed = train("tp2pp2", STEPS, "resumed", ["--resume", os.path.join(work, "after2.ckpt")])
    if resumed:
        check(resumed["train_loss"] == logs["tp2pp2"]["train_loss"][2:], "resumed step 3's loss equals the straight run's")
        for suffix in (".stage0.tp0", ".stage0.tp1", ".stage1.tp0", ".stage1.tp1"):
            a = open(os.path.join(work, "tp2pp2.ckpt" + suffix), "rb").read()
            b = open(os.path.join(work, "resumed.ckpt" + suffix), "rb").read()
            check(a == b, f"resume 2 + 1: checkpoint{suffix} equals the straight run's, byte for byte")

rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp2tp2pp2"), "--data", data, "--steps", "1",
               "--np", "3"], timeout=60)
check(rc != 0 and "compiled for dp * pp * tp = 2 * 2 * 2 = 8 ranks" in out,
      "--np 3 for a dp2 x tp2 x pp2 step")

finish()
