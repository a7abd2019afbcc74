"""Export of trained weights back to ONNX (CTest `codegen-cpu-export`).

1. ptrain-compile the bundled GPT at pp = 2 (2 micro-batches), ptrain-run 4 steps with --checkpoint (one file
   per stage), ptrain-export the checkpoint to trained.onnx (external data, like the original).
2. onnxruntime on trained.onnx over the validation batches ptrain-run drew (run_data.py's batch(), the same seeds)
   gives the run's final validation loss within 1e-5 relative; the untrained model's loss differs (the weights
   did change), and every parameter of trained.onnx equals the checkpoint's.
3. ptrain re-imports it: ptrain-compile trained.onnx (--optimizer none) and its forward matches onnxruntime's
   logits on trained.onnx within 1e-5.
   The same for dp = 2 (pp = 1): replica 0's checkpoint exported, onnxruntime over both replicas' rows gives
   the run's final validation loss (the eval step averages the loss over dp).
4. Errors, each exit 1 with a message naming what: a missing stage file, a corrupt checkpoint (checksum), a
   mismatched model (--model gpt2_megatron's), a plan.json edited after compiling, a missing output folder.

Runs under .venv/bin/python (ort_venv.py). Usage: export_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import json
import os
import shutil
import sys

import ort_venv

ort_venv.require(sys.argv[2])

import ctypes

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from e2e import check, corpus, failures, finish, ort_val_loss, run, setup

TOLERANCE = 1e-5
build, source, work, BIN, MODEL = setup(sys.argv)
from ptrain import export as ptrain_export
from ptrain import run_data

data = corpus(source, work)
out = os.path.join(work, "pp2")
rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--pp", "2", "--micro-batches", "2", "--lr", "3e-3",
                "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu", "-o", out])
check(rc == 0, "ptrain-compile --pp 2 --micro-batches 2" + ("" if rc == 0 else ":\n" + text))
if failures:
    finish()
ckpt, log = os.path.join(work, "ckpt"), os.path.join(work, "run.json")
SEED, VAL_BATCHES = 5, 2
rc, text = run([os.path.join(BIN, "ptrain-run"), out, "--data", data, "--steps", "4", "--val-batches",
                str(VAL_BATCHES), "--seed", str(SEED), "--checkpoint", ckpt, "--log", log, "--no-plots",
                "--timeout", "60"], timeout=600)
check(rc == 0, "ptrain-run 4 steps with --checkpoint" + ("" if rc == 0 else ":\n" + text))
if failures:
    finish()
final = json.load(open(log))["val_loss"][-1][1]

# --- 1. export.
trained = os.path.join(work, "export", "trained.onnx")
os.makedirs(os.path.dirname(trained))
rc, text = run([os.path.join(BIN, "ptrain-export"), out, "--checkpoint", ckpt, "-o", trained])
print(text.strip())
check(rc == 0 and os.path.isfile(trained) and os.path.isfile(trained + ".data"),
      "ptrain-export writes trained.onnx and trained.onnx.data" + ("" if rc == 0 else ":\n" + text))
if failures:
    finish()

# --- 2. onnxruntime on the exported model gives the run's final validation loss.
plan = json.load(open(os.path.join(out, "plan.json")))
b, seq = plan["batch"], plan["seq"]
_, val = run_data.read_data(*run_data.data_files(data), seq)


def val_loss(model, dp=1):
    return ort_val_loss(model, data, plan, SEED, VAL_BATCHES, dp)


got = val_loss(trained)
untrained = val_loss(MODEL)
rel = abs(got - final) / abs(final)
print(f"final validation loss: ptrain-run {final:.8f}, onnxruntime on trained.onnx {got:.8f} (relative "
      f"{rel:.2e}); the untrained model {untrained:.8f}")
check(rel <= TOLERANCE, f"onnxruntime on the export: the run's final validation loss within {TOLERANCE}")
check(abs(untrained - final) > 1e-3, "the untrained model's loss differs from it (training changed the weights)")

runtime = ctypes.CDLL(os.path.join(build, "lib/Runtime/libptrain_runtime.so"))
runtime.ptrain_last_error.restype = ctypes.c_char_p
params = {}
for s in range(2):
    for key, (kind, a) in ptrain_export.load_checkpoint(runtime, f"{ckpt}.stage{s}").items():
        if kind == ptrain_export.PARAMETER:
            params[key] = a
exported = {i.name: numpy_helper.to_array(i) for i in onnx.load(trained).graph.initializer}
original = onnx.load(MODEL)
check(sorted(exported) == sorted(i.name for i in original.graph.initializer),
      "the export has the original's initializers")
check(all(np.array_equal(exported[k], v) for k, v in params.items()) and len(params) == len(plan["states"]) - len(
    [s for s in plan["states"] if s["kind"] != "parameter"]),
      f"its {len(params)} parameters equal the checkpoint's, bit for bit")
check([n.op_type for n in onnx.load(trained).graph.node] == [n.op_type for n in original.graph.node],
      "the graph is the original's")

# --- 3. ptrain re-imports the export.
again = os.path.join(work, "reimport")
rc, text = run([os.path.join(BIN, "ptrain-compile"), trained, "--optimizer", "none", "--target", "cpu", "-o", again])
check(rc == 0, "ptrain-compile trained.onnx" + ("" if rc == 0 else ":\n" + text))
if rc == 0:
    p1 = json.load(open(os.path.join(again, "plan.json")))
    lib = ctypes.CDLL(os.path.join(again, "libstep.so"))
    check(lib.ptrain_step_init(trained.encode()) == 0, "ptrain_step_init(trained.onnx)")
    tokens = np.ctypeslib.as_array(run_data.batch(val, b, seq, 99)).reshape(b, seq)
    logits = np.zeros((b, seq, p1["vocab"]), np.float32)
    check(lib.ptrain_step_forward(tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                                  logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float))) == 0, "forward")
    sess = ort.InferenceSession(trained, providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: tokens})[0]
    err = float(np.max(np.abs(logits - want)) / np.max(np.abs(want)))
    print(f"re-imported export: forward vs onnxruntime max|a - b| / max|b| = {err:.2e}")
    check(err <= TOLERANCE, f"the re-imported export's forward matches onnxruntime within {TOLERANCE}")


# --- gathering over data-parallel ranks: dp = 2 (pp = 1, one checkpoint file, replica 0's), 2 steps.
dp2 = os.path.join(work, "dp2")
rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--dp", "2", "--micro-batches", "2", "--lr", "3e-3",
                "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu", "-o", dp2])
check(rc == 0, "ptrain-compile --dp 2 --micro-batches 2" + ("" if rc == 0 else ":\n" + text))
rc, text = run([os.path.join(BIN, "ptrain-run"), dp2, "--data", data, "--steps", "2", "--val-batches",
                str(VAL_BATCHES), "--seed", str(SEED), "--checkpoint", os.path.join(work, "dp2.ckpt"), "--log",
                os.path.join(work, "dp2.json"), "--no-plots", "--timeout", "60"], timeout=600)
check(rc == 0, "ptrain-run --dp 2, 2 steps" + ("" if rc == 0 else ":\n" + text))
if rc == 0:
    dp_trained = os.path.join(work, "export", "dp2.onnx")
    rc, text = run([os.path.join(BIN, "ptrain-export"), dp2, "--checkpoint", os.path.join(work, "dp2.ckpt"), "-o",
                    dp_trained])
    check(rc == 0, "ptrain-export of the dp = 2 run" + ("" if rc == 0 else ":\n" + text))
    final = json.load(open(os.path.join(work, "dp2.json")))["val_loss"][-1][1]
    if rc == 0:
        got = val_loss(dp_trained, dp=2)
        rel = abs(got - final) / abs(final)
        print(f"dp = 2: final validation loss {final:.8f}, onnxruntime on dp2.onnx {got:.8f} (relative {rel:.2e})")
        check(rel <= TOLERANCE, f"dp = 2: onnxruntime on the export gives the final validation loss within {TOLERANCE}")

# --- 4. errors.
def expect_error(cmd, needle, what):
    rc, text = run(cmd)
    ok = rc == 1 and needle in text and "Traceback" not in text
    check(ok, f"{what}: exit 1, '{needle}'" + ("" if ok else f" (exit {rc}):\n{text}"))


export = [os.path.join(BIN, "ptrain-export"), out, "-o", os.path.join(work, "bad.onnx")]
expect_error(export + ["--checkpoint", os.path.join(work, "nothing")], "no checkpoint file " +
             os.path.join(work, "nothing") + ".stage0", "a missing checkpoint")
corrupt = os.path.join(work, "corrupt")
for s in range(2):
    shutil.copy(f"{ckpt}.stage{s}", f"{corrupt}.stage{s}")
with open(f"{corrupt}.stage1", "r+b") as f:
    f.seek(-100, os.SEEK_END)
    byte = f.read(1)
    f.seek(-100, os.SEEK_END)
    f.write(bytes([byte[0] ^ 0xFF]))
expect_error(export + ["--checkpoint", corrupt], "checksum", "a corrupt checkpoint")
megatron = os.path.normpath(os.path.join(source, "..", "shared", "data", "onnx", "gpt2_megatron.onnx"))
expect_error(export + ["--checkpoint", ckpt, "--model", megatron], "the checkpoint is not of this model",
             "a mismatched model")
edited = os.path.join(work, "edited")
shutil.copytree(out, edited)
plan["seq"] = 32
json.dump(plan, open(os.path.join(edited, "plan.json"), "w"))
expect_error([os.path.join(BIN, "ptrain-export"), edited, "--checkpoint", ckpt, "-o", os.path.join(work, "x.onnx")],
             "'seq' is 32 but", "a hand-edited plan.json")
expect_error(export[:2] + ["--checkpoint", ckpt, "-o", os.path.join(work, "no", "such", "x.onnx")],
             "does not exist", "a missing output folder")
# -o naming a folder: an error before anything is written (save_model used to leave FOLDER.data behind).
folder = os.path.join(work, "folder.onnx")
os.makedirs(folder, exist_ok=True)
expect_error(export[:2] + ["--checkpoint", ckpt, "-o", folder], "is a folder", "an output that is a folder")
check(not os.path.exists(folder + ".data"), "an output that is a folder leaves no folder.onnx.data")
# -o naming the model the graph is copied from: refused (writing it removed the model's own external data first).
copy = os.path.join(work, "copy.onnx")
shutil.copy(os.path.join(source, "models", "gpt", "gpt.onnx"), copy)
shutil.copy(os.path.join(source, "models", "gpt", "gpt.onnx.data"), os.path.join(work, "gpt.onnx.data"))
expect_error(export[:2] + ["--checkpoint", ckpt, "--model", copy, "-o", copy], "is the model the graph is copied from",
             "an output that is the source model")
# -o naming a file the export reads: a checkpoint file (-o PATH.stage0 replaced the trained weights with the
# model), the manifest, the source model's external data (its original weights), plan.json: refused, unchanged.
for victim, role in ((f"{ckpt}.stage0", "is a file of the checkpoint"), (f"{ckpt}.json", "is a file of the checkpoint"),
                     (os.path.join(work, "gpt.onnx.data"), "is external data of the model"),
                     (os.path.join(out, "plan.json"), "is the plan's plan.json")):
    before = open(victim, "rb").read()
    expect_error(export[:2] + ["--checkpoint", ckpt, "--model", copy, "-o", victim], role,
                 f"an output that is {os.path.basename(victim)}")
    check(open(victim, "rb").read() == before, f"{os.path.basename(victim)} unchanged by the refused export")
finish()
