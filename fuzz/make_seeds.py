#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target (docs/Fuzzing.md) from the repository's test inputs.

Usage: python3 fuzz/make_seeds.py OUT_DIR BIN_DIR
  OUT_DIR/<target>/ gets the seeds of each target (existing files are kept, so a grown corpus stays):
  onnx-wire, import-onnx  every .onnx file under test/, models/ and examples/ (up to 1 MiB), the .onnxtext
                          importer tests converted to .onnx, and (import-onnx) the ONNX backend node tests'
                          models of libonnx-testdata (/usr/share/libonnx-testdata, installed by setup.sh);
  checkpoint              checkpoints of fuzz/CheckpointTable.h written by ptrain_checkpoint_save
                          (BIN_DIR/ptrain-fuzz-checkpoint-seeds);
  plan-elf                a small shared library with a .ptrain_plan section added by plan_abi.embed (gcc and
                          objcopy, as ptrain-compile does);
  and the committed seeds of fuzz/seeds/<target>/ (rendezvous messages, manifests, plan.json variants).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_BYTES = 1 << 20


def put(out, target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


def onnx_seeds(out):
    models = []
    for top in ("test", "models", "examples"):
        models += glob.glob(os.path.join(ROOT, top, "**", "*.onnx"), recursive=True)
    for path in sorted(models):
        if os.path.getsize(path) <= MAX_BYTES:
            with open(path, "rb") as f:
                data = f.read()
            name = os.path.relpath(path, ROOT).replace("/", "_")
            put(out, "onnx-wire", name, data)
            put(out, "import-onnx", name, data)
    try:
        import onnx.parser
    except ImportError:
        print("make_seeds: no onnx module; the .onnxtext tests are left out", file=sys.stderr)
    else:
        for path in sorted(glob.glob(os.path.join(ROOT, "test", "**", "*.onnxtext"), recursive=True)):
            with open(path) as f:
                chunks = f.read().split("// -----")
            for i, chunk in enumerate(chunks):
                lines = [l for l in chunk.splitlines() if not l.lstrip().startswith("//")]
                try:
                    data = onnx.parser.parse_model("\n".join(lines)).SerializeToString()
                except Exception:  # a chunk the parser of this onnx version does not read
                    continue
                name = f"{os.path.basename(path)}.{i}.onnx"
                put(out, "onnx-wire", name, data)
                put(out, "import-onnx", name, data)
    for path in sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx")):
        with open(path, "rb") as f:
            put(out, "import-onnx", "node_" + os.path.basename(os.path.dirname(path)) + ".onnx", f.read())


def checkpoint_seeds(out, bin_dir):
    os.makedirs(os.path.join(out, "checkpoint"), exist_ok=True)
    subprocess.run([os.path.join(bin_dir, "ptrain-fuzz-checkpoint-seeds"), os.path.join(out, "checkpoint")],
                   check=True)


def plan_elf_seeds(out):
    import importlib.util

    from ptrain import plan_abi  # python/ on PYTHONPATH (scripts/fuzz.sh)
    # fuzz/python/fuzz_checks.py's fixtures, the script loaded from its file (it is not on the import path).
    spec = importlib.util.spec_from_file_location("fuzz_checks", os.path.join(ROOT, "fuzz", "python", "fuzz_checks.py"))
    fuzz_checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz_checks)
    plan, _ = fuzz_checks.load_fixtures()
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "step.c"), os.path.join(tmp, "libstep.so")
        with open(src, "w") as f:
            f.write("int ptrain_step_train_step(void) { return 0; }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-s", src, "-o", lib], check=True)
        with open(lib, "rb") as f:
            put(out, "plan-elf", "no-plan.so", f.read())
        plan_abi.embed(lib, plan)
        with open(lib, "rb") as f:
            put(out, "plan-elf", "gpt2_megatron.so", f.read())


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, bin_dir = sys.argv[1], sys.argv[2]
    onnx_seeds(out)
    checkpoint_seeds(out, bin_dir)
    plan_elf_seeds(out)
    for committed in sorted(glob.glob(os.path.join(ROOT, "fuzz", "seeds", "*", "*"))):
        target = os.path.basename(os.path.dirname(committed))
        os.makedirs(os.path.join(out, target), exist_ok=True)
        shutil.copy(committed, os.path.join(out, target))
    for target in sorted(os.listdir(out)):
        print(f"make_seeds: {target}: {len(os.listdir(os.path.join(out, target)))} seeds", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
