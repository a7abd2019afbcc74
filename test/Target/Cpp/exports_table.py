"""Writes docs/Exports.md: which real exports import, compile and train, at which tp / pp (issue 21).

One row per export present in the source tree (the dynamo exporter's Hugging Face models in
test/Import/ONNX/opset18+/hf, the TorchScript exporter's in test/Import/ONNX/Inputs/exports, the bundled GPT in
models/gpt) plus any given with --extra. For each:
- import: `ptrain-translate --import-onnx MODEL --signature auto` succeeds; the initializers it holds constant
  (`remark: initializer 'X' is held constant`) are counted;
- pp=2: ptrain-compile --pp 2 --micro-batches 2 (the stage split and 1F1B);
- tp=2: ptrain-compile --tp 2 (through --ptrain-raise and --ptrain-shard-tp);
- trains: ptrain-run of the pp=2 step, 20 AdamW steps (lr 3e-3, no warm-up) on 2 ranks over byte-level text
  (bytes >= 128 dropped for a vocabulary under 256, and then taken modulo a vocabulary under 128): the mean loss
  of steps 16-20 against steps 1-5.
A failing phase shows its error. Gradients against PyTorch autograd are not a column yet.

Usage: exports_table.py <build-dir> <source-dir> <scratch-dir> [--write-doc docs/Exports.md] [--extra M.onnx ...]
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
from hf_exports_train import ascii_corpus

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
    rows.append(("ptrain export (torch 1.13, opset 17)", os.path.join(source, "models/gpt/gpt.onnx")))
    rows += [("given", p) for p in extra]
    return rows


def corpus_for(vocab, full, ascii, work):
    """The byte-level corpus for a vocabulary of `vocab`: all bytes, bytes < 128, or those modulo `vocab`."""
    if vocab >= 256:
        return full
    if vocab >= 128:
        return ascii
    out = os.path.join(work, f"mod{vocab}")
    if not os.path.exists(os.path.join(out, "data.json")):
        os.makedirs(out, exist_ok=True)
        for name in ("train.bin", "val.bin"):
            with open(os.path.join(ascii, name), "rb") as f:
                data = bytes(b % vocab for b in f.read())
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        with open(os.path.join(out, "data.json"), "w") as f:
            json.dump({"format": "bytes"}, f)
    return out


def row(bin_dir, work, exporter, model, full, ascii):
    name = os.path.splitext(os.path.basename(model))[0]
    out = {"exporter": exporter, "model": os.path.relpath(model, os.environ.get("PTRAIN_TABLE_ROOT", "/"))}
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", model, "--signature", "auto",
                       "-o", os.devnull])
    out["import"] = "ok" if rc == 0 else first_error(log)
    out["constants"] = len(set(re.findall(r"remark: initializer '([^']+)' is held constant", log))) if rc == 0 else ""
    if rc != 0:
        return out
    common = ["--lr", "3e-3", "--warmup-steps", "0", "--import-options", "--signature auto"]
    pp_dir = os.path.join(work, name + "-pp2")
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-compile"), model, "--pp", "2", "--micro-batches", "2", *common,
                       "-o", pp_dir])
    out["pp=2"] = "ok" if rc == 0 else first_error(log)
    rc_tp, log = e2e.run([os.path.join(bin_dir, "ptrain-compile"), model, "--tp", "2", *common,
                          "-o", os.path.join(work, name + "-tp2")])
    out["tp=2"] = "ok" if rc_tp == 0 else first_error(log)
    if rc != 0:
        return out
    with open(os.path.join(pp_dir, "plan.json")) as f:
        vocab = json.load(f)["vocab"]
    losses = os.path.join(work, name + "-losses.json")
    rc, log = e2e.run([os.path.join(bin_dir, "ptrain-run"), pp_dir, "--data", corpus_for(vocab, full, ascii, work),
                       "--steps", str(STEPS), "--val-every", str(STEPS), "--no-plots", "--log", losses], timeout=600)
    if rc != 0:
        out["trains"] = first_error(log)
        return out
    with open(losses) as f:
        train = json.load(f)["train_loss"]
    first, last = sum(train[:5]) / 5, sum(train[-5:]) / 5
    out["trains"] = f"{'yes' if last < first else 'NO'}: {first:.3f} -> {last:.3f}"
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("source")
    p.add_argument("work")
    p.add_argument("--write-doc")
    p.add_argument("--extra", nargs="*", default=[])
    args = p.parse_args()
    build, source, work, bin_dir, _ = e2e.setup([sys.argv[0], args.build, args.source, args.work])
    os.environ["PTRAIN_TABLE_ROOT"] = source
    full = e2e.corpus(source, work, max_bytes=200000)
    ascii = ascii_corpus(full, os.path.join(work, "ascii"))
    rows = []
    for exporter, model in exports(source, args.extra):
        r = row(bin_dir, work, exporter, model, full, ascii)
        print(json.dumps(r), flush=True)
        rows.append(r)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    cols = ["exporter", "model", "import", "constants", "pp=2", "tp=2", "trains"]
    lines = ["# Real exports: import, compile, train", "",
             "Generated by `python3 test/Target/Cpp/exports_table.py build . /tmp/exports-table --write-doc "
             "docs/Exports.md`; do not edit. One row per export in the source tree (what each column checks: the "
             "script's docstring). `constants`: initializers the importer holds constant (no gradient, no optimizer "
             "state). `trains`: 20 AdamW steps (lr 3e-3) of the pp=2 step on 2 ranks over byte-level text, the "
             f"mean loss of steps 1-5 -> 16-20. Machine: {cpu} ({platform.machine()}), "
             "OPENBLAS_NUM_THREADS=1. Not yet a column: one step's loss and gradients against PyTorch autograd.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    if args.write_doc:
        with open(args.write_doc, "w") as f:
            f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
