#!/usr/bin/env python3
"""CTest codegen-cpu-resume-grid: ptrain-run --resume checks what it resumes (python/ptrain/manifest.py) and
reshards a checkpoint written at another data-parallel degree (python/ptrain/reshard.py, DESIGN.md decision 5).

    resume_grid_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT at pp = 2 (2 micro-batches, AdamW lr 1e-3) with --policy optimus-cc "sc-all=true sc-rank=8":
CB's PowerSGD on the backward link 1 -> 0 (link residual and warm-start Q), and at dp > 1 SC's data-parallel
PowerSGD on every gradient (a residual and warm-start Q per parameter); compiled at dp = 1, 2 and 3, and at
dp = 2 without compression (another plan). Under mpirun:
1. dp 2 trains 2 steps with a checkpoint (replica 1 writes its own files, .dp1: the residuals differ).
2. Resumed at dp 3 for 0 steps (its checkpoint is what it loaded): the launcher warns, naming the averaged
   and the reset states; every replica's file holds old replica 0's parameters, moments, step and warm-start
   Q bit for bit, each data-parallel residual equal to the mean of the two old replicas' (fp64, rounded once),
   the link residual zero. Then one more step at dp 3: a finite loss, the three replicas' parameters equal.
3. Resumed at dp 1: the link residual reset, the data-parallel states dropped (one line), one step trains.
4. dp 1 trains 2 steps with a checkpoint, resumed at dp 2: SC's states, which the dp 1 checkpoint lacks, keep
   their initial values (residuals zero); one step trains.
5. Errors, before any rank starts (exit 1, a message): the dp 2 checkpoint resumed by the uncompressed dp 2
   plan (another compile: both fingerprints named); the dp 1 checkpoint resumed by the uncompressed dp 2 plan
   (another plan at another degree: both named); a missing replica file (named, with its replica); a manifest
   of another pipeline split (pp edited: named).
"""

import json
import math
import os
import shutil
import struct
import sys

from e2e import check, corpus, failures, finish, read_checkpoint, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work)
sc = ["--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000", "--policy", "optimus-cc",
      "--compress-options", "sc-all=true sc-rank=8"]
common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
configs = {"dp1": ["--dp", "1", *sc], "dp2": ["--dp", "2", *sc], "dp3": ["--dp", "3", *sc],
           "other": ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()


def ptrain_run(plan, steps, *extra):
    return run([os.path.join(BIN, "ptrain-run"), os.path.join(work, plan), "--data", data, "--steps", str(steps),
                "--val-batches", "1", "--no-plots", "--timeout", "120", *extra], timeout=600)


def floats(blob):
    return struct.unpack(f"<{len(blob) // 4}f", blob)


ck = lambda name: os.path.join(work, "ck-" + name)  # noqa: E731
rc, out = ptrain_run("dp2", 2, "--checkpoint", ck("dp2"))
check(rc == 0, "dp 2: 2 steps with a checkpoint" + ("" if rc == 0 else ":\n" + out))
old = [{s: read_checkpoint(ck("dp2") + f".stage{s}" + ("" if d == 0 else f".dp{d}")) for s in (0, 1)}
       for d in (0, 1)]
link = "pp1->0/residual"
mean_keys = {s: sorted(k for k in old[0][s] if k.startswith("sc/") and k.endswith("/residual")) for s in (0, 1)}
check(link in old[0][1] and all(len(mean_keys[s]) > 10 for s in (0, 1)), "dp 2 checkpoint: the link residual and "
      f"{len(mean_keys[0])} + {len(mean_keys[1])} data-parallel residuals on stages 0 and 1")
differ = [k for s in (0, 1) for k in mean_keys[s] if old[0][s][k] != old[1][s][k]]
check(len(differ) > 0, f"the two replicas' data-parallel residuals differ ({len(differ)})")

# 2. dp 2 -> dp 3.
rc, out = ptrain_run("dp3", 2, "--resume", ck("dp2"), "--checkpoint", ck("dp3at2"))
print(out.splitlines()[0] if out else "")
check(rc == 0 and "ptrain-run: warning: --resume " in out and "was written at dp = 2; resharded to dp = 3" in out,
      "dp 2 -> 3: the launcher's warning" + ("" if rc == 0 else ":\n" + out))
check(f"reset '{link}' to zero (pipeline-link codec residual" in out, "dp 2 -> 3: the reset link residual named")
named = sorted({k for s in (0, 1) for k in mean_keys[s]})
check(all(f"averaged '{k}' (data-parallel codec residual) over the 2 old replicas' files" in out for k in named),
      f"dp 2 -> 3: each of the {len(named)} averaged residuals named")
worst = 0.0
for d in range(3):
    for s in (0, 1):
        new = read_checkpoint(ck("dp3at2") + f".stage{s}" + ("" if d == 0 else f".dp{d}"))
        check(set(new) == set(old[0][s]), f"dp 3 replica {d} stage {s}: the same keys as the dp 2 checkpoint")
        copied = [k for k in new if k in old[0][s] and k != link and k not in mean_keys[s]]
        check(all(new[k] == old[0][s][k] for k in copied),
              f"dp 3 replica {d} stage {s}: {len(copied)} states bit-equal to old replica 0's")
        if s == 1:
            check(link in new and not any(floats(new[link])), f"dp 3 replica {d}: '{link}' is zero")
        for k in mean_keys[s]:
            a, b, got = floats(old[0][s][k]), floats(old[1][s][k]), floats(new[k])
            want = [struct.unpack("<f", struct.pack("<f", (x + y) / 2))[0] for x, y in zip(a, b)]
            worst = max(worst, max(abs(g - w) for g, w in zip(got, want)))
check(worst == 0.0, f"dp 3: every data-parallel residual equals the mean of the 2 old replicas' (worst {worst})")
rc, out = ptrain_run("dp3", 3, "--resume", ck("dp2"), "--checkpoint", ck("dp3at3"), "--log", ck("dp3.json"))
losses = json.load(open(ck("dp3.json")))["train_loss"] if rc == 0 else []
check(rc == 0 and len(losses) == 1 and math.isfinite(losses[0]),
      f"dp 2 -> 3: step 3 trains, loss {losses}" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    params = [read_checkpoint(ck("dp3at3") + ".stage0" + ("" if d == 0 else f".dp{d}")) for d in range(3)]
    keys = [k for k in params[0] if "/" not in k]
    check(keys and all(p[k] == params[0][k] for p in params for k in keys),
          f"dp 3 after a step: the 3 replicas' {len(keys)} parameters of stage 0 equal")

# 3. dp 2 -> dp 1.
rc, out = ptrain_run("dp1", 3, "--resume", ck("dp2"), "--checkpoint", ck("dp1from2"))
check(rc == 0 and f"reset '{link}' to zero" in out and
      f"dropped {len({k for s in (0, 1) for k in old[0][s] if k.startswith('sc/')})} state(s) of the checkpoint that "
      "the plan at dp 1 does not hold" in out,
      "dp 2 -> 1: the link residual reset, SC's states dropped in one line, step 3 trains" + ("" if rc == 0 else
                                                                                             ":\n" + out))

# 4. dp 1 -> dp 2.
rc, out = ptrain_run("dp1", 2, "--checkpoint", ck("dp1"))
check(rc == 0, "dp 1: 2 steps with a checkpoint" + ("" if rc == 0 else ":\n" + out))
rc, out = ptrain_run("dp2", 2, "--resume", ck("dp1"), "--checkpoint", ck("dp2from1"))
check(rc == 0 and "initialized " in out and "codec states the checkpoint at dp 1 does not hold to their initial "
      "values" in out, "dp 1 -> 2: SC's states initialized, named in one line" + ("" if rc == 0 else ":\n" + out))
if rc == 0:
    new, before = read_checkpoint(ck("dp2from1") + ".stage0"), read_checkpoint(ck("dp1") + ".stage0")
    check(all(not any(floats(new[k])) for k in mean_keys[0]), "dp 1 -> 2: every data-parallel residual is zero")
    check(all(new[k] == before[k] for k in before), f"dp 1 -> 2: the {len(before)} states of the dp 1 checkpoint "
          "copied bit for bit")
rc, out = ptrain_run("dp2", 3, "--resume", ck("dp1"))
check(rc == 0, "dp 1 -> 2: step 3 trains" + ("" if rc == 0 else ":\n" + out))

# 5. Errors.
rc, out = ptrain_run("other", 3, "--resume", ck("dp2"))
fp = lambda plan: json.load(open(ck(plan) + ".json"))["plan_fingerprint"][:12]  # noqa: E731
check(rc == 1 and "is the plan of fingerprint" in out and f"trained by the plan of fingerprint {fp('dp2')}" in out
      and "another compile's checkpoint" in out and "Traceback" not in out,
      "another plan's checkpoint at the same dp: refused naming both fingerprints:\n  " + out.strip())
rc, out = ptrain_run("other", 3, "--resume", ck("dp1"))
check(rc == 1 and f"trained by the plan of fingerprint {fp('dp1')} at dp = 1" in out and
      "differs from it in more than the data-parallel degree" in out,
      "another plan's checkpoint at another dp: refused naming both:\n  " + out.strip())
for suffix in ("", ".json", ".stage0", ".stage1", ".stage0.dp1", ".stage1.dp1"):
    if os.path.exists(ck("dp2") + suffix):
        shutil.copy(ck("dp2") + suffix, ck("broken") + suffix)
os.remove(ck("broken") + ".stage1.dp1")
rc, out = ptrain_run("dp3", 3, "--resume", ck("broken"))
check(rc == 1 and f"no checkpoint file {ck('broken')}.stage1.dp1 (replica 1 of the checkpoint's dp = 2)" in out,
      "a missing replica file: named:\n  " + out.strip())
manifest = json.load(open(ck("dp2") + ".json"))
json.dump(dict(manifest, pp=4), open(ck("broken") + ".json", "w"))
rc, out = ptrain_run("dp2", 3, "--resume", ck("broken"))
check(rc == 1 and "written by a run at pp = 4, but" in out and "has pp = 2" in out,
      "a checkpoint of another pipeline split: named:\n  " + out.strip())
finish()
