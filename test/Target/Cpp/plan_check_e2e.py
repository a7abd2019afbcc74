"""plan.json against the plan embedded in libstep.so (CTest `codegen-cpu-plan-check`; python/ptrain/plan_abi.py).

ptrain-compile embeds plan.json's facts (without paths) and their SHA-256 fingerprint in libstep.so as the ELF
section .ptrain_plan; ptrain-run compares plan.json with it, field by field, before mpirun starts a rank.

1. The embedded plan equals plan.json (minus model, library, cluster), its fingerprint is the SHA-256 of it.
2. A copy of out/ in another folder trains 1 step (the paths are not bound).
3. Each of these is exit 1 with a message naming the field, and no rank starts: seq, batch, pp, dp and a
   state's shape edited, a field removed, a field added, a libstep.so of another compile (micro-batches 4 for
   a plan of 2) dropped in, a library whose section was stripped, an embedded plan not matching its
   fingerprint.

Usage: plan_check_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys

from e2e import check, corpus, failures, finish, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
from ptrain import plan_abi

data = corpus(source, work, max_bytes=100000)
common = ["--pp", "2", "--lr", "1e-3", "--target", "cpu"]
for m in (2, 4):
    rc, text = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, "--micro-batches", str(m), "-o",
                    os.path.join(work, f"m{m}")])
    check(rc == 0, f"ptrain-compile --micro-batches {m}" + ("" if rc == 0 else ":\n" + text))
if failures:
    finish()
out = os.path.join(work, "m2")
lib = os.path.join(out, "libstep.so")
plan = json.load(open(os.path.join(out, "plan.json")))

# --- 1. the embedded plan.
embedded = plan_abi.read_embedded(lib)
facts = {k: v for k, v in plan.items() if k not in ("model", "library", "cluster")}
text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
check(embedded is not None and {k: v for k, v in embedded.items() if k != "fingerprint"} == facts,
      "libstep.so's .ptrain_plan holds plan.json's fields without the paths")
check(embedded is not None and embedded.get("fingerprint") == hashlib.sha256(text.encode()).hexdigest(),
      "its fingerprint is the SHA-256 of them")

# --- 2. a moved folder still runs.
moved = os.path.join(work, "moved", "out")
shutil.copytree(out, moved)
rc, text = run([os.path.join(BIN, "ptrain-run"), moved, "--data", data, "--steps", "1", "--val-batches", "1",
                "--no-plots", "--timeout", "60"], timeout=300)
check(rc == 0, "the compiled folder copied elsewhere trains a step" + ("" if rc == 0 else ":\n" + text))


# --- 3. mismatches.
def expect_error(name, edit, needle, library=None):
    folder = os.path.join(work, name)
    shutil.copytree(out, folder)
    p = json.load(open(os.path.join(folder, "plan.json")))
    edit(p)
    json.dump(p, open(os.path.join(folder, "plan.json"), "w"), indent=2)
    if library:
        library(os.path.join(folder, "libstep.so"))
    rc, text = run([os.path.join(BIN, "ptrain-run"), folder, "--data", data, "--steps", "1", "--no-plots",
                    "--timeout", "30"])
    ok = rc == 1 and needle in text and "Traceback" not in text and "mpirun" not in text.lower()
    check(ok, f"{name}: exit 1 naming it ('{needle}')" + ("" if ok else f" (exit {rc}):\n{text}"))
    if ok:
        print("     " + text.strip().splitlines()[-1])


def setter(key, value):
    return lambda p: p.__setitem__(key, value)


def state_shape(p):
    s = next(s for s in p["states"] if s["kind"] == "parameter" and len(s["shape"]) == 2)
    s["shape"] = [s["shape"][0] * 2, s["shape"][1]]


expect_error("seq", setter("seq", 32), "'seq' is 32 but")
expect_error("batch", setter("batch", 8), "'batch' is 8 but")
expect_error("pp", setter("pp", 1), "'pp' is 1 but")
expect_error("dp", setter("dp", 2), "'dp' is 2 but")
expect_error("state-shape", state_shape, "'states' is")
expect_error("removed", lambda p: p.pop("global_batch"), "'global_batch' is missing")
expect_error("added", setter("tensor_parallel", 2), "'tensor_parallel' is not a field")
expect_error("other-library", lambda p: None, "'micro_batches' is 2 but",
             lambda path: shutil.copy(os.path.join(work, "m4", "libstep.so"), path))
expect_error("stripped", lambda p: None, "no embedded plan",
             lambda path: subprocess.run(["objcopy", "--remove-section", ".ptrain_plan", path], check=True))


def tamper(path):  # The section's JSON edited in place (same length): seq 64 -> 65.
    blob = open(path, "rb").read()
    at = blob.index(b'"seq": 64')
    open(path, "wb").write(blob[:at] + b'"seq": 65' + blob[at + 9:])


expect_error("tampered", setter("seq", 65), "does not match its fingerprint", tamper)
finish()
