"""Shared by the end-to-end CTest scripts of test/Target/Cpp: running tools, recording checks, the corpus."""

import os
import shutil
import subprocess
import sys

failures = []


def setup(argv):
    """(build, source, work, bin, model) from BUILD_DIR SOURCE_DIR WORK_DIR; WORK_DIR is emptied."""
    build, source, work = argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return build, source, work, os.path.join(build, "bin"), os.path.join(source, "models", "gpt", "gpt.onnx")


def run(cmd, timeout=300):
    """(exit status, stdout and stderr together) of `cmd`."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def corpus(source, work, max_bytes=400000):
    """A small byte-level corpus: data.py over the Python standard library, capped; returns its folder."""
    data = os.path.join(work, "data")
    rc, _ = run([sys.executable, os.path.join(source, "python", "ptrain", "data.py"), "--out", data,
                 "--max-bytes", str(max_bytes)])
    check(rc == 0, "data.py")
    return data


def finish():
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
