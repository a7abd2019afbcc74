"""bf16 and fp16 mixed precision on the bundled GPT (CTest `codegen-cpu-precision`, issue 24,
docs/MixedPrecision.md).

1. The oracle: ptrain-compile --precision bf16 (and fp16) --optimizer none; the compiled step's loss and every
   gradient against ptrain-interpret on the same step.mlir (the interpreter runs the 16-bit GEMMs as the runtime's
   ptrain_gemm_bf16 / ptrain_gemm_f16 and the fp32 ops in fp64 rounded to fp32, so the step agrees within
   TOL_ORACLE and TOL_GRAD, not bit for bit: the fp32 step does not either). Some 16-bit gradient must differ
   from the fp32 step's by more than TOL_DISTINCT, so a step that silently ran in fp32 fails.
2. Bytes: with --pp 2 --micro-batches 2 the bf16 and fp16 steps' pipeline sends carry half the fp32 step's bytes
   (the send ops of step.mlir, per link and direction).
3. Training: STEPS (200) AdamW steps of fp32, bf16 and fp16 with global-norm clipping at 1.0 (Megatron-LM's and
   GPT-2's default) on consecutive, never repeated batches of a byte corpus (the repository's docs); each loss is
   measured before the step trains on its batch, so on unseen data: the mean of the last 20 (5120 tokens at the
   weights of steps 180..199) is the validation loss, and bf16's is within 1% of fp32's, fp16's within 2% (the
   issue's bounds), as is every 20-step window after the warm-up. fp16 trains with its dynamic loss scaler from
   PyTorch GradScaler's initial scale 2^16 (FP16_SCALE; Megatron's 2^32 would first skip some 20 steps while it
   backs off, docs/MixedPrecision.md). Without clipping this configuration spikes near the
   peak learning rate and the precision that spikes ends on a worse plateau: PyTorch autocast does the same
   (bench/precision/torch_reference.py, docs/MixedPrecision.md), so the clipped run is the one that tests bf16.

Usage: precision_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

# Compiled vs interpreted bf16 step: the loss within TOL_ORACLE relative (measured 1.7e-7; bf16 vs fp32 differ by
# 6.7e-6), each gradient within TOL_GRAD as max|a-b|/max|b| (measured 1.8e-3; bf16 vs fp32: 7.1e-3): an fp32 value
# that the two compute a few ulps apart can round to neighbouring bf16 values (one bf16 ulp is 2^-8 relative).
# fp16 (one ulp 2^-11 relative) agrees closer: loss measured 3.4e-7 relative, while fp16 and fp32 losses differ by
# only 1.1e-6, too close to tell apart by the loss: a 16-bit step must instead move some gradient by more than
# TOL_DISTINCT (as max|a-b|/max|b| against the compiled fp32 step; a step that ran in fp32 moves none).
# With the 16-bit activations (docs/MixedPrecision.md, "Slice 2: the values between the ops in 16 bits") the
# layer-norm, softmax, GELU and residual-add outputs are rounded too, so more fp32 values that the two compute a few
# ulps apart (the interpreter's fp64 statistics) straddle a 16-bit rounding boundary: measured 2026-12-08 bf16
# 7.6e-10, fp16 1.12e-6 (without them 3.4e-7), hence 3e-6. Not bit for bit: the fp32 ops themselves differ.
TOL_ORACLE = 3e-6
TOL_GRAD = 4e-3
TOL_DISTINCT = 1e-5
STEPS = int(os.environ.get("PTRAIN_PRECISION_STEPS", "200"))
WINDOW = 20
CLIP = "1.0"
# 16-bit / fp32 - 1 of the mean loss of each 20-step window from step 20 on, and of the last 20 steps (the
# validation loss): bf16 measured at most 0.2% (PyTorch autocast on the same run: 0.2% too); the bounds are
# 1% for bf16 and 2% for fp16.
BOUND = {"bf16": 0.01, "fp16": 0.02}
HALF = ("bf16", "fp16")
FP16_SCALE = "65536"  # torch.cuda.amp.GradScaler's init_scale


def compile_step(build, source, out, *extra):
    cmd = [os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models/gpt/gpt.onnx"),
           "--target", "cpu", "-o", out, *extra]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    return plan


def load(build, out):
    lib = ctypes.CDLL(os.path.join(out, "libstep.so"))
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/libptrain_runtime.so"))
    rt.ptrain_last_error.restype = ctypes.c_char_p
    return lib, rt


def check(status, rt, what):
    if status != 0:
        raise SystemExit(f"FAIL: {what}: status {status}: {rt.ptrain_last_error().decode()}")


def f32p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def i64p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))


def send_bytes(step_mlir):
    """Bytes of every ptrain.send_start of a step, by element type: {(elem): bytes}."""
    sizes = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8}
    total = {}
    for m in re.finditer(r"ptrain\.send_start .*?: tensor<([0-9x]+)x(f32|bf16|f16|i64)>", open(step_mlir).read()):
        n = int(np.prod([int(d) for d in m.group(1).split("x")]))
        total[m.group(2)] = total.get(m.group(2), 0) + n * sizes[m.group(2)]
    return total


def check_oracle(build, scratch, gpt, plan, half, losses, grads, failures):
    """The compiled `half` (bf16 or fp16) step of scratch/none-<half> against ptrain-interpret on its step.mlir."""
    elem = {"bf16": "bf16", "fp16": "f16"}[half]
    step = open(os.path.join(scratch, "none-" + half, "step.mlir")).read()
    step = step[step.index("func.func @train_step"):]  # @forward, the user's function, stays fp32
    n_gemms = len(re.findall(r"ptrain\.matmul .*\{accumulate = f32\} : tensor<[0-9x]+x" + elem + ">", step))
    n_fp32 = len(re.findall(r"ptrain\.matmul [^{]*: tensor<[0-9x]+xf32>", step))
    print(f"{half} step: {n_gemms} {elem} GEMMs with fp32 accumulation, {n_fp32} fp32 GEMMs")
    if n_gemms == 0 or n_fp32 != 0:
        failures.append(f"the {half} step has {n_gemms} {elem} GEMMs and {n_fp32} fp32 ones")
    # The interpreter's gradients, as a node-less ONNX file the way ptrain-interpret --expect-grads reads them.
    ref = onnx.helper.make_model(onnx.helper.make_graph(
        [], "grads", [], [],
        [numpy_helper.from_array(o, r["grad_of"]) for r, o in zip(plan["train_step_results"][1:], grads[half][1:])]))
    ref_path = os.path.join(scratch, f"compiled_grads_{half}.onnx")
    onnx.save(ref, ref_path)
    res = subprocess.run([os.path.join(build, "bin", "ptrain-interpret"),
                          os.path.join(scratch, "none-" + half, "step.mlir"),
                          "--entry", "train_step", "--weights", os.path.join(gpt, "gpt.onnx"), "--input",
                          os.path.join(gpt, "test_data_set_0/input_0.pb"), "--expect-grads", ref_path,
                          "--rtol", str(TOL_GRAD)], capture_output=True, text=True)
    print(res.stdout[-600:], res.stderr[-600:])
    m = re.search(r"result 0: tensor<f32>.*value = ([-+0-9.eE]+)", res.stdout)
    if res.returncode != 0 or not m:
        failures.append(f"ptrain-interpret on the {half} step failed (rc {res.returncode})")
        return
    interp = float(m.group(1))
    rel = abs(interp - losses[half]) / abs(interp)
    gap = abs(losses[half] - losses["fp32"]) / abs(losses["fp32"])
    # A step that silently ran in fp32 would give the compiled fp32 step's gradients bit for bit.
    grad_gap = max(float(np.max(np.abs(g - f)) / max(float(np.max(np.abs(f))), 1e-30))
                   for g, f in zip(grads[half][1:], grads["fp32"][1:]))
    print(f"loss: {half} compiled {losses[half]:.8f}, interpreted {interp:.8f} (relative {rel:.2e}); "
          f"fp32 {losses['fp32']:.8f} ({half} vs fp32 relative {gap:.2e}; gradients up to {grad_gap:.2e})")
    if not rel <= TOL_ORACLE:
        failures.append(f"compiled vs interpreted {half} loss: relative {rel:.2e} > {TOL_ORACLE}")
    if not grad_gap > TOL_DISTINCT:
        failures.append(f"{half} and fp32 gradients differ by {grad_gap:.2e} only: is the {half} step {half}?")


def main(build, source, scratch):
    os.makedirs(scratch, exist_ok=True)
    gpt = os.path.join(source, "models/gpt")
    tokens = numpy_helper.to_array(onnx.load_tensor(os.path.join(gpt, "test_data_set_0/input_0.pb")))
    tokens = np.ascontiguousarray(tokens.astype(np.int64))
    failures = []

    # --- 1. The compiled 16-bit steps against the interpreter on the same IR.
    losses = {}
    grads = {}
    for precision in ("fp32",) + HALF:
        out = os.path.join(scratch, "none-" + precision)
        plan = compile_step(build, source, out, "--optimizer", "none", "--precision", precision)
        lib, rt = load(build, out)
        check(lib.ptrain_step_init(os.path.join(gpt, "gpt.onnx").encode()), rt, "init")
        outs = [np.zeros(r["shape"], np.float32) for r in plan["train_step_results"]]
        check(lib.ptrain_step_train_step(i64p(tokens), *[f32p(o) for o in outs]), rt, "train_step " + precision)
        losses[precision] = float(outs[0])
        grads[precision] = outs
    for half in HALF:
        check_oracle(build, scratch, gpt, plan, half, losses, grads, failures)

    # --- 2. Pipeline bytes per link.
    sent = {}
    for precision in ("fp32",) + HALF:
        out = os.path.join(scratch, "pp2-" + precision)
        compile_step(build, source, out, "--pp", "2", "--micro-batches", "2", "--precision", precision)
        sent[precision] = send_bytes(os.path.join(out, "step.mlir"))
    print("pipeline send bytes per step: " + ", ".join(f"{p} {sent[p]}" for p in ("fp32",) + HALF))
    for half, elem in (("bf16", "bf16"), ("fp16", "f16")):
        if not sent["fp32"].get("f32") or set(sent[half]) != {elem} or sent[half][elem] * 2 != sent["fp32"]["f32"]:
            failures.append(f"{half} pipeline bytes {sent[half]} are not half of fp32's {sent['fp32']}")

    # --- 3. Training, fp32 vs bf16.
    corpus = b"".join(open(p, "rb").read() for p in sorted(glob.glob(os.path.join(source, "docs", "*.md"))))
    b, s = tokens.shape
    need = (STEPS + 1) * b * s
    if len(corpus) < need:
        raise SystemExit(f"FAIL: the corpus has {len(corpus)} bytes, {need} needed")
    data = np.frombuffer(corpus[:need], np.uint8).astype(np.int64)
    curves = {}
    for precision in ("fp32",) + HALF:
        out = os.path.join(scratch, "adamw-" + precision)
        scaler = ["--initial-loss-scale", FP16_SCALE] if precision == "fp16" else []
        compile_step(build, source, out, "--optimizer", "adamw", "--lr", "1e-3", "--warmup-steps", "10",
                     "--total-steps", str(STEPS), "--clip-norm", CLIP, "--precision", precision, *scaler)
        lib, rt = load(build, out)
        check(lib.ptrain_step_init(None), rt, "init")
        curve = []
        loss = np.zeros((), np.float32)
        start = time.perf_counter()
        for i in range(STEPS):
            batch = np.ascontiguousarray(data[i * b * s:(i + 1) * b * s].reshape(b, s))
            check(lib.ptrain_step_train_step(i64p(batch), f32p(loss)), rt, f"{precision} step {i}")
            curve.append(float(loss))
        seconds = time.perf_counter() - start
        curves[precision] = curve
        print(f"{precision}: loss {curve[0]:.4f} -> mean of the last {WINDOW} {np.mean(curve[-WINDOW:]):.4f}; "
              f"{seconds / STEPS * 1e3:.1f} ms a step ({STEPS * b * s / seconds:.0f} tokens/s, wall time)")
    if os.environ.get("PTRAIN_PRECISION_CURVES"):  # for bench/precision/torch_reference.py --compare
        with open(os.environ["PTRAIN_PRECISION_CURVES"], "w") as f:
            json.dump(curves, f)
    f32 = np.array(curves["fp32"])
    windows = [(k, min(k + WINDOW, STEPS)) for k in range(WINDOW, STEPS, WINDOW)]
    if windows[-1] != (STEPS - WINDOW, STEPS):
        windows.append((STEPS - WINDOW, STEPS))
    for half in HALF:
        h = np.array(curves[half])
        gaps = [(lo, hi, float(np.mean(h[lo:hi]) / np.mean(f32[lo:hi]) - 1.0)) for lo, hi in windows]
        print(f"{half} / fp32 - 1 by window: " + ", ".join(f"{lo}..{hi - 1} {g:+.4f}" for lo, hi, g in gaps))
        lo, hi, val = gaps[-1]
        print(f"validation loss (steps {lo}..{hi - 1}, unseen batches): {half} {np.mean(h[lo:hi]):.4f}, fp32 "
              f"{np.mean(f32[lo:hi]):.4f}, relative {val:+.2e} (bound {BOUND[half]})")
        for lo, hi, g in gaps:
            if not abs(g) <= BOUND[half]:
                failures.append(f"{half} vs fp32 mean loss over steps {lo}..{hi - 1}: relative {g:+.2e}, bound "
                                f"{BOUND[half]}")
    f = float(np.mean(f32[-WINDOW:]))
    if not f < curves["fp32"][0] - 1.0:
        failures.append(f"fp32 did not train: {curves['fp32'][0]:.4f} -> {f:.4f}")

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
