#!/usr/bin/env python3
"""Export the importer's real-export fixtures: GPT-2, BERT and LLaMA at opsets 11, 13, 14, 17, with and without
constant folding, with PyTorch reference inputs and outputs.

Usage (from the repository root, with Debian's python3-torch 1.13 and python3-onnx):

    PYTHONPATH=python /usr/bin/python3 -m ptrain_fixtures.export_import_fixtures [--out test/Import/ONNX/Inputs/exports]

Writes into OUT, for MODEL in gpt2 (python/ptrain_fixtures/models/gpt2.py, Hugging Face GPT2LMHeadModel
architecture), bert (python/ptrain_fixtures/models/bert.py, BertForMaskedLM architecture) and llama
(python/ptrain_fixtures/models/llama.py, LlamaForCausalLM architecture: RMSNorm, rotary embedding, grouped-query
attention, SwiGLU, no biases):
  MODEL-opsetN.onnx          torch.onnx.export(..., opset_version=N, do_constant_folding=False)
  MODEL-opsetN-folded.onnx   the same with do_constant_folding=True
  MODEL/input_K.pb           TensorProto inputs (int64 [2, 8]) in the graph's input order
  MODEL/output_0.pb          TensorProto f32 [2, 8, V]: PyTorch's output (eval mode; V 64, llama 128)
for N in 11, 13, 14, 17, and gpt2-opset17-training.onnx, exported with training=TrainingMode.TRAINING (its
dropouts become Dropout nodes with training_mode true; no reference output, the masks are random). Each file is well under 1 MB (weights inline). Rerunning with the same torch and
onnx versions gives byte-identical ONNX files and inputs (checked by --check, which exports to a temporary
folder and compares); the reference outputs agree within REFERENCE_ATOL across CPUs (their last bits follow
PyTorch's kernels: 9e-8 on an AVX-512 EPYC against the committed AVX2 ones).
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from ptrain_fixtures.models.bert import BertConfig, BertForMaskedLM
from ptrain_fixtures.models.gpt2 import GPT2Config, GPT2LMHeadModel
from ptrain_fixtures.models.llama import LlamaConfig, LlamaForCausalLM

OPSETS = (11, 13, 14, 17)
BATCH, SEQ = 2, 8


def zen_ids(n: int, vocab: int) -> np.ndarray:
    """n token ids from real text that every Python ships: the Zen of Python's bytes modulo vocab."""
    import codecs

    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401
    text = codecs.decode(this.s, "rot13").encode("ascii")[:n]
    return np.frombuffer(text, dtype=np.uint8).astype(np.int64) % vocab


def models():
    """(name, module, input names, inputs, output name) of each fixture model."""
    gcfg = GPT2Config()
    gpt2 = GPT2LMHeadModel(gcfg, seed=0).eval()
    ids = zen_ids(BATCH * SEQ, gcfg.vocab_size).reshape(BATCH, SEQ)
    yield "gpt2", gpt2, ["input_ids"], [ids], "logits"

    bcfg = BertConfig()
    bert = BertForMaskedLM(bcfg, seed=1).eval()
    ids = zen_ids(BATCH * SEQ, bcfg.vocab_size).reshape(BATCH, SEQ)[::-1].copy()
    token_types = np.zeros((BATCH, SEQ), np.int64)
    token_types[:, SEQ // 2 :] = 1  # sentence A | sentence B
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, SEQ - 3 :] = 0  # the second row is padded at the end
    names = ["input_ids", "token_type_ids", "attention_mask"]
    yield "bert", bert, names, [ids, token_types, mask], "prediction_scores"

    lcfg = LlamaConfig()
    llama = LlamaForCausalLM(lcfg, seed=2).eval()
    ids = zen_ids(BATCH * SEQ + 1, lcfg.vocab_size)[1:].reshape(BATCH, SEQ)
    yield "llama", llama, ["input_ids"], [ids], "logits"


def save_tensor(path: str, arr: np.ndarray, name: str) -> None:
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def export(out: str) -> list[str]:
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    written = []
    for name, model, input_names, inputs, output_name in models():
        args = tuple(torch.from_numpy(a) for a in inputs)
        with torch.no_grad():
            ref = model(*args).numpy().astype(np.float32)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for k, (n, a) in enumerate(zip(input_names, inputs)):
            written.append(os.path.join(out, name, f"input_{k}.pb"))
            save_tensor(written[-1], a, n)
        written.append(os.path.join(out, name, "output_0.pb"))
        save_tensor(written[-1], ref, output_name)
        variants = [(opset, folded, False) for opset in OPSETS for folded in (False, True)]
        if name == "gpt2":
            variants.append((17, False, True))  # training mode: Dropout nodes with training_mode true
        for opset, folded, training in variants:
            buf = io.BytesIO()
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model, args, buf, opset_version=opset, do_constant_folding=folded,
                    input_names=input_names, output_names=[output_name], export_params=True,
                    training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
                )
            model.eval()  # a training-mode export leaves the module in training mode
            m = onnx.load_model_from_string(buf.getvalue())
            onnx.checker.check_model(m)
            suffix = "-training" if training else "-folded" if folded else ""
            path = os.path.join(out, f"{name}-opset{opset}{suffix}.onnx")
            onnx.save_model(m, path)
            written.append(path)
            ops = sorted({n.op_type for n in m.graph.node})
            print(f"{path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, "
                  f"{len(m.graph.initializer)} initializers; ops {' '.join(ops)}")
    return written


# The reference outputs are PyTorch's forward on the CPU that ran it. Its last bits depend on the kernels
# PyTorch picks there (oneDNN's AVX2 or AVX-512 GEMMs group their sums otherwise), so --check compares them
# within REFERENCE_ATOL of the largest |output|: the tightest tolerance the importer tests use against these
# files (ptrain-interpret --atol 1e-5), far below what a changed model or export would move (the logits' own
# size, 1e-1 and more). The ONNX files, which hold no computed values, stay byte for byte.
REFERENCE_ATOL = 1e-5


def same_reference(path: str, committed: str) -> bool:
    def load(p):
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        return t.name, numpy_helper.to_array(t).astype(np.float64)

    (name_a, a), (name_b, b) = load(path), load(committed)
    if name_a != name_b or a.shape != b.shape:
        return False
    worst = float(np.abs(a - b).max()) if a.size else 0.0
    scale = max(1.0, float(np.abs(b).max()) if b.size else 0.0)
    print(f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}: max |this CPU's forward - the "
          f"committed| = {worst:.3e} (limit {REFERENCE_ATOL * scale:.1e})")
    return worst <= REFERENCE_ATOL * scale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="test/Import/ONNX/Inputs/exports")
    ap.add_argument("--check", action="store_true",
                    help="export to a temporary folder and compare with --out: the ONNX files and inputs byte for byte, "
                         "the reference outputs within REFERENCE_ATOL")
    args = ap.parse_args(argv)
    if not args.check:
        export(args.out)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        def same(p):
            committed = os.path.join(args.out, os.path.relpath(p, tmp))
            if not os.path.exists(committed):
                return False
            if os.path.basename(p).startswith("output_"):
                return same_reference(p, committed)
            return filecmp.cmp(p, committed, shallow=False)

        differ = [p for p in export(tmp) if not same(p)]
    for p in differ:
        print(f"missing or different from the checked-in fixture: {os.path.relpath(p, tmp)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
