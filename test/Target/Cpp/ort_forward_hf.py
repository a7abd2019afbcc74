"""Hugging Face GPT-2 and LLaMA-style exports in generated code (CTest `codegen-cpu-ort-forward-hf`).

1. Forward against onnxruntime (as ort_forward.py: ptrain-compile --optimizer none, ptrain_step_forward and the
   step's loss vs onnxruntime's CPUExecutionProvider logits on the same inputs and initializers):
   - test/Import/ONNX/Inputs/exports/gpt2-opset17.onnx and gpt2-opset13-folded.onnx: the PyTorch exports of a
     Hugging Face GPT2LMHeadModel (python/ptrain_fixtures/models/gpt2.py), whose bool causal-mask buffer is an i1 constant
     applied with ptrain.select;
   - gpt2-opset11.onnx, the same GPT-2 by the TorchScript exporter at opset 11 (Split's sizes and Unsqueeze's
     axes as attributes), and llama-opset11.onnx, its LLaMA-style export (python/ptrain_fixtures/models/llama.py:
     RMSNorm with rsqrt as Div(1, Sqrt), rotary tables, grouped-query attention, SwiGLU);
   - test/Import/ONNX/opset18+/Inputs/llama_tiny.onnx: RMSNormalization-23, RotaryEmbedding-23 on q and k,
     grouped-query Attention-23, SwiGLU (ptrain-compile --import-options "--signature auto" fixes its position
   ids to 0..S-1; onnxruntime gets those);
   - test/Import/ONNX/Inputs/exports/bert-opset17.onnx: the PyTorch export of a BERT masked LM, whose padding
     mask is cast from i64 to f32 (ptrain.cast; --signature auto: token types zeros, the mask ones);
   criterion max|a - b| / max|b| <= 1e-5 for the logits, |a - b| / |b| <= 1e-5 for the loss.
2. Training against the reference: ptrain-compile with AdamW runs 3 steps (ptrain_step_train_step) on fixed
   random batches, and the multi-rank executor (ptrain-interpret --multi-rank --steps 3, one rank) runs the
   same out/step.mlir on the same batches: every step's loss within 1e-5 relative, for the LLaMA fixture and
   for gpt2-opset17-training.onnx, the GPT-2 exported in training mode with 7 dropouts (the compiled masks are
   the interpreter's bit for bit, so the losses agree as closely as without dropout), for
   ../shared/data/onnx/gpt2_megatron.onnx with ort_forward.py's --bind/--signature options, and for the BERT
   export and onnxruntime's ../shared/data/onnx/bert_toy_optimized.onnx (each with its mask cast, as above).
Runs under .venv/bin/python (ort_venv.py). Usage: ort_forward_hf.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import json
import os
import subprocess
import sys

import ort_venv

ort_venv.require(sys.argv[2])

import numpy as np
import onnxruntime as ort

import ort_forward

TOLERANCE = 1e-5
STEPS = 3


MEGATRON_OPTIONS = ("--import-options", "--bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto")
BERT_TOY_OPTIONS = ("--import-options", "--bind batch=2,max_seq_len_in_batch=7 --signature auto")


def import_options(name):
    """The LLaMA fixture has a position-ids input, which --signature auto fixes to 0..S-1; the BERTs token types
    (zeros) and a padding mask (ones); gpt2_megatron and bert_toy_optimized also have symbolic dimensions
    (ort_forward.py)."""
    if name.startswith("gpt2_megatron"):
        return MEGATRON_OPTIONS
    if name.startswith("bert_toy"):
        return BERT_TOY_OPTIONS
    return ("--import-options", "--signature auto") if name.startswith(("llama_tiny", "bert")) else ()


def train_steps(build, model, out):
    """The compiled AdamW step's losses on STEPS random batches of the plan's shape, and the multi-rank
    executor's on the same batches."""
    subprocess.run([os.path.join(build, "bin", "ptrain-compile"), model, "--target", "cpu", "-o", out,
                    *import_options(os.path.basename(model))], check=True)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    tokens = np.random.default_rng(23).integers(0, plan["vocab"], (STEPS, plan["batch"], plan["seq"]), dtype=np.int64)
    lib = ctypes.CDLL(os.path.join(out, "libstep.so"))
    lib.ptrain_step_last_error.restype = ctypes.c_char_p
    if lib.ptrain_step_init(model.encode()) != 0:
        raise SystemExit(f"FAIL: ptrain_step_init: {lib.ptrain_step_last_error().decode()}")
    compiled = []
    for batch in tokens:
        batch = np.ascontiguousarray(batch, np.int64)
        loss = np.zeros((), np.float32)
        status = lib.ptrain_step_train_step(batch.ctypes.data_as(ctypes.c_void_p), loss.ctypes.data_as(ctypes.c_void_p))
        if status != 0:
            raise SystemExit(f"FAIL: ptrain_step_train_step: {lib.ptrain_step_last_error().decode()}")
        compiled.append(float(loss))
    path = os.path.join(out, "tokens.bin")
    np.ascontiguousarray(tokens, "<i8").tofile(path)
    proc = subprocess.run([os.path.join(build, "bin", "ptrain-interpret"), os.path.join(out, "step.mlir"), "--weights",
                           model, "--multi-rank", "--steps", str(len(tokens)), "--tokens-file", path],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: ptrain-interpret --multi-rank on {out}/step.mlir:\n{proc.stdout}")
    executor = [float(line.split()[3]) for line in proc.stdout.splitlines() if line.startswith("step ")]
    return compiled, executor


def main(build, source, scratch):
    ort_forward.TOLERANCE = TOLERANCE
    failures = []
    exports = os.path.join(source, "test", "Import", "ONNX", "Inputs", "exports")
    llama = os.path.join(source, "test", "Import", "ONNX", "opset18+", "Inputs", "llama_tiny.onnx")
    for name in ("gpt2-opset17", "gpt2-opset13-folded", "gpt2-opset11", "llama_tiny", "llama-opset11", "bert-opset17"):
        model = llama if name == "llama_tiny" else os.path.join(exports, name + ".onnx")
        plan, lib, check = ort_forward.compiled(build, model, os.path.join(scratch, name), *import_options(name))
        sess = ort_forward.session(model)
        b, s = plan["batch"], plan["seq"]
        for seed in (21, 22):
            tokens = np.random.default_rng(seed).integers(0, plan["vocab"], (b, s), dtype=np.int64)
            feeds = {"input_ids": tokens}
            if name == "llama_tiny":
                feeds["position_ids"] = np.tile(np.arange(s, dtype=np.int64), (b, 1))
            if name.startswith("bert"):  # the padding mask's ones become a ptrain.cast to f32 in the graph
                feeds["token_type_ids"] = np.zeros((b, s), np.int64)
                feeds["attention_mask"] = np.ones((b, s), np.int64)
            failures += ort_forward.compare(f"{name}, random seed {seed}", plan, lib, check, tokens, feeds, sess)

    megatron = os.path.normpath(os.path.join(source, "..", "shared", "data", "onnx", "gpt2_megatron.onnx"))
    bert_toy = os.path.join(os.path.dirname(megatron), "bert_toy_optimized.onnx")
    for name, model in (("llama_tiny", llama), ("gpt2-opset17-training", os.path.join(exports, "gpt2-opset17-training.onnx")),
                        ("gpt2_megatron", megatron), ("bert-opset17", os.path.join(exports, "bert-opset17.onnx")),
                        ("bert_toy_optimized", bert_toy)):
        if not os.path.isfile(model):
            failures.append(f"{model}: missing (the shared/ folder beside the checkout)")
            continue
        out = os.path.join(scratch, name + "-adamw")
        compiled, executor = train_steps(build, model, out)
        worst = max(abs(a - e) / abs(e) for a, e in zip(compiled, executor)) if len(executor) == STEPS else float("inf")
        print(f"{name}: {STEPS} AdamW steps, compiled {compiled}, executor {executor}, worst relative {worst:.2e}")
        if not worst <= TOLERANCE:
            failures.append(f"{name}: training losses differ from the executor's by {worst:.2e} > {TOLERANCE}")
        if len(set(compiled)) != STEPS:
            failures.append(f"{name}: the {STEPS} steps' losses are not all different: {compiled}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"PASS: compiled forward, loss and training steps match onnxruntime {ort.__version__} and the executor "
          f"within {TOLERANCE} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
