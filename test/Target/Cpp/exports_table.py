"""Writes docs/Exports.md: which real exports import, compile and train, at which tp / pp (issue 21).

One row per export present in the source tree (the dynamo exporter's Hugging Face models in
test/Import/ONNX/opset18+/hf, the TorchScript exporter's in test/Import/ONNX/Inputs/exports, tf2onnx's Keras GPT in
test/Import/ONNX/Inputs/tf2onnx, the bundled GPT in models/gpt) plus any given with --extra. For each:
- import: `ptrain-translate --import-onnx MODEL --signature auto` succeeds; the initializers it holds constant
  (`remark: initializer 'X' is held constant`) are counted;
- forward vs ORT: ptrain-interpret of the import (without --signature) against onnxruntime
  (test/Target/Cpp/ort_reference.py under .venv/bin/python) on the same generated inputs (token ids in [0, 64),
  token types zeros, attention mask ones): max|ptrain - onnxruntime| / max|onnxruntime| of the first output, at
  most FORWARD_RTOL; "n/a" for a training-mode export (random dropout masks) or without the .venv;
- pp=2: ptrain-compile --pp 2 --micro-batches 2 (the stage split and 1F1B);
- tp=2: ptrain-compile --tp 2 (through --ptrain-raise and --ptrain-shard-tp);
- trains: ptrain-run of the pp=2 step, 20 AdamW steps (lr 3e-3, no warm-up) on 2 ranks over byte-level text
  (bytes >= 128 dropped for a vocabulary under 256, and then taken modulo a vocabulary under 128): the mean loss
  of steps 16-20 against steps 1-5; trains at tp=2: the same of the tp=2 step.
- autograd: one training step's loss and gradients (ptrain-interpret of --ptrain-build-training-step
  optimizer=none on the export's input tokens) against PyTorch autograd on the same weights
  (python/ptrain_fixtures/exports_reference_grads.py, float64, with Debian's torch 1.13 in /usr/bin/python3):
  the loss within 1e-4 relative, every gradient within 1e-4 of its largest entry (ptrain-interpret --rtol);
  "n/a" where the row's PyTorch model is not in the tree. The dynamo rows' Hugging Face models are rebuilt in
  plain PyTorch (python/ptrain_fixtures/models: the same architectures, which torch 1.13 runs without
  transformers) with the weights of the unoptimized export's initializers; the optimized exports folded some
  parameters away (zero biases, the position lookup), which then have nothing to compare. tf2onnx's Keras GPT
  likewise (python/ptrain_fixtures/models/keras_gpt.py, with the export's own weights).
A failing phase shows its error.

With --rows REGEX only the exports whose path (relative to the source tree) matches are run; the other rows are
kept as they stand in the --write-doc file (which must exist), so one changed row is regenerated without the
others' hour of training.

Usage: exports_table.py <build-dir> <source-dir> <scratch-dir> [--write-doc docs/Exports.md] [--extra M.onnx ...]
                        [--rows REGEX]
"""

import argparse
import glob
import json
import os
import platform
import re
import subprocess
import sys

import e2e
from hf_exports_train import ascii_corpus, corpus_for

STEPS = 20


def first_error(log):
    """The last line of `log` with `error:` (the tool's own, after ptrain-compile's summary; path-free, shortened),
    or its last line."""
    for line in reversed(log.splitlines()):
        if "error:" in line:
            return re.sub(r"^\S*/", "", line.strip())[:200].replace("|", "\\|")
    lines = log.strip().splitlines()
    return (lines[-1][:160] if lines else "failed").replace("|", "\\|")


def exports(source, extra):
    """(exporter, path) of every export the table covers."""
    rows = [("dynamo (torch 2.x)", p) for p in sorted(glob.glob(os.path.join(source, "test/Import/ONNX/opset18+/hf/*.onnx")))]
    rows += [("TorchScript (torch 1.13)", p)
             for p in sorted(glob.glob(os.path.join(source, "test/Import/ONNX/Inputs/exports/*.onnx")))]
    rows += [("tf2onnx 1.17 (TensorFlow 2.21, Keras 3.15)", p)
             for p in sorted(glob.glob(os.path.join(source, "test/Import/ONNX/Inputs/tf2onnx/*.onnx")))]
    rows.append(("ptrain export (torch 1.13, opset 17)", os.path.join(source, "models/gpt/gpt.onnx")))
    rows += [("given", p) for p in extra]
    return rows


def isa():
    """The machine's vector ISA as OpenBLAS and PyTorch see it (docs/ENV.md: the GEMMs' last bits differ)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        extra = [n for f, n in (("avx512_bf16", "BF16"), ("avx512_fp16", "FP16")) if f in flags]
        return "AVX-512" + (" with " + " and ".join(extra) if extra else "")
    if "avx2" in flags:
        return "AVX2"
    return "no AVX2"


RTOL = 1e-4
FORWARD_RTOL = 1e-5


def forward_vs_ort(bin_dir, work, name, model):
    """The `forward vs ORT` column (see the docstring)."""
    ref = os.path.join(work, name + "-ort")
    root = os.environ["PTRAIN_TABLE_ROOT"]
    venv = os.path.join(root, ".venv", "bin", "python")
    if not os.path.isfile(venv):
        return "n/a (no .venv: scripts/setup-python.sh)"
    p = subprocess.run([venv, os.path.join(root, "test", "Target", "Cpp", "ort_reference.py"), model, ref],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode == 5:
        return "n/a (training-mode dropout: random masks)"
    scale = re.search(r"max\|output\| = (\S+)", p.stdout)
    if p.returncode != 0 or not scale:
        return "onnxruntime failed: " + first_error(p.stdout)
    mlir = os.path.join(ref, "forward.mlir")
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", model, "-o", mlir])
    if rc != 0:
        return first_error(log)
    inputs = sorted(glob.glob(os.path.join(ref, "input_*.pb")), key=lambda f: int(re.findall(r"\d+", f)[-1]))
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-interpret"), mlir, *[a for f in inputs for a in ("--input", f)],
                       "--expect", os.path.join(ref, "output_0.pb"), "--atol", "0", "--expect-rtol",
                       str(FORWARD_RTOL)])
    diff = re.search(r"max\|x - expected\| = (\S+)", log)
    if not diff:
        return first_error(log)
    rel = float(diff.group(1)) / max(float(scale.group(1)), 1e-30)
    return f"{'yes' if rc == 0 and rel <= FORWARD_RTOL else 'NO'}: {rel:.0e}"


def autograd(bin_dir, work, name, model):
    """The autograd column: ptrain's one-step loss and gradients against PyTorch's (see the docstring)."""
    ref = os.path.join(work, name + "-autograd")
    env = dict(os.environ, PYTHONPATH=os.path.join(os.environ["PTRAIN_TABLE_ROOT"], "python"))
    p = subprocess.run(["/usr/bin/python3", "-m", "ptrain_fixtures.exports_reference_grads", model, ref], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode == 3 or "No module named 'torch'" in p.stdout:
        return "n/a"
    if p.returncode == 5:
        return "n/a (training-mode dropout: random masks)"
    if p.returncode != 0:
        return "reference failed: " + first_error(p.stdout)
    mlir, step = os.path.join(ref, "model.mlir"), os.path.join(ref, "step.mlir")
    for cmd in ([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", model, "--signature", "auto", "-o", mlir],
                [os.path.join(bin_dir, "ptrain-opt"), mlir, "--ptrain-build-training-step=optimizer=none", "-o", step]):
        rc, log = e2e.run(cmd)
        if rc != 0:
            return first_error(log)
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-interpret"), step, "--entry", "train_step", "--weights", model,
                       "--input", os.path.join(ref, "tokens.pb"), "--expect-grads",
                       os.path.join(ref, "reference_grads.onnx"), "--rtol", str(RTOL)])
    loss = re.search(r"result 0: tensor<f32>.* value = (\S+)", log)
    if not loss:
        return first_error(log)
    with open(os.path.join(ref, "reference_loss.txt")) as f:
        expected = float(f.read())
    rel = abs(float(loss.group(1)) - expected) / abs(expected)
    grads = re.findall(r"grad of '[^']*': max\|x - expected\| / max\|expected\| = (\S+) \(rtol [^)]*\): (\w+)", log)
    worst = max((float(g) for g, _ in grads), default=0.0)
    bad = sum(1 for _, verdict in grads if verdict != "ok")
    ok = rc == 0 and rel <= RTOL and not bad and grads
    return (f"{'yes' if ok else 'NO'}: loss {expected:.4f} (rel {rel:.0e}), {len(grads)} gradients, worst "
            f"{worst:.0e}" + (f", {bad} over" if bad else ""))


def row(bin_dir, work, exporter, model, full, ascii):
    name = os.path.splitext(os.path.basename(model))[0]
    out = {"exporter": exporter, "model": os.path.relpath(model, os.environ.get("PTRAIN_TABLE_ROOT", "/"))}
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", model, "--signature", "auto",
                       "-o", os.devnull])
    out["import"] = "ok" if rc == 0 else first_error(log)
    out["constants"] = len(set(re.findall(r"remark: initializer '([^']+)' is held constant", log))) if rc == 0 else ""
    if rc != 0:
        return out
    out["forward vs ORT"] = forward_vs_ort(bin_dir, work, name, model)
    common = ["--lr", "3e-3", "--warmup-steps", "0", "--import-options", "--signature auto"]
    pp_dir = os.path.join(work, name + "-pp2")
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-compile"), model, "--pp", "2", "--micro-batches", "2", *common,
                       "-o", pp_dir])
    out["pp=2"] = "ok" if rc == 0 else first_error(log)
    tp_dir = os.path.join(work, name + "-tp2")
    rc_tp, log = e2e.run([os.path.join(bin_dir, "ptrain-compile"), model, "--tp", "2", *common, "-o", tp_dir])
    out["tp=2"] = "ok" if rc_tp == 0 else first_error(log)
    out["autograd"] = autograd(bin_dir, work, name, model)
    if rc == 0:
        out["trains"] = train(bin_dir, work, name + "-pp2", pp_dir, full, ascii)
    if rc_tp == 0:
        out["trains at tp=2"] = train(bin_dir, work, name + "-tp2", tp_dir, full, ascii)
    return out


def train(bin_dir, work, name, plan_dir, full, ascii):
    """20 steps of the compiled step in `plan_dir`: the mean loss of steps 1-5 and 16-20."""
    with open(os.path.join(plan_dir, "plan.json")) as f:
        vocab = json.load(f)["vocab"]
    losses = os.path.join(work, name + "-losses.json")
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-run"), plan_dir, "--data", corpus_for(vocab, full, ascii, work),
                       "--steps", str(STEPS), "--val-every", str(STEPS), "--no-plots", "--log", losses], timeout=600)
    if rc != 0:
        return first_error(log)
    with open(losses) as f:
        loss = json.load(f)["train_loss"]
    first, last = sum(loss[:5]) / 5, sum(loss[-5:]) / 5
    return f"{'yes' if last < first else 'NO'}: {first:.3f} -> {last:.3f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("source")
    p.add_argument("work")
    p.add_argument("--write-doc")
    p.add_argument("--extra", nargs="*", default=[])
    p.add_argument("--rows", help="rerun only the exports whose path matches; keep the others' rows of --write-doc")
    args = p.parse_args()
    kept = {}
    if args.rows:
        if not args.write_doc:
            sys.exit("exports_table.py: --rows needs --write-doc (the rows it keeps come from that file)")
        with open(args.write_doc) as f:
            for line in f:
                cells = line.split(" | ")
                if line.startswith("| ") and len(cells) > 2:
                    kept[cells[1]] = line.rstrip("\n")
    build, source, work, bin_dir, _ = e2e.setup([sys.argv[0], args.build, args.source, args.work])
    os.environ["PTRAIN_TABLE_ROOT"] = source
    full = e2e.corpus(source, work, max_bytes=200000)
    ascii = ascii_corpus(full, os.path.join(work, "ascii"))
    rows = []
    for exporter, model in exports(source, args.extra):
        rel = os.path.relpath(model, source)
        if args.rows and not re.search(args.rows, rel):
            if rel not in kept:
                sys.exit(f"exports_table.py: {rel} has no row in {args.write_doc} to keep; rerun it (widen --rows)")
            rows.append(kept[rel])
            continue
        r = row(bin_dir, work, exporter, model, full, ascii)
        print(json.dumps(r), flush=True)
        rows.append(r)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    cols = ["exporter", "model", "import", "constants", "forward vs ORT", "autograd", "pp=2", "tp=2", "trains", "trains at tp=2"]
    lines = ["# Real exports: import, compile, train", "",
             "Generated by `python3 test/Target/Cpp/exports_table.py build . /tmp/exports-table --write-doc "
             "docs/Exports.md`; do not edit. One row per export in the source tree (what each column checks: the "
             "script's docstring). `constants`: initializers the importer holds constant (no gradient, no optimizer "
             "state). `forward vs ORT`: the forward against onnxruntime on the same inputs, max|ptrain - onnxruntime| / "
             "max|onnxruntime| (at most 1e-5). `autograd`: one step's loss and gradients against PyTorch autograd on the same weights (torch "
             "1.13, float64; the loss within 1e-4 relative, each gradient within 1e-4 of its largest entry; worst: "
             "the largest gradient error), n/a where the row's PyTorch model is not in the tree; the dynamo rows' "
             "Hugging Face models as the same architectures in plain PyTorch (python/ptrain_fixtures/models) with the "
             "export's weights, computed with torch 1.13 as the others, and tf2onnx's Keras GPT likewise "
             "(python/ptrain_fixtures/models/keras_gpt.py). `trains`: 20 AdamW "
             "steps (lr 3e-3) of the pp=2 step on 2 ranks over byte-level text, the mean loss of steps 1-5 -> 16-20; "
             "`trains at tp=2`: the same of the tp=2 step (2 ranks). "
             f"Machine: {cpu} ({platform.machine()}, {isa()}), OPENBLAS_NUM_THREADS=1.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(r if isinstance(r, str) else "| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    if args.write_doc:
        with open(args.write_doc, "w") as f:
            f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
