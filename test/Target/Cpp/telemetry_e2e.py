#!/usr/bin/env python3
"""CTest codegen-cpu-telemetry: per-site codec telemetry, the run log and its plots (issue 10).

    telemetry_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT at pp=2 (1F1B, 4 micro-batches of 4 rows), AdamW lr 1e-3, seed 3, under mpirun:
1. --policy optimus-cc (CB: PowerSGD rank 16 with LEP on the cool-down send of link 1 -> 0, one compression per
   step at site pp1->0), 10 steps with --telemetry-every 1: the run log (JSON lines) has a run record naming
   the site and the links, one step record per step with the train loss, the bytes of every link (forward
   524,288 B and backward 417,792 B per step, the counters' exact values) and the site's metrics: one
   compression, codec error in (0, 1] (a projection loses at most the whole input), a positive residual norm,
   the LEP cosine in [-1, 1] from step 2 on (step 1's old residual is zero: none); validation losses at steps 0,
   5 and 10. The residual norm after step 10 equals the norm of the residual in stage 1's checkpoint (1e-6
   relative): the metric reads the state the kernels wrote.
2. The same plan with --telemetry-every 3 over 7 steps: metrics only at steps 3 and 6, each with a cosine (the
   step before captured the input).
3. Exact-path PowerSGD (cb-rank=128, every backward send: the codes carry the gradient): 4 compressions per step,
   codec error below 1e-5 (measured: 0), residual norm 0 and so no LEP cosine.
4. The PNGs (loss, bytes, codec, lep-cos) exist and are PNG files (signature, IHDR of a plausible size); without
   matplotlib plots.py fails with a message naming python3-matplotlib; --telemetry-every -1 is an error.
"""

import json
import math
import os
import struct
import sys

from e2e import check, corpus, failures, finish, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work)
SITE = "pp1->0"
FORWARD, BACKWARD = "pp forward 0->1", "pp backward 1->0"

common = ["--pp", "2", "--micro-batches", "4", "--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100",
          "--target", "cpu"]
configs = {"occ": ["--policy", "optimus-cc"],
           "exact": ["--policy", "optimus-cc", "--compress-options", "cb-rank=128 cb-sends=all sc=false"]}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *flags, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()


def train(name, steps, every, extra=()):
    """(run record, step records, output) of a ptrain-run with --telemetry-every `every`."""
    log = os.path.join(work, f"{name}-{steps}-{every}.jsonl")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-every", "5", "--val-batches", "1", "--seed", "3", "--timeout", "120",
                   "--telemetry-every", str(every), "--run-log", log, *extra], timeout=600)
    check(rc == 0, f"ptrain-run {name} {steps} steps --telemetry-every {every}" + ("" if rc == 0 else ":\n" + out))
    if rc != 0:
        return None, [], out
    records = [json.loads(line) for line in open(log)]
    check(records[0]["record"] == "run" and records[-1]["record"] == "end",
          f"{name}: the run log starts with a run record and ends with an end record")
    return records[0], [r for r in records if r["record"] == "step"], out


# 1. Every step measured.
head, steps, out = train("occ", 10, 1, ["--checkpoint", os.path.join(work, "occ-ckpt")])
if head is None:
    finish()
print(out)
check(head["codec_sites"] == [SITE] and FORWARD in head["links"] and BACKWARD in head["links"],
      f"run record: sites {head['codec_sites']}, links {head['links']}")
trained = [r for r in steps if "train_loss" in r]
check([r["step"] for r in trained] == list(range(1, 11)), "one step record per training step")
check([r["step"] for r in steps if "val_loss" in r] == [0, 5, 10], "validation losses at steps 0, 5, 10")
check(all(r["bytes"][FORWARD] == 524288 and r["bytes"][BACKWARD] == 417792 for r in trained),
      f"bytes per step: forward 524,288, backward 417,792 (step 1: {trained[0]['bytes']})")
for r in trained:
    m = r.get("codec", {}).get(SITE)
    if m is None:
        check(False, f"step {r['step']}: metrics of {SITE}")
        continue
    cos = m["lep_cos"]
    print(f"step {r['step']:2d}: loss {r['train_loss']:.4f} error {m['error']:.4f} residual {m['residual_norm']:.5f} "
          f"input {m['input_norm']:.5f} lep_cos {cos}")
    check(m["compressions"] == 1 and 0 < m["error"] <= 1 and m["residual_norm"] > 0 and m["input_norm"] > 0,
          f"step {r['step']}: one compression, error {m['error']:.4f} in (0, 1], residual norm > 0")
    if r["step"] == 1:
        check(cos is None, "step 1: no LEP cosine (the old residual is zero)")
    else:
        check(cos is not None and -1 <= cos <= 1, f"step {r['step']}: LEP cosine {cos} in [-1, 1]")


def checkpoint_state(path, key):
    """The f32 values of `key` in a checkpoint (docs/CodegenCpu.md, version 1)."""
    blob = open(path, "rb").read()
    count, data_offset = struct.unpack_from("<I", blob, 12)[0], struct.unpack_from("<Q", blob, 16)[0]
    pos = 24
    for _ in range(count):
        n = struct.unpack_from("<I", blob, pos)[0]
        name = blob[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        rank = struct.unpack_from("<iii", blob, pos)[2]
        pos += 12 + 8 * rank
        offset, size = struct.unpack_from("<QQ", blob, pos)
        pos += 16
        if name == key:
            return struct.unpack_from(f"<{size // 4}f", blob, data_offset + offset)
    return ()


residual = checkpoint_state(os.path.join(work, "occ-ckpt.stage1"), SITE + "/residual")
norm = math.sqrt(sum(v * v for v in residual))
last = trained[-1].get("codec", {}).get(SITE, {}).get("residual_norm", -1)
check(norm > 0 and abs(last - norm) <= 1e-6 * norm,
      f"residual norm after step 10 {last:.8f} = the checkpoint's residual norm {norm:.8f}")

# 4. The plots of that run.
for name in ("loss", "bytes", "codec", "lep-cos"):
    png = os.path.join(work, f"occ-10-1-{name}.png")
    ok = os.path.isfile(png)
    if ok:
        blob = open(png, "rb").read(24)
        width, height = struct.unpack(">II", blob[16:24])
        ok = blob[:8] == b"\x89PNG\r\n\x1a\n" and blob[12:16] == b"IHDR" and 200 <= width <= 2000 and \
            200 <= height <= 2000
        print(f"{png}: {width} x {height}")
    check(ok, f"{name} plot: a PNG file")
check(f"plot: {os.path.join(work, 'occ-10-1-loss.png')}" in out, "ptrain-run names the plots")

# 2. Every third step.
head, steps, _ = train("occ", 7, 3, ["--no-plots"])
measured = [r["step"] for r in steps if "codec" in r]
check(measured == [3, 6], f"--telemetry-every 3: metrics at steps {measured}")
check(all(r["codec"][SITE]["lep_cos"] is not None for r in steps if "codec" in r),
      "--telemetry-every 3: a LEP cosine at each measured step (the step before captured the input)")
check(not os.path.exists(os.path.join(work, "occ-7-3-loss.png")), "--no-plots: no PNG")

# 3. Exact path against rank 16.
head, steps, _ = train("exact", 3, 1, ["--no-plots"])
errors = [r["codec"][SITE]["error"] for r in steps if "codec" in r]
counts = [r["codec"][SITE]["compressions"] for r in steps if "codec" in r]
check(len(errors) == 3 and max(errors) < 1e-5 and counts == [4, 4, 4],
      f"exact-path PowerSGD: 4 compressions per step, codec error {errors} < 1e-5")
check(all(r["codec"][SITE]["residual_norm"] == 0 and r["codec"][SITE]["lep_cos"] is None for r in steps if "codec" in r),
      "exact path: residual norm 0 and no LEP cosine (nothing is left to propagate)")

# 4. Errors: no matplotlib, a negative period.
fake = os.path.join(work, "no-matplotlib", "matplotlib")
os.makedirs(fake)
with open(os.path.join(fake, "__init__.py"), "w") as f:
    f.write("raise ImportError('matplotlib hidden by the test')\n")
env_run = [sys.executable, "-c", "import sys; from ptrain import plots; sys.exit(plots.main([sys.argv[1]]))",
           os.path.join(work, "occ-10-1.jsonl")]
rc, out = run(env_run, env=dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(work, "no-matplotlib"),
                                                                        os.path.join(source, "python")])))
check(rc == 1 and "python3-matplotlib" in out and "Traceback" not in out,
      f"plots.py without matplotlib: a message, exit 1 ({out.strip()})")
rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "occ"), "--data", data, "--steps", "1",
               "--telemetry-every", "-1"])
check(rc != 0 and "--telemetry-every -1" in out, f"--telemetry-every -1: {out.strip()}")
finish()
