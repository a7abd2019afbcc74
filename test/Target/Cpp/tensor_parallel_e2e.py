#!/usr/bin/env python3
"""CTest codegen-cpu-tensor-parallel: Megatron tensor parallelism in generated code under mpirun.

    tensor_parallel_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT (4 layers, 4 heads, hidden 128) with the same global batch of 16 sequences
   and AdamW settings: one rank (--micro-batches 4, the reference), --tp 2 (2 ranks), --tp 2 --pp 2 (4 ranks)
   and --dp 2 --tp 2 --pp 2 --micro-batches 2 (8 ranks; replica d trains on rows [8d, 8d + 8)).
2. ptrain-run each for 3 steps (mpirun --oversubscribe, OPENBLAS_NUM_THREADS=1, mpi_yield_when_idle) with a
   checkpoint. Against the reference: the validation loss before training and the step losses within LOSS_TOL
   relative; every parameter of every rank's checkpoint (a sliced one against the same slice of the reference's
   parameter, the layout of --ptrain-shard-tp) within PARAM_TOL absolute; the
   replicated parameters bit-equal on the tp ranks of a stage. What differs from one rank is the order of sums:
   the row-parallel linears and f's backward add the tp parts after each rank's partial matmul, and AdamW's
   normalized update turns a few f32 ulps of a gradient near eps into lr-sized changes (docs/Plan.md).
3. The multi-rank executor (ptrain-interpret --multi-rank) runs the 8-rank step.mlir on the same 3 global batches:
   its step losses within EXEC_TOL relative of the MPI run.
4. --tp 2 --pp 2 --policy optimus-cc --compress-options cb-sends=all (CB with LEP on every backward send):
   the generated code under mpirun against the executor on the same IR, 3 steps, within EXEC_TOL relative.
5. --np 3 for the 8-rank step is refused by ptrain-run, naming dp * pp * tp.
"""

import array
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import check, corpus, failures, finish, run, setup  # noqa: E402

LOSS_TOL = 1e-5    # relative, step losses vs one rank
PARAM_TOL = 2e-5   # absolute, every parameter after 3 AdamW steps: lr / 50 (lr 1e-3; a zero-initialized bias
                   # has moved 3e-3 by then), the multi-rank executor's tolerance for the same plans (docs/Plan.md)
EXEC_TOL = 1e-5    # relative, MPI step losses vs the executor (f64 ops rounded to f32 vs f32 kernels)

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 3, 5
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4"],
           "tp2": ["--tp", "2", "--micro-batches", "4"],
           "tp2pp2": ["--tp", "2", "--pp", "2", "--micro-batches", "4"],
           "dp2tp2pp2": ["--dp", "2", "--tp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"],
           "tp2pp2occ": ["--tp", "2", "--pp", "2", "--micro-batches", "4", "--policy", "optimus-cc",
                         "--compress-options", "cb-sends=all"]}
plans = {}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        plans[name] = json.load(open(os.path.join(work, name, "plan.json")))
if failures:
    finish()
p = plans["dp2tp2pp2"]
sliced = [s for s in p["states"] if "tp_slice" in s]
check(p["dp"] == 2 and p["tp"] == 2 and p["pp"] == 2 and p["global_batch"] == 16 and len(sliced) > 0,
      f"plan.json: dp 2, tp 2, pp 2, global batch 16, {len(sliced)} states with tp_slice")
cpp = open(os.path.join(work, "tp2", "step.cpp")).read()
check("comm_grid_tp" in cpp and "initStates(path)" in cpp, "step.cpp: a tp communicator and the sliced-state init")


def train(name, steps=STEPS):
    log, ckpt = os.path.join(work, f"{name}.json"), os.path.join(work, f"{name}.ckpt")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--checkpoint", ckpt, "--timeout", "120",
                   "--no-plots"], timeout=900)
    check(rc == 0, f"ptrain-run {name} {steps} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


def read_checkpoint(path):
    """{key: array('f' or 'q')} of a checkpoint (docs/CodegenCpu.md, version 1)."""
    blob = open(path, "rb").read()
    count, data_offset = struct.unpack_from("<I", blob, 12)[0], struct.unpack_from("<Q", blob, 16)[0]
    pos, states = 24, {}
    for _ in range(count):
        n = struct.unpack_from("<I", blob, pos)[0]
        key = blob[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        dtype, _, rank = struct.unpack_from("<iii", blob, pos)
        pos += 12 + 8 * rank
        offset, size = struct.unpack_from("<QQ", blob, pos)
        pos += 16
        values = array.array("f" if dtype == 0 else "q")
        values.frombytes(blob[data_offset + offset:data_offset + offset + size])
        states[key] = values
    return states


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


def compare_parameters(name, ref):
    """The worst |diff| over every parameter of every rank of `name`'s checkpoint."""
    plan = plans[name]
    states = {s["key"]: s for s in plan["states"]}
    worst, worst_key, replicated_equal, seen = 0.0, None, True, set()
    for s in range(plan["pp"]):
        parts = []
        for t in range(plan["tp"]):
            path = os.path.join(work, f"{name}.ckpt") + (f".stage{s}" if plan["pp"] > 1 else "") + f".tp{t}"
            parts.append(read_checkpoint(path))
        for key in parts[0]:
            state = states[key]
            if state["kind"] != "parameter":
                continue
            seen.add(key)
            for t, part in enumerate(parts):
                if "tp_slice" in state:
                    sl = state["tp_slice"]
                    expected = tp_part(ref[key], sl["global_shape"], sl["dim"], sl["groups"], plan["tp"], t)
                else:
                    expected = ref[key]
                    replicated_equal = replicated_equal and part[key] == parts[0][key]
                if len(expected) != len(part[key]):
                    check(False, f"{name}: parameter {key} of tp rank {t} has {len(part[key])} values, expected "
                                 f"{len(expected)}")
                    return 1.0
                diff = max(abs(a - b) for a, b in zip(part[key], expected))
                if diff > worst:
                    worst, worst_key = diff, key
    missing = {k for k, v in ref.items() if states.get(k, {}).get("kind") == "parameter"} - seen
    check(not missing, f"{name}: every parameter of the reference is in some rank's checkpoint")
    check(replicated_equal, f"{name}: the replicated parameters are bit-equal on the tp ranks of each stage")
    print(f"{name}: worst absolute parameter difference {worst:.3e} ({worst_key})")
    return worst


logs = {name: train(name) for name in ("ref", "tp2", "tp2pp2", "dp2tp2pp2")}
if logs["ref"]:
    ref = read_checkpoint(os.path.join(work, "ref.ckpt"))
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
        check(compare_parameters(name, ref) <= PARAM_TOL, f"{name}: parameters within {PARAM_TOL} absolute of one rank's")

# 3 + 4: the executor on the same IR and the same global batches (run.py's batch()).
sys.path.insert(0, os.path.join(source, "python"))
from ptrain import run as ptrain_run  # noqa: E402
train_data, _ = ptrain_run.read_data(*ptrain_run.data_files(data), 64)
tokens = os.path.join(work, "tokens.bin")
with open(tokens, "wb") as f:
    for i in range(STEPS):
        ids = list(ptrain_run.batch(train_data, 16, 64, SEED * 1000003 + i))
        f.write(struct.pack(f"<{len(ids)}q", *ids))
logs["tp2pp2occ"] = train("tp2pp2occ")
for name in ("dp2tp2pp2", "tp2pp2occ"):
    if not logs[name]:
        continue
    rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, name, "step.mlir"), "--weights", MODEL,
                   "--multi-rank", "--steps", str(STEPS), "--tokens-file", tokens], timeout=900)
    check(rc == 0, f"ptrain-interpret --multi-rank on {name}/step.mlir" + ("" if rc == 0 else ":\n" + out[-3000:]))
    if rc != 0:
        continue
    executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, logs[name]["train_loss"]))
    print(f"{name}: executor train {executor}; MPI {logs[name]['train_loss']}; worst relative {worst:.3e}")
    check(len(executor) == STEPS and worst <= EXEC_TOL, f"{name}: MPI run within {EXEC_TOL} relative of the executor")
if logs["tp2pp2occ"] and logs["tp2pp2"]:
    check(logs["tp2pp2occ"]["train_loss"][0] == logs["tp2pp2"]["train_loss"][0],
          "optimus-cc x tp: the first step's loss equals uncompressed (compression acts on its backward)")

rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp2tp2pp2"), "--data", data, "--steps", "1",
               "--np", "3"], timeout=60)
check(rc != 0 and "compiled for dp * pp * tp = 2 * 2 * 2 = 8 ranks" in out, "--np 3 for a dp2 x tp2 x pp2 step")

finish()
