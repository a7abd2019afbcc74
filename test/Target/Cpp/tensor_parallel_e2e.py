#!/usr/bin/env python3
"""CTest codegen-cpu-tensor-parallel: Megatron tensor parallelism in generated code under mpirun.

    tensor_parallel_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT (4 layers, 4 heads, hidden 128) with the same global batch of 16 sequences
   and SGD settings (sgd_equivalence.py's SGD_FLAGS: momentum 0.9, lr 0.05): one rank (--micro-batches 4, the
   reference), --tp 2 (2 ranks), --tp 2 --pp 2 (4 ranks) and --dp 2 --tp 2 --pp 2 --micro-batches 2 (8 ranks;
   replica d trains on rows [8d, 8d + 8)).
2. ptrain-run each for 3 steps (mpirun --oversubscribe, OPENBLAS_NUM_THREADS=1, mpi_yield_when_idle) with a
   checkpoint. Against the reference: the validation loss before training and the step losses within LOSS_TOL
   relative; every parameter and momentum buffer of every rank's checkpoint (a sliced one against the same
   slice of the reference's, the layout of --ptrain-shard-tp) within the derived bound (3) of
   sgd_equivalence.py: GRAD_NOISE (1e-3) of the tensor's largest displacement from its initial value (of its
   largest entry, for a buffer) plus 3 ulps. What differs from one rank is the order of sums (the row-parallel
   linears and f's backward add the tp parts after each rank's partial matmul); SGD's update is linear in the
   gradients, so those f32 roundings are not amplified (AdamW's g / (sqrt(v) + eps) turns them into lr-sized
   steps where |g| is near its rounding noise, which made a fixed 1e-4 fail on AVX-512 machines; issue 20).
   The replicated ones are bit-equal on the tp ranks of a stage. The control: each tp rank's part compared with
   the other rank's part of the reference (a wrong slice) exceeds the bound by more than 100 x for every sliced
   parameter.
3. The multi-rank executor (ptrain-interpret --multi-rank) runs the 8-rank step.mlir on the same 3 global batches:
   its step losses within EXEC_TOL relative of the MPI run.
4. dp2 x tp2 x pp2 with --policy optimus-cc --compress-options "cb-sends=all sc-all=true" (CB with LEP on every
   backward send, SC's PowerSGD all-reduce of every stage's dp gradients, each of a tp slice): the generated code
   under mpirun against the executor on the same IR, 3 steps, within EXEC_TOL relative.
5. Resume: tp2 x pp2 for 2 steps with a checkpoint (one file per stage and tp rank), then --resume to step 3:
   the final checkpoint of every (stage, tp rank) equals the straight 3-step run's, byte for byte.
6. --np 3 for the 8-rank step is refused by ptrain-run, naming dp * pp * tp.
"""

import json
import os
import sys

from e2e import (check, compile_plans, corpus, executor_losses, failures, finish, global_batches,
                 read_checkpoint, run, setup)
from sgd_equivalence import GRAD_NOISE, SGD_FLAGS, bound_use

import numpy as np
import onnx
from onnx import numpy_helper

LOSS_TOL = 1e-5    # relative, step losses vs one rank
WRONG_SLICE = 100  # the control: a wrong slice uses more than this many times the bound
EXEC_TOL = 1e-5    # relative, MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
data = corpus(source, work)

common = [*SGD_FLAGS, "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
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
    """{key: f32 array} of a checkpoint's states (the i64 step counter too, as pairs of floats: unused)."""
    return {key: np.frombuffer(blob, np.float32) for key, blob in read_checkpoint(path).items() if len(blob) % 4 == 0}


def initial_values(model):
    """{name: f32 array} of the model's initializers: the parameters before training (external data included)."""
    return {i.name: numpy_helper.to_array(i).astype(np.float32).ravel() for i in onnx.load(model).graph.initializer}


def tp_part(values, shape, dim, groups, parts, index):
    """Part `index` of `parts` of a row-major tensor, flattened: dimension `dim` viewed as groups x parts x chunk,
    [:, index, :] (MultiRankExecutor.h's tensorParallelSlice)."""
    chunk = shape[dim] // (groups * parts)
    view = np.asarray(values).reshape(list(shape[:dim]) + [groups, parts, chunk] + list(shape[dim + 1:]))
    return np.take(view, index, axis=dim + 1).ravel()


def compare_states(name, ref, init):
    """Every parameter and momentum buffer of every rank of `name`'s checkpoint against one rank's (a sliced one
    against the same part of the reference): (the most any tensor uses of sgd_equivalence.py's bound (3), the least
    a wrong slice uses: each tp rank's part given the update of the reference's other part)."""
    plan = plans[name]
    states = {s["key"]: s for s in plan["states"]}
    use, wrong, worst, keys, replicated_equal, seen = 0.0, float("inf"), 0.0, {}, True, set()
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
            param = states[key.split("/")[0]]  # a buffer "<key>/sgd_momentum" is sliced like its parameter
            start = init[key] if kind == "parameter" else None
            for t, part in enumerate(parts):
                if "tp_slice" in param:
                    sl = param["tp_slice"]
                    cut = lambda v, i: None if v is None else tp_part(v, sl["global_shape"], sl["dim"], sl["groups"],
                                                                       plan["tp"], i)
                    expected, begin = cut(ref[key], t), cut(start, t)
                    if kind == "parameter":  # the control: rank t's initial part plus the other part's update
                        o = (t + 1) % plan["tp"]
                        other = begin + (cut(ref[key], o) - cut(start, o))
                        wrong = min(wrong, bound_use(other, expected, begin, STEPS)[0])
                else:
                    expected, begin = ref[key], start
                    replicated_equal = replicated_equal and np.array_equal(part[key], parts[0][key])
                if len(expected) != len(part[key]):
                    check(False, f"{name}: {key} of tp rank {t} has {len(part[key])} values, expected {len(expected)}")
                    return float("inf"), 0.0
                u, d = bound_use(part[key], expected, begin, STEPS)
                if u > use:
                    use, keys["use"] = u, key
                if d > worst:
                    worst, keys["worst"] = d, key
    missing = {k for k in ref if states.get(k, {}).get("kind") in ("parameter", "optimizer_moment")} - seen
    check(not missing, f"{name}: every parameter and momentum buffer of the reference is in some rank's checkpoint")
    check(replicated_equal, f"{name}: the replicated parameters and buffers are bit-equal on the tp ranks")
    print(f"{name}: worst |difference| {worst:.3e} ({keys.get('worst')}); the most of the bound used "
          f"{use:.3e} ({keys.get('use')}); a wrong slice uses at least {wrong:.3e} of it")
    return use, wrong


logs = {name: train(name) for name in ("ref", "tp2", "tp2pp2", "dp2tp2pp2")}
if logs["ref"]:
    ref = read_parameters(os.path.join(work, "ref.ckpt"))
    init = initial_values(MODEL)
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
        use, wrong = compare_states(name, ref, init)
        check(use <= 1.0, f"{name}: parameters and momentum buffers within the derived bound of one rank's "
              f"(sgd_equivalence.py (3): {GRAD_NOISE} of the tensor's displacement + {STEPS} ulps)")
        check(wrong > WRONG_SLICE, f"{name}: the control, a wrong slice, exceeds the bound more than {WRONG_SLICE} x")

# 3 + 4: the executor on the same IR and the same global batches (run_data.py's batch()).
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
