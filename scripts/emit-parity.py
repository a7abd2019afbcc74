#!/usr/bin/env python3
"""The generated code before and after a code-generator change (issue 23, the one step emitter): byte for byte.

Emits every .mlir file under the given roots (the lit tests' inputs and the lowered plans the tests leave in a
build's test outputs, e.g. build/test and test/Target) with two ptrain-translate binaries, OLD (a copy of the
tool built before the change) and NEW, through --emit-cpp and --emit-cuda with their constant files
(--emit-<t>-constants; files with `// -----` through --split-input-file), and compares the code, the constant
file and, for a file one binary refuses, the first line of its error. Files of 8 MB or more are skipped.

Usage: scripts/emit-parity.py [--targets cpp,cuda] OLD_TRANSLATE NEW_TRANSLATE ROOT...
Prints how many files each target emitted and which differ; exit status 0 when none differs, 1 otherwise.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile


def emit(translate, target, path, scratch):
    """(sha256 of the code and constant file, lines) of `path`, or ("error", first line of the error)."""
    code, consts = os.path.join(scratch, "out"), os.path.join(scratch, "consts.bin")
    for f in (code, consts):
        if os.path.exists(f):
            os.remove(f)
    cmd = [translate, f"--emit-{target}", path, "-o", code, f"--emit-{target}-constants={consts}"]
    with open(path, errors="replace") as f:
        if "// -----" in f.read():
            cmd.append("--split-input-file")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return ("error", (r.stderr.strip().splitlines() or [""])[0])
    h = hashlib.sha256()
    for f in (code, consts):
        if os.path.exists(f):
            with open(f, "rb") as data:
                h.update(data.read())
    with open(code, "rb") as f:
        return (h.hexdigest(), sum(1 for _ in f))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default="cpp,cuda")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("roots", nargs="+")
    args = p.parse_args()
    files = sorted(os.path.join(d, n) for root in args.roots for d, _, names in os.walk(root) for n in names
                   if n.endswith(".mlir") and os.path.getsize(os.path.join(d, n)) < 8_000_000)
    differ = 0
    with tempfile.TemporaryDirectory() as scratch:
        for target in args.targets.split(","):
            emitted = 0
            for path in files:
                old, new = emit(args.old, target, path, scratch), emit(args.new, target, path, scratch)
                emitted += old[0] != "error"
                if old != new:
                    differ += 1
                    print(f"--emit-{target} {path}: {old} -> {new}")
            print(f"--emit-{target}: {len(files)} files, {emitted} emitted by OLD")
    print("identical" if not differ else f"{differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
