#!/usr/bin/env python3
"""CTest codegen-cpu-precision-plans: --precision bf16 and fp16 under every policy and schedule (issue 24's "16-bit plans work
under every policy and every schedule"; docs/MixedPrecision.md).

    precision_plans_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR [PLAN,PLAN,...]

(the optional list runs those plans and their uncompressed references only, e.g. `mcbench,optimus-cc`).

For each plan below, the bundled GPT (models/gpt) is compiled with `ptrain-compile --precision fp32`, `bf16` and
`fp16` (with its dynamic loss scaler from PyTorch GradScaler's initial scale 2^16, which this model's gradients do
not overflow; optimus-cc's and mcbench's error-feedback states are kept on a skipped step, docs/MixedPrecision.md,
"Error feedback under fp16") and trained by `ptrain-run` under mpirun for STEPS AdamW steps on the same bytes of
docs/*.md (the user's path: plan.json, libstep.so, run.jsonl). Requires of each plan:
* each 16-bit run's training loss at every step within BOUND (relative) of the fp32 run's (bf16 rounds every GEMM
  operand; over the first steps the two agree to about 1e-3, docs/MixedPrecision.md), and finite;
* its pipeline traffic: an uncompressed link carries exactly half of fp32's bytes (the lowering sends bf16); a
  link whose messages a codec encodes carries the codec's codes, at most fp32's bytes; fp16 sends as many bytes as
  bf16;
* codecs on 16-bit traffic (issue 24 item 2, docs/Compression.md "Codecs on 16-bit traffic"): the codec reads the
  16-bit message, so MCBench's backward link under 1F1B, every send of it top-k coded (25% of the values with
  their int32 indices), carries exactly 3/4 of fp32's bytes (6 bytes a kept value, not 8; the forward link's 8-bit codes and
  Optimus-CC's PowerSGD factors are the same bytes as in fp32: f32 scales and factors); and the compiled bf16 steps
  of both policies (and the plain 1F1B plan's bf16 and fp16 steps, with their 16-bit activations) equal the multi-rank executor (ptrain-interpret --multi-rank on the same step.mlir and batches)
  within EXECUTOR_BOUND at step 1 and EXECUTOR_DRIFT_BOUND over the STEPS steps.
Plans: 1F1B (pp 2, 4 micro-batches), GPipe, interleaved 1F1B (2 virtual stages), dp 2 x pp 2, tp 2 x pp 2,
Optimus-CC (CB's PowerSGD on the backward sends, LEP, the fused embedding sync), MCBench (8-bit forward
quantization, top-k 25% backward with error feedback; interleaved, and under 1F1B), and auto. About 5 minutes on 2 cores.
"""

import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import executor_losses, failures as e2e_failures, global_batches  # noqa: E402

build, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

STEPS = 8
BOUND = 0.01  # bf16 vs fp32 training loss, relative, at every one of the first STEPS steps
# Compiled bf16 vs the multi-rank executor, relative: precision_tp_e2e.py's 1e-5 at step 1 (the same step.mlir, the
# same codec kernels); over the 8 steps 2e-4, twice its 1e-4, since a code's rounding boundary (quantization, a
# top-k tie) turns a last-bit GEMM difference into a different code (loss_scale_e2e.py's 1e-4 for quantized plans).
# Measured 2026-12-07 (AMD EPYC, AVX-512): optimus-cc 2.7e-10 at step 1, 7.6e-6 over 8 steps; mcbench 1.8e-10, 5.8e-5.
EXECUTOR_BOUND, EXECUTOR_DRIFT_BOUND = 1e-5, 2e-4
# The plans (and precisions) whose compiled steps are checked against the executor: the compressed ones in bf16,
# and the plain pp 2 plan in both 16-bit precisions (with the 16-bit activations of docs/MixedPrecision.md,
# "16-bit activations", slice 2, in the stage functions the F and B steps call).
EXECUTOR = {"mcbench": ("bf16",), "optimus-cc": ("bf16",), "1f1b": ("bf16", "fp16")}
# The links whose every send a codec with 16-bit values codes: bf16 bytes / fp32 bytes, exactly.
CODED_RATIO = {("mcbench-1f1b", "pp backward"): 0.75}
PLANS = {
    "1f1b": ["--pp", "2", "--micro-batches", "4"],
    "gpipe": ["--pp", "2", "--micro-batches", "4", "--schedule", "gpipe"],
    "interleaved": ["--pp", "2", "--micro-batches", "4", "--schedule", "interleaved", "--virtual-stages", "2"],
    "dp2pp2": ["--dp", "2", "--pp", "2", "--micro-batches", "2"],
    "tp2pp2": ["--tp", "2", "--pp", "2", "--micro-batches", "2"],
    "optimus-cc": ["--pp", "2", "--micro-batches", "4", "--policy", "optimus-cc"],
    "mcbench": ["--pp", "2", "--micro-batches", "4", "--schedule", "interleaved", "--virtual-stages", "2",
                "--policy", "mcbench", "--compress-options",
                "fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.25 error-feedback=true"],
    "auto": ["--pp", "2", "--micro-batches", "4", "--policy", "auto"],
    # MCBench's codecs under 1F1B: the backward link 1 -> 0 carries only the top-k codes (the interleaved plan's
    # links also carry the other direction's sends between model chunks and the evaluation's messages).
    "mcbench-1f1b": ["--pp", "2", "--micro-batches", "4", "--policy", "mcbench", "--compress-options",
                     "fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.25 error-feedback=true"],
}

corpus = os.path.join(work, "corpus.txt")
with open(corpus, "wb") as f:
    for name in sorted(os.listdir(os.path.join(source, "docs"))):
        if name.endswith(".md"):
            f.write(open(os.path.join(source, "docs", name), "rb").read())

failures = []
# The compressed plans' uncompressed counterparts (same schedule, same micro-batches), trained first.
REFERENCE = {"optimus-cc": "1f1b", "auto": "1f1b", "mcbench": "interleaved", "mcbench-1f1b": "1f1b"}
if len(sys.argv) > 4:
    chosen = set(sys.argv[4].split(","))
    unknown = chosen - set(PLANS)
    if unknown:
        raise SystemExit(f"unknown plans {sorted(unknown)}; the plans are {sorted(PLANS)}")
    chosen |= {REFERENCE[n] for n in chosen if n in REFERENCE}
    PLANS = {n: o for n, o in PLANS.items() if n in chosen}
traffic_of = {}
train_runs = {}


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode:
        print(p.stdout[-3000:])
        raise SystemExit(f"FAIL: {what}: exit {p.returncode}")
    return p.stdout


def train(name, precision, options):
    out = os.path.join(work, f"{name}-{precision}")
    scaler = ["--initial-loss-scale", "65536"] if precision == "fp16" else []
    run([os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models", "gpt", "gpt.onnx"), "-o", out,
         "--precision", precision, "--lr", "1e-3", *scaler, *options], f"ptrain-compile {name} {precision}")
    run([os.path.join(build, "bin", "ptrain-run"), out, "--data", corpus, "--data-format", "bytes", "--steps",
         str(STEPS), "--val-every", str(STEPS), "--no-tensorboard", "--no-plots"], f"ptrain-run {name} {precision}")
    records = [json.loads(line) for line in open(os.path.join(out, "run.jsonl"))]
    losses = [r["train_loss"] for r in records if r.get("record") == "step" and "train_loss" in r]
    traffic = [r for r in records if r.get("record") == "end"][0]["traffic"]
    plan = json.load(open(os.path.join(out, "plan.json")))
    return losses, traffic, plan, out


for name, options in PLANS.items():
    l32, t32, plan, _ = train(name, "fp32", options)
    uncompressed = traffic_of.get(REFERENCE.get(name, name), t32)
    half_bytes = {}
    for half in ("bf16", "fp16"):
        l16, t16, plan16, out16 = train(name, half, options)
        train_runs[(name, half)] = (l16, t16, plan16, out16)
        worst = max(abs(a - b) / abs(a) for a, b in zip(l32, l16))
        print(f"{name}: {len(l16)} steps, loss at step {STEPS}: fp32 {l32[-1]:.6f}, {half} {l16[-1]:.6f}; worst "
              f"relative difference {worst:.2e}")
        if len(l16) != STEPS or len(l32) != STEPS or not all(math.isfinite(v) for v in l16):
            failures.append(f"{name}: {len(l16)} {half} and {len(l32)} fp32 steps, expected {STEPS} finite losses")
        elif not worst <= BOUND:
            failures.append(f"{name}: {half} loss differs from fp32 by {worst:.2e} relative > {BOUND}")
        # A link the codecs leave alone (its fp32 bytes those of the same plan uncompressed) carries 16 bits: half.
        for link, stats in t32.items():
            if not link.startswith(("pp forward", "pp backward")):
                continue
            b32, b16 = stats["bytes"], t16[link]["bytes"]
            coded = b32 != uncompressed[link]["bytes"]
            print(f"  {link}: fp32 {b32:,} B, {half} {b16:,} B ({b16 / b32:.4f}){' (codec codes)' if coded else ''}")
            if not coded and 2 * b16 != b32:
                failures.append(f"{name}: {link} carries {b16} bytes in {half}, not half of fp32's {b32}")
            ratio = next((r for (plan_name, prefix), r in CODED_RATIO.items()
                          if plan_name == name and link.startswith(prefix)), None)
            if ratio is not None and b16 != b32 * ratio:
                failures.append(f"{name}: {link} carries {b16:,} bytes in {half}, not {ratio} of fp32's {b32:,} "
                                f"(the codec's 16-bit values)")
            if coded and b16 > b32:
                failures.append(f"{name}: {link} carries {b16} bytes in {half}, more than fp32's {b32}")
            half_bytes.setdefault(link, []).append(b16)
    for half in EXECUTOR.get(name, ()):
        # The 16-bit step against the oracle on the same step.mlir and the batches ptrain-run drew (seed 0).
        tokens = global_batches(source, corpus, os.path.join(work, f"{name}-{half}-tokens.bin"), STEPS, 0,
                                rows=plan["global_batch"], seq=plan["seq"])
        _, _, _, out16 = train_runs[(name, half)]
        executor = executor_losses(os.path.join(build, "bin"), os.path.join(source, "models", "gpt", "gpt.onnx"),
                                   out16, tokens, STEPS)
        failures.extend(e2e_failures)
        e2e_failures.clear()
        if executor:
            lh = train_runs[(name, half)][0]
            gaps = [abs(a - b) / abs(b) for a, b in zip(lh, executor)]
            print(f"{name}: {half} executor losses {executor}: relative differences " + ", ".join(f"{g:.2e}" for g in gaps))
            if len(executor) != STEPS or gaps[0] > EXECUTOR_BOUND or max(gaps) > EXECUTOR_DRIFT_BOUND:
                failures.append(f"{name}: the compiled {half} step differs from the executor by {gaps} relative "
                                f"(bounds {EXECUTOR_BOUND} at step 1, {EXECUTOR_DRIFT_BOUND} over {STEPS} steps)")
    for link, sent in half_bytes.items():
        if len(sent) == 2 and sent[0] != sent[1]:
            bf16, fp16 = sent
            failures.append(f"{name}: {link} carries {fp16} bytes in fp16 but {bf16} in bf16")
    traffic_of[name] = t32

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS")
