"""The compiled forward against ONNX Runtime (CTest `codegen-cpu-ort-forward`).

For each real export, ptrain-compile --optimizer none builds libstep.so; its forward (ptrain_step_forward:
tokens -> logits) and its training step's loss (ptrain_step_train_step, the mean next-token cross-entropy)
are compared with onnxruntime's CPUExecutionProvider on the same inputs and the same weights (the model's
initializers, which ptrain_step_init loads by key), the loss recomputed from onnxruntime's logits in float64:

- models/gpt/gpt.onnx (bundled GPT): its test_data_set_0 input and a second random batch;
- ../shared/data/onnx/gpt2_megatron.onnx (a real one-layer GPT-2 export of the ONNX Runtime test data, tanh
  GELU, decomposed LayerNorm, Shape chains), imported with --bind batch_size=2,seq_len=8,past_seq_len=0
  --signature auto: onnxruntime gets the inputs the signature fixes (position ids 0..S-1, the causal
  attention mask, an empty past).

Criterion: max|a - b| / max|b| <= 1e-5 for the logits and |a - b| / |b| <= 1e-5 for the loss.
Runs under .venv/bin/python (ort_venv.py). Usage: ort_forward.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import json
import os
import subprocess
import sys

import ort_venv

ort_venv.require(sys.argv[2])

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

TOLERANCE = 1e-5


def compiled(build, model, out, *extra):
    subprocess.run([os.path.join(build, "bin", "ptrain-compile"), model, "--optimizer", "none", "--target", "cpu",
                    "-o", out, *extra], check=True)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    lib = ctypes.CDLL(os.path.join(out, "libstep.so"))
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/libptrain_runtime.so"))
    rt.ptrain_last_error.restype = ctypes.c_char_p

    def check(status, what):
        if status != 0:
            raise SystemExit(f"FAIL: {what}: status {status}: {rt.ptrain_last_error().decode()}")

    check(lib.ptrain_step_init(model.encode()), "ptrain_step_init")
    return plan, lib, check


def next_token_loss(logits, tokens):
    """Mean cross-entropy of logits[:, :-1] against tokens[:, 1:] in float64 (docs/TrainingStep.md)."""
    z = logits[:, :-1].astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(-np.take_along_axis(logp, tokens[:, 1:, None], -1).mean())


def compare(name, plan, lib, check, tokens, feeds, session):
    tokens = np.ascontiguousarray(tokens, np.int64)
    b, s, v = plan["batch"], plan["seq"], plan["vocab"]
    assert tokens.shape == (b, s), (tokens.shape, plan)
    logits = np.zeros((b, s, v), np.float32)
    tok_p = tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    check(lib.ptrain_step_forward(tok_p, logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float))), "forward")
    outs = [np.zeros(r["shape"], np.float32) for r in plan["train_step_results"]]
    check(lib.ptrain_step_train_step(tok_p, *[o.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) for o in outs]),
          "train_step")
    want = session.run(None, feeds)[0]
    assert want.shape == logits.shape, (want.shape, logits.shape)
    err = float(np.max(np.abs(logits - want)) / np.max(np.abs(want)))
    ref_loss = next_token_loss(want, tokens)
    loss_err = abs(float(outs[0]) - ref_loss) / abs(ref_loss)
    print(f"{name}: logits {list(logits.shape)} max|ptrain - onnxruntime| / max|onnxruntime| = {err:.2e}; "
          f"loss {float(outs[0]):.8f} vs {ref_loss:.8f} (relative {loss_err:.2e})")
    failures = []
    if not err <= TOLERANCE:
        failures.append(f"{name}: logits relative error {err:.2e} > {TOLERANCE}")
    if not loss_err <= TOLERANCE:
        failures.append(f"{name}: loss relative error {loss_err:.2e} > {TOLERANCE}")
    return failures


def session(model):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def main(build, source, scratch):
    failures = []
    gpt = os.path.join(source, "models/gpt/gpt.onnx")
    plan, lib, check = compiled(build, gpt, os.path.join(scratch, "gpt"))
    sess = session(gpt)
    name = sess.get_inputs()[0].name
    first = numpy_helper.to_array(onnx.load_tensor(os.path.join(source, "models/gpt/test_data_set_0/input_0.pb")))
    rand = np.random.default_rng(10).integers(0, plan["vocab"], (plan["batch"], plan["seq"]), dtype=np.int64)
    for label, tokens in (("bundled GPT, test_data_set_0", first.astype(np.int64)), ("bundled GPT, random", rand)):
        failures += compare(label, plan, lib, check, tokens, {name: tokens.astype(np.int64)}, sess)

    megatron = os.path.normpath(os.path.join(source, "..", "shared", "data", "onnx", "gpt2_megatron.onnx"))
    if not os.path.isfile(megatron):
        failures.append(f"{megatron}: missing (the shared/ folder beside the checkout)")
    else:
        plan, lib, check = compiled(build, megatron, os.path.join(scratch, "gpt2_megatron"), "--import-options",
                                    "--bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto")
        sess = session(megatron)
        b, s = plan["batch"], plan["seq"]
        inputs = {i.name: i for i in sess.get_inputs()}
        mask_shape = [b] + [d if isinstance(d, int) else None for d in inputs["attention_mask"].shape[1:]]
        full = mask_shape[-1]
        for seed in (11, 12):
            tokens = np.random.default_rng(seed).integers(0, plan["vocab"], (b, s), dtype=np.int64)
            feeds = {"input_ids": tokens, "position_ids": np.tile(np.arange(s, dtype=np.int64), (b, 1)),
                     "attention_mask": np.tile(np.tril(np.ones((full, full), np.float32)), (b, 1, 1, 1)),
                     "past_0": np.zeros((2, b, 2, 0, 4), np.float32)}
            failures += compare(f"gpt2_megatron, random seed {seed}", plan, lib, check, tokens, feeds, sess)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"PASS: the compiled forward and loss match onnxruntime {ort.__version__} within {TOLERANCE} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
