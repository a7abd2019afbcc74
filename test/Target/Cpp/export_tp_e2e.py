"""Export of tensor-parallel checkpoints: ptrain-export gathers the shards (CTest `codegen-cpu-export-tp`).

    export_tp_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT with one global batch of 16 sequences and the same SGD settings
   (sgd_equivalence.py's SGD_FLAGS: momentum 0.9, lr 0.05): one rank (the reference), --tp 2 (2 ranks),
   --tp 2 --pp 2 (4 ranks), --dp 2 --tp 2 (4 ranks; replica 0's files) and --tp 2 --vocab-parallel
   --vocab-multiple 3 (the tied embedding split by rows, padded 256 -> 258); ptrain-run each for 3 steps under
   mpirun with a checkpoint (one file per stage and tp rank, PATH.json the manifest).
2. ptrain-export each. The gathered parameters against the one-rank run's export: every tensor within the
   derived bound (3) of sgd_equivalence.py (GRAD_NOISE, 1e-3, of its largest displacement by training plus 3
   ulps: the row-parallel sums add the tp parts in another order, f32 roundings that SGD's linear update does
   not amplify; AdamW's would, which made a fixed 1e-4 fail on AVX-512 machines, issue 20), while a wrong slice
   or order would be off by the order of the displacement itself or of the weights' own size; and every one
   changed by training. onnxruntime on the export over the validation batches the
   run drew gives the run's final validation loss within LOSS_TOL relative (the gathered model is the one that
   trained, whatever the split).
3. Errors, each exit 1 with a message naming what and no output written (neither -o nor its .data): a missing
   shard file, shards of different steps (one tp rank's file from a 2-step run), a manifest (PATH.json) of
   another step, a manifest of another grid (a tp2 run's for the tp2 x pp2 files), a checkpoint of another
   compile with the same grid (the fingerprint), a replicated parameter that differs between the tp ranks (tp
   rank 1's file from the dp2 x tp2 run).

Runs under .venv/bin/python (ort_venv.py).
"""

import json
import os
import shutil
import sys

import ort_venv

ort_venv.require(sys.argv[2])

import numpy as np
import onnx
from onnx import numpy_helper

from e2e import check, compile_plans, corpus, failures, finish, ort_val_loss, run, setup
from sgd_equivalence import GRAD_NOISE, SGD_FLAGS, bound_use

LOSS_TOL = 1e-5    # relative: onnxruntime on the export vs the run's final validation loss
STEPS, SEED, VAL_BATCHES = 3, 5, 1

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work)
common = [*SGD_FLAGS, "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"ref": ["--micro-batches", "4"],
           "tp2": ["--tp", "2", "--micro-batches", "4"],
           "tp2pp2": ["--tp", "2", "--pp", "2", "--micro-batches", "4"],
           "dp2tp2": ["--dp", "2", "--tp", "2", "--micro-batches", "2"],
           "vtp2pad": ["--tp", "2", "--vocab-parallel", "--vocab-multiple", "3", "--micro-batches", "4"]}
plans = compile_plans(BIN, MODEL, work, configs, common)
if failures:
    finish()
sliced = {name: sorted({s["tp_slice"]["dim"] for s in p["states"] if "tp_slice" in s}) for name, p in plans.items()}
check(sliced["tp2"] == [0, 1], f"tp2: parameters sliced along dimension 0 (column-parallel) and 1 (row-parallel)")
wte = [s for s in plans["vtp2pad"]["states"] if s["key"] == "wte.weight"][0]
check(wte.get("tp_slice", {}).get("padded") == 258 and wte["shape"] == [129, 128],
      f"vtp2pad: the embedding split by rows, padded to 258 (local {wte['shape']}, {wte.get('tp_slice')})")


def train(name, steps=STEPS, tag=None):
    tag = tag or name
    log, ckpt = os.path.join(work, f"{tag}.json"), os.path.join(work, f"{tag}.ckpt")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", str(VAL_BATCHES), "--seed", str(SEED), "--log", log, "--checkpoint", ckpt,
                   "--timeout", "120", "--no-plots"], timeout=900)
    check(rc == 0, f"ptrain-run {name} {steps} steps" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


def export(name, ckpt, out, plan_dir=None):
    """(exit status, output) of ptrain-export of WORK/plan_dir (default: name) with the checkpoint WORK/ckpt."""
    return run([os.path.join(BIN, "ptrain-export"), os.path.join(work, plan_dir or name), "--checkpoint",
                os.path.join(work, ckpt), "-o", out])


def initializers(path):
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


logs = {name: train(name) for name in configs}
if not logs["ref"]:
    finish()
manifest = json.load(open(os.path.join(work, "tp2pp2.ckpt.json")))
check(manifest.get("tp") == 2 and manifest.get("pp") == 2 and manifest.get("step") == STEPS and
      manifest.get("files") == [".stage0.tp0", ".stage0.tp1", ".stage1.tp0", ".stage1.tp1"] and len(manifest.get("plan_fingerprint") or "") == 64,
      f"ptrain-run's manifest tp2pp2.ckpt.json names the grid, the step, the files and the plan: {manifest}")
exports = os.path.join(work, "export")
os.makedirs(exports)
ref_onnx = os.path.join(exports, "ref.onnx")
rc, text = export("ref", "ref.ckpt", ref_onnx)
check(rc == 0, "ptrain-export of the one-rank run" + ("" if rc == 0 else ":\n" + text))
if rc != 0:
    finish()
ref = initializers(ref_onnx)
untrained = initializers(MODEL)

for name in ("tp2", "tp2pp2", "dp2tp2", "vtp2pad"):
    if not logs[name]:
        continue
    path = os.path.join(exports, f"{name}.onnx")
    rc, text = export(name, f"{name}.ckpt", path)
    print(text.strip())
    check(rc == 0 and os.path.isfile(path), f"ptrain-export of {name}" + ("" if rc == 0 else ":\n" + text))
    if rc != 0:
        continue
    got = initializers(path)
    check(sorted(got) == sorted(ref) and all(got[k].shape == ref[k].shape for k in ref),
          f"{name}: the export has the original's initializers with their full shapes")
    use, worst, key = 0.0, 0.0, None
    for k, r in ref.items():
        u, d = bound_use(got[k], r, untrained[k], STEPS)
        worst = max(worst, d)
        if u >= use:
            use, key = u, k
    unchanged = [k for k in ref if np.array_equal(got[k], untrained[k])]
    print(f"{name}: gathered parameters vs one rank's: worst |difference| {worst:.3e}, the most of the bound used "
          f"{use:.3e} ({key}); unchanged by training: {unchanged}")
    check(use <= 1.0, f"{name}: the gathered parameters within the derived bound of one rank's (sgd_equivalence.py "
          f"(3): {GRAD_NOISE} of each tensor's displacement + {STEPS} ulps)")
    check(not unchanged, f"{name}: every parameter changed by training")
    final = logs[name]["val_loss"][-1][1]
    loss = ort_val_loss(path, data, plans[name], SEED, VAL_BATCHES, plans[name]["dp"])
    rel = abs(loss - final) / abs(final)
    print(f"{name}: final validation loss: ptrain-run {final:.8f}, onnxruntime on the export {loss:.8f} "
          f"(relative {rel:.2e})")
    check(rel <= LOSS_TOL, f"{name}: onnxruntime on the gathered export gives the run's final validation loss "
          f"within {LOSS_TOL}")

# --- 3. errors: exit 1, the message, nothing written.
bad = os.path.join(exports, "bad.onnx")


def expect_error(name, ckpt, needle, what, plan_dir=None):
    rc, text = export(name, ckpt, bad, plan_dir)
    ok = rc == 1 and needle in text and "Traceback" not in text
    check(ok, f"{what}: exit 1, '{needle}'" + ("" if ok else f" (exit {rc}):\n{text}"))
    check(not os.path.exists(bad) and not os.path.exists(bad + ".data"), f"{what}: no output written")


def copy_checkpoint(src, dst, replace=None, manifest_of=None):
    """WORK/src.* copied to WORK/dst.* (files and manifest); replace = {suffix: another checkpoint's file}."""
    for f in os.listdir(work):
        if f.startswith(src + ".ckpt.") or f == src + ".ckpt.json":
            shutil.copy(os.path.join(work, f), os.path.join(work, dst + f[len(src):]))
    for suffix, other in (replace or {}).items():
        shutil.copy(os.path.join(work, other), os.path.join(work, dst + ".ckpt" + suffix))
    if manifest_of:
        shutil.copy(os.path.join(work, manifest_of + ".ckpt.json"), os.path.join(work, dst + ".ckpt.json"))


if logs["tp2pp2"]:
    copy_checkpoint("tp2pp2", "missing")
    os.remove(os.path.join(work, "missing.ckpt.stage1.tp1"))
    expect_error("tp2pp2", "missing.ckpt", "no checkpoint file " + os.path.join(work, "missing.ckpt.stage1.tp1") +
                 " (stage 1 of pp = 2, tp rank 1 of tp = 2", "a missing shard")
if logs["tp2"] and train("tp2", 2, "early"):
    copy_checkpoint("tp2", "mixed", {".tp1": "early.ckpt.tp1"})
    expect_error("tp2", "mixed.ckpt", "the checkpoint files are of different steps: after step 2: " +
                 os.path.join(work, "mixed.ckpt.tp1") + "; after step 3: " + os.path.join(work, "mixed.ckpt.tp0"),
                 "shards of different steps")
    copy_checkpoint("tp2", "stale", manifest_of="early")
    expect_error("tp2", "stale.ckpt", "stale.ckpt.json says step 2, but the checkpoint files are after step 3",
                 "a manifest of another step")
if logs["tp2pp2"] and logs["tp2"]:
    copy_checkpoint("tp2pp2", "othergrid", manifest_of="tp2")
    expect_error("tp2pp2", "othergrid.ckpt", "the checkpoint was written by a run at pp = 1, but " +
                 os.path.join(work, "tp2pp2", "plan.json") + " has pp = 2", "a manifest of another grid")
if logs["tp2"] and logs["vtp2pad"]:
    expect_error("tp2", "tp2.ckpt", "it is another compile's checkpoint", "a checkpoint of another compile",
                 plan_dir="vtp2pad")
if logs["tp2"] and logs["dp2tp2"]:
    copy_checkpoint("tp2", "twoparents", {".tp1": "dp2tp2.ckpt.tp1"})
    expect_error("tp2", "twoparents.ckpt", "is replicated over the tp ranks but differs between",
                 "a replicated parameter that differs between the tp ranks")
finish()
