"""End-to-end check of the CPU code generator on the bundled GPT (CTest `codegen-cpu-gpt`).

1. ptrain-compile --optimizer none: the compiled loss and every gradient match the committed PyTorch
   references (models/gpt/reference_loss.txt, models/gpt/reference_grads.onnx) within 1e-4 relative,
   max|a - b| / max|b| per tensor, for models/gpt/test_data_set_0/input_0.pb.
2. ptrain-compile --optimizer adamw: two steps on the same batch lower the loss; a checkpoint saved before a
   step and loaded back reproduces that step's loss bit for bit; a corrupt checkpoint is refused.

Usage: gpt_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

TOLERANCE = 1e-4


def compile_step(build, source, out, *extra):
    cmd = [os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models/gpt/gpt.onnx"),
           "--target", "cpu", "-o", out, *extra]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    lib = ctypes.CDLL(os.path.join(out, "libstep.so"))
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/libptrain_runtime.so"))
    rt.ptrain_last_error.restype = ctypes.c_char_p
    return plan, lib, rt


def check(status, rt, what):
    if status != 0:
        raise SystemExit(f"FAIL: {what}: status {status}: {rt.ptrain_last_error().decode()}")


def f32p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def main(build, source, scratch):
    gpt = os.path.join(source, "models/gpt")
    tokens = numpy_helper.to_array(onnx.load_tensor(os.path.join(gpt, "test_data_set_0/input_0.pb")))
    tokens = np.ascontiguousarray(tokens.astype(np.int64))
    tok_p = tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    ref_loss = float(open(os.path.join(gpt, "reference_loss.txt")).read().split()[0])
    ref_grads = {t.name: numpy_helper.to_array(t)
                 for t in onnx.load(os.path.join(gpt, "reference_grads.onnx")).graph.initializer}
    failures = []

    # --- 1. optimizer=none: loss and gradients against PyTorch.
    plan, lib, rt = compile_step(build, source, os.path.join(scratch, "none"), "--optimizer", "none")
    assert plan["batch"] == 4 and plan["seq"] == 64 and plan["vocab"] == 256, plan
    results = plan["train_step_results"]
    check(lib.ptrain_step_init(os.path.join(gpt, "gpt.onnx").encode()), rt, "init")
    outs = [np.zeros(r["shape"], np.float32) for r in results]
    check(lib.ptrain_step_train_step(tok_p, *[f32p(o) for o in outs]), rt, "train_step")
    loss = float(outs[0])
    rel = abs(loss - ref_loss) / abs(ref_loss)
    print(f"loss {loss:.8f} reference {ref_loss:.8f} relative error {rel:.2e}")
    if not rel <= TOLERANCE:
        failures.append(f"loss relative error {rel:.2e}")
    graded = [r["grad_of"] for r in results[1:]]
    if sorted(graded) != sorted(ref_grads):
        failures.append(f"gradients for {sorted(graded)} but references for {sorted(ref_grads)}")
    worst = 0.0
    for r, got in zip(results[1:], outs[1:]):
        want = ref_grads[r["grad_of"]]
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        worst = max(worst, err)
        if not err <= TOLERANCE:
            failures.append(f"gradient of {r['grad_of']}: relative error {err:.2e}")
    print(f"{len(results) - 1} gradients, max relative error (max|a-b|/max|b| per tensor) {worst:.2e}")

    # --- 2. optimizer=adamw: the loss decreases on a repeated batch; checkpoints restore the state.
    plan, lib, rt = compile_step(build, source, os.path.join(scratch, "adamw"), "--optimizer", "adamw",
                                 "--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100")
    check(lib.ptrain_step_init(None), rt, "init from the model the step was compiled from")
    ckpt = os.path.join(scratch, "adamw", "before.ckpt").encode()
    check(lib.ptrain_step_save(ckpt), rt, "save")
    losses = []
    for _ in range(2):
        out = np.zeros((), np.float32)
        check(lib.ptrain_step_train_step(tok_p, f32p(out)), rt, "adamw step")
        losses.append(float(out))
    print(f"adamw losses on a repeated batch: {losses[0]:.6f} -> {losses[1]:.6f}")
    if not losses[1] < losses[0]:
        failures.append(f"the loss did not decrease: {losses}")
    if abs(losses[0] - loss) > 1e-6 * abs(loss):
        failures.append(f"the first adamw step's loss {losses[0]} differs from optimizer=none's {loss}")
    check(lib.ptrain_step_load(ckpt), rt, "load")
    out = np.zeros((), np.float32)
    check(lib.ptrain_step_train_step(tok_p, f32p(out)), rt, "step after load")
    if float(out) != losses[0]:
        failures.append(f"after loading the checkpoint the step gave {float(out)}, not {losses[0]}")
    data = bytearray(open(ckpt, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(ckpt, "wb").write(bytes(data))
    if lib.ptrain_step_load(ckpt) == 0:
        failures.append("a corrupt checkpoint was accepted")
    else:
        print(f"corrupt checkpoint refused: {rt.ptrain_last_error().decode()}")

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
