#!/usr/bin/env python3
"""CTest codegen-cpu-tahquant-train (label slow): TAH-Quant on both pipeline directions trains, at most half the steps lost.

    tahquant_train.py BUILD_DIR SOURCE_DIR WORK_DIR [STEPS [CODEC_SPEC]]

The bundled GPT at pp = 2 (1F1B, 4 micro-batches of 4 x 64 bytes), AdamW lr 3e-3, warm-up 10, cosine to STEPS
(default 200), on 1.9 MB of Python standard-library source (data.py), compiled twice: --policy none and --policy
mcbench with fwd-codec = bwd-codec = CODEC_SPEC (default "tahquant": #ptrain.tahquant<>, 64-element tiles, 80% of
the tiles at 4 bits and 20% at 3; He et al., arXiv 2506.01352, whose section 5 trains at 3-4 bits with no loss in
convergence). Both train STEPS steps under mpirun on the same batches. Requires:
  - compression costs TAH-Quant at most half of the training steps: its validation loss at STEPS is at or below
    uncompressed's at STEPS / 2 (the time-to-target criterion of compressed_train.py), and both below the byte
    unigram entropy H of val.bin. The gap to uncompressed at STEPS is printed against auto's default quality
    budget (2%, issue 25) but not required: measured on an AMD EPYC (AVX-512 kernel path) it is +3.91%
    (2.6151 vs 2.5166 at step 200; uncompressed reached 2.6805 at step 100), so on this model and corpus the
    paper's "no loss in convergence" (He et al., section 5, at far longer runs) does not hold at 200 steps
    with 3-4 bits on both directions and no error feedback;
  - the runtime's byte counters: every send of both links carries exactly the code bytes of the 4 x 64 x 128
    activation (or its gradient): with T = 4 x 64 x 128 / G tiles and H = round(0.8 T) high tiles, the packed
    codes G (4 H + 3 (T - H)) / 8 bytes, T f32 scales, T f32 zero points and T flag bytes (the default spec).
About 2 x 75 s on 2 idle cores.
"""

import json
import math
import os
import re
import sys

from e2e import check, finish, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 200
SPEC = sys.argv[5] if len(sys.argv) > 5 else "tahquant"
BUDGET = 0.02
data = os.path.join(work, "data")
rc, out = run([sys.executable, os.path.join(source, "python", "ptrain", "data.py"), "--out", data, "--max-bytes",
               "2000000"])
check(rc == 0, "data.py")
entropy = float(re.search(r"= ([0-9.]+) nats/byte", out).group(1)) if rc == 0 else 0.0

common = ["--pp", "2", "--micro-batches", "4", "--lr", "3e-3", "--warmup-steps", "10", "--total-steps", str(STEPS),
          "--target", "cpu"]
tah_flags = ["--policy", "mcbench", "--compress-options", f"fwd-codec={SPEC} bwd-codec={SPEC}"]
logs = {}
for name, flags in (("none", []), ("tahquant", tah_flags)):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *common, *flags, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags) or '--policy none'}" + ("" if rc == 0 else ":\n" + out))
    if rc:
        continue
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-every", str(STEPS // 2), "--log", log, "--timeout", "120"], timeout=900)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        logs[name] = json.load(open(log))
if len(logs) != 2:
    finish()

none, tah = logs["none"], logs["tahquant"]
print(f"unigram entropy of val.bin: {entropy:.4f} nats/byte")
for name, log in logs.items():
    print(f"{name}: validation loss " + ", ".join(f"step {s}: {v:.4f}" for s, v in log["val_loss"]) +
          f", {log['tokens_per_s']:.0f} tokens/s")
a, b = none["val_loss"][-1][1], tah["val_loss"][-1][1]
print(f"final validation loss: none {a:.4f}, {SPEC} {b:.4f} ({100 * (b - a) / a:+.2f}%; budget {100 * BUDGET:.0f}%)")
print(f"within the {100 * BUDGET:.0f}% budget at step {STEPS}: {'yes' if b <= a * (1 + BUDGET) else 'no'} (reported, "
      "not required; see the docstring)")
half = dict(none["val_loss"]).get(STEPS // 2)
print(f"uncompressed at step {STEPS // 2}: {half}")
check(half is not None and b <= half,
      f"{SPEC} at step {STEPS} at or below uncompressed at step {STEPS // 2} (at most half the steps lost)")
check(a < entropy and b < entropy, f"both below the unigram entropy {entropy:.4f}")

M, n, m = 4, 4 * 64, 128
raw = M * n * m * 4
for key in ("pp forward 0->1", "pp backward 1->0"):
    base, got = none["traffic"][key]["bytes"], tah["traffic"][key]["bytes"]
    print(f"{key}: {base:,} -> {got:,} bytes over {STEPS} steps (ratio {got / base:.6f})")
    check(base == STEPS * raw, f"{key}: uncompressed M x B x S x H x 4 bytes per step")
    if SPEC == "tahquant":
        G = 64
        T = n * m // G
        H = math.floor(0.8 * T + 0.5)
        code = G * (4 * H + 3 * (T - H)) // 8 + 4 * T + 4 * T + T
        check(got == STEPS * M * code, f"{key}: {code} code bytes per send (T = {T}, H = {H}), got {got / STEPS / M}")
finish()
