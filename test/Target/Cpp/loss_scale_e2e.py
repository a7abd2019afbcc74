#!/usr/bin/env python3
"""CTest codegen-cpu-loss-scale: fp16's dynamic loss scaler in the step (docs/MixedPrecision.md, "The loss scaler in
the step"; Megatron-LM's DynamicGradScaler) on a real overflow.

    loss_scale_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT compiled with --precision fp16 --initial-loss-scale 2^27 --loss-scale-window 2 (hysteresis 2, the
default): at that scale the loss gradient seeded into the backward overflows binary16 (the f16 casts of the GEMM
operands round it to inf), nothing is mocked. Plans: pp 2 with 2 micro-batches, dp 2, pp 2 under --policy optimus-cc
(error feedback), dp 2 with --zero 1 (ZeRO-1: the shards unscaled), and dp 2 x pp 2 under optimus-cc (section 2
only).
1. The multi-rank executor (ptrain-interpret --multi-rank) prints rank 0's scaler state after every step: the
   sequence is Megatron's rule step by step (each transition is update(found_inf) of the previous state for
   found_inf 1 or 0, from {2^27, 0, 2}); the first step overflows and keeps the scale (hysteresis), the second
   halves it, the scale backs off until a step is clean, and (pp 2, which is clean from step 5) with the window
   of 2 it grows back.
2. The skipped steps leave every parameter and moment bit-unchanged: ptrain-run (mpirun, pp 2) for 2 steps, both
   skipped, with --checkpoint: every parameter of both stages' files equals the ONNX initializer byte for byte and
   every moment is zero.
3. The compiled step (mpirun) equals the executor: the losses of STEPS steps within 1e-5 relative, and the final
   scaler state of every checkpoint file equals the executor's (pp 2 and dp 2).
   The optimizer-only step counter: after the 2 skipped steps `optimizer_step` is 0 (the step counter 2); after STEPS
   it counts the clean steps (Megatron-LM holds back the learning-rate schedule and Adam's step on a skip).
   Error feedback: optimus-cc's codec states (the pipeline link's residual and warm-start Q; at dp 2 x pp 2 also SC's
   dp residuals) are still zero after the 2 skipped steps, and the link's residual is finite and nonzero after STEPS.
4. Resume across a skip: 3 steps with --checkpoint then --resume to STEPS give the losses and checkpoint files of
   STEPS straight steps byte for byte (the scaler is a checkpointed state).
5. ZeRO-1 (dp 2, --zero 1) skips exactly where plain dp 2 does and gives its losses within 1e-6 (the executor's).
6. Quantization on loss-scaled gradients (docs/MixedPrecision.md, "Codecs on loss-scaled gradients"): pp 2 under
   --policy mcbench with 4-bit block quantization on the backward link and 8-bit on the forward one, both with error
   feedback (pp2-quant), and dp 2 --zero 1 with 8-bit block-quantized buckets (dp2-zero1-quant), run sections 1-4
   through the real overflow: the overflowing blocks decode to NaN, the scaler skips, the residuals and weights are
   bit-unchanged by the skipped steps, mpirun matches the executor, training continues.
7. A skip after a clean step (pp2-quant, --hysteresis 1 --loss-scale-window 1: every clean step doubles the scale and
   every overflow halves it; the runs above skip at the start): from the straight run's checkpoint, one step at a time
   (--resume) until a step after a clean one overflows; the checkpoints before and after that step k: every parameter
   and moment bit-equal, `step` one more and `optimizer_step` the same, the scaler Megatron's back-off; the backward
   link's residual (loss-scaled gradient units) equals the kept one times new scale / old scale (1/2) bit for bit
   ("Residuals across a scale change"), the forward link's (activation units) is unchanged.
About 6 minutes on 2 shared, loaded cores (372 s measured 2026-12-07, AMD EPYC).
"""

import filecmp
import json
import os
import re
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from e2e import check, corpus, failures, finish, global_batches, read_checkpoint, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 8, 3
SCALE, WINDOW, HYSTERESIS = 2.0 ** 27, 2, 2
data = corpus(source, work)
common = ["--target", "cpu", "--precision", "fp16", "--initial-loss-scale", str(int(SCALE)), "--lr", "1e-3",
          "--warmup-steps", "1", "--total-steps", "100", "--clip-norm", "1.0"]
configs = {"pp2": ["--pp", "2", "--micro-batches", "2"], "dp2": ["--dp", "2"],
           "pp2-optimus-cc": ["--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc"],
           "dp2-zero1": ["--dp", "2", "--zero", "1"],
           "pp2-quant": ["--pp", "2", "--micro-batches", "2", "--policy", "mcbench", "--compress-options",
                         "fwd-codec=quant:bits=8,granularity=block,block-size=64 "
                         "bwd-codec=quant:bits=4,granularity=block,block-size=64 error-feedback=true",
                         "--hysteresis", "1"],
           "dp2-zero1-quant": ["--dp", "2", "--zero", "1", "--policy", "mcbench", "--compress-options",
                               "dp-codec=quant:bits=8,granularity=block,block-size=256"]}
# Checked on two skipped steps only (section 2): optimus-cc's SC (PowerSGD on stage 0's dp all-reduces, its residuals
# written inside the optimizer step) besides CB and LEP.
SKIP_ONLY = {"dp2pp2-optimus-cc": ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc"]}
configs.update(SKIP_ONLY)
CODEC_STATES = ("/residual", "/warm_start_q")  # error feedback's residuals and PowerSGD's warm start
# Hysteresis 1 and a window of 1 on pp2-quant: every clean step doubles the scale and every overflow halves it, so
# the overflow that follows a growth is a skip after a clean step with a scale change (section 7).
HYSTERESIS_OF, WINDOW_OF = {"pp2-quant": 1}, {"pp2-quant": 1}
plans = {}
for name, flags in configs.items():
    window = ["--loss-scale-window", str(WINDOW_OF.get(name, WINDOW))]
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, *window, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    check("warning" not in out, f"ptrain-compile {name}: no warning")
    if rc == 0:
        plans[name] = json.load(open(os.path.join(work, name, "plan.json")))
if failures:
    finish()


def megatron_update(state, found_inf, hysteresis=HYSTERESIS, window=WINDOW):
    """megatron/core/optimizer/grad_scaler.py DynamicGradScaler.update (growth 2, backoff 0.5, min scale 1)."""
    scale, growth, hyst = state
    if found_inf:
        growth, hyst = 0, hyst - 1
        if hyst <= 0:
            scale = max(scale * 0.5, 1.0)
        return (scale, growth, hyst)
    growth += 1
    if growth == window:
        growth, hyst, scale = 0, hysteresis, scale * 2.0
    return (scale, growth, hyst)


def executor(name):
    """(losses, scaler states) of the executor over the global batches ptrain-run draws."""
    plan = plans[name]
    tokens = global_batches(source, data, os.path.join(work, f"{name}-tokens.bin"), STEPS, SEED,
                            rows=plan["global_batch"], seq=plan["seq"])
    rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, name, "step.mlir"), "--weights", MODEL,
                   "--multi-rank", "--steps", str(STEPS), "--tokens-file", tokens], timeout=600)
    check(rc == 0, f"ptrain-interpret --multi-rank {name}" + ("" if rc == 0 else ":\n" + out[-3000:]))
    pattern = re.compile(r"^step (\d+): loss (\S+) .*loss scale (\S+) \(growth tracker (\S+), hysteresis tracker (\S+)\)")
    losses, states = [], []
    for line in out.splitlines():
        m = pattern.match(line)
        if m:
            losses.append(float(m.group(2)))
            states.append(tuple(float(m.group(k)) for k in (3, 4, 5)))
    check(len(states) == STEPS, f"{name}: the executor prints the scaler after each of {STEPS} steps")
    return losses, states


def skips_of(states, hysteresis=HYSTERESIS, window=WINDOW):
    """The found_inf of each step under Megatron's rule, or None where neither transition gives the state."""
    prev, found = (SCALE, 0, hysteresis), []
    for state in states:
        options = [f for f in (1, 0) if megatron_update(prev, f, hysteresis, window) == state]
        found.append(options[0] if len(options) == 1 else None)
        prev = state
    return found


def ptrain_run(name, *flags):
    log = os.path.join(work, f"{name}-{len(os.listdir(work))}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--val-batches", "1",
                   "--seed", str(SEED), "--log", log, "--timeout", "120", *flags], timeout=600)
    check(rc == 0, f"ptrain-run {name} {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out[-3000:]))
    return json.load(open(log)) if rc == 0 else None


def checkpoint_files(path):
    """The files of checkpoint PATH (one per stage or replica), sorted."""
    folder, base = os.path.dirname(path), os.path.basename(path)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if (f == base or f.startswith(base + ".")) and not f.endswith((".json", ".pending")))


initial = {t.name: numpy_helper.to_array(t).astype(np.float32).tobytes() for t in onnx.load(MODEL).graph.initializer}
ck = os.path.join(work, "ck")
os.makedirs(ck)

def check_skipped(name, path, files):
    """Section 2 on checkpoint file `path` of `files` after 2 skipped steps."""
    states_in = read_checkpoint(path)
    params = [k for k in states_in if k in initial]
    same = all(states_in[k] == initial[k] for k in params)
    zero = all(not any(v) for k, v in states_in.items() if k.endswith(("/adam_m", "/adam_v")))
    check(params and same and zero, f"{name}: {os.path.basename(path)}: {len(params)} parameters bit-equal "
          "to the ONNX initializers and zero moments after 2 skipped steps")
    counters = tuple(struct.unpack("<q", states_in[k])[0] for k in ("step", "optimizer_step"))
    check(counters == (2, 0), f"{name}: {os.path.basename(path)}: (step, optimizer_step) = {counters}: the iteration "
          "advanced twice, the optimizer's count (the schedule's, AdamW's bias correction) not at all")
    codec = {k: v for k, v in states_in.items() if k.endswith(CODEC_STATES)}
    check(not any(any(v) for v in codec.values()), f"{name}: {os.path.basename(path)}: every codec state "
          f"({len(codec)}) still its initial zero after 2 skipped steps, bit for bit")
    return codec


results = {}
for name in plans:
    if name in SKIP_ONLY:
        ptrain_run(name, "--steps", "2", "--checkpoint", os.path.join(ck, f"{name}-skip"))
        files = checkpoint_files(os.path.join(ck, f"{name}-skip"))
        scaler = megatron_update(megatron_update((SCALE, 0, HYSTERESIS), 1), 1)
        codec = set()
        for path in files:
            found = struct.unpack("<3f", read_checkpoint(path)["loss_scaler"])
            check(found == scaler, f"{name}: {os.path.basename(path)}: the scaler {found} after two overflows")
            codec |= set(check_skipped(name, path, files))
        check(any(k.startswith("sc/") for k in codec) and any(k.startswith("pp") for k in codec),
              f"{name}: the kept codec states include SC's dp residuals and the pipeline link's ({len(codec)} keys)")
        continue
    losses, states = executor(name)
    if len(states) != STEPS:
        continue
    hyst, window = HYSTERESIS_OF.get(name, HYSTERESIS), WINDOW_OF.get(name, WINDOW)
    found = skips_of(states, hyst, window)
    print(f"{name}: executor losses {losses}\n      scaler states {states}\n      found_inf {found}")
    check(None not in found, f"{name}: every scaler state is Megatron's update of the previous one")
    first = (SCALE, SCALE / 2) if hyst == 2 else (SCALE / 2, SCALE / 4)
    check(found[:2] == [1, 1] and (states[0][0], states[1][0]) == first, f"{name}: the first two steps overflow; "
          f"hysteresis {hyst}: the scale after them {first}")
    first_clean = found.index(0) if 0 in found else None
    check(first_clean is not None, f"{name}: the scale backs off until a step is clean")
    if name == "pp2":  # dp 2 backs off for 7 steps (smaller replica batches, larger gradients): no growth by STEPS
        check(any(b[0] > a[0] for a, b in zip(states, states[1:])), f"{name}: the scale grows back after {WINDOW} "
              "clean steps")

    # 2. Two skipped steps: the parameters are the ONNX initializers, the moments zero, bit for bit.
    results[name] = (losses, states)
    if found[:2] == [1, 1] and name != "dp2":
        ptrain_run(name, "--steps", "2", "--checkpoint", os.path.join(ck, f"{name}-skip"))
        files = checkpoint_files(os.path.join(ck, f"{name}-skip"))
        replicas = 2 if "--zero" in configs[name] else 1  # ZeRO-1's checkpoint is sharded by dp
        check(len(files) == plans[name]["pp"] * replicas, f"{name}: a checkpoint file per stage (and per replica with "
              f"ZeRO-1) after 2 steps ({files})")
        for path in files:
            codec = check_skipped(name, path, files)
            check(name != "pp2-optimus-cc" or (path == files[0]) == (not codec),
                  f"{name}: {os.path.basename(path)}: the codec states are the sender's ({sorted(codec)})")

    # 3. The compiled step against the executor, the scaler state exactly.
    straight = ptrain_run(name, "--steps", str(STEPS), "--checkpoint", os.path.join(ck, f"{name}-a"))
    if straight:
        worst = max(abs(x - y) / abs(y) for x, y in zip(straight["train_loss"], losses))
        print(f"{name}: mpirun losses {straight['train_loss']}: worst relative difference {worst:.3e}")
        # Quantized plans: the executor's and the compiled step's GEMMs differ in the last bits, which a code's
        # rounding boundary turns into a step of the quantization grid once the parameters move (6.8e-5 measured).
        tolerance = 1e-4 if "quant" in name else 1e-5
        check(len(straight["train_loss"]) == STEPS and worst <= tolerance,
              f"{name}: the compiled step's losses within {tolerance:g} relative of the executor's")
        for path in checkpoint_files(os.path.join(ck, f"{name}-a")):
            counters = tuple(struct.unpack("<q", read_checkpoint(path)[k])[0] for k in ("step", "optimizer_step"))
            check(counters == (STEPS, found.count(0)), f"{name}: {os.path.basename(path)}: (step, optimizer_step) = "
                  f"{counters}: {STEPS} iterations, {found.count(0)} of them not skipped")
            scaler = struct.unpack("<3f", read_checkpoint(path)["loss_scaler"])
            check(scaler == states[-1], f"{name}: {os.path.basename(path)}: the scaler {scaler} is the executor's "
                  f"{states[-1]}")
            for key, blob in read_checkpoint(path).items():
                if key.endswith("/residual"):  # error feedback is at work on the clean steps, and finite
                    values = np.frombuffer(blob, dtype=np.float32)
                    check(np.isfinite(values).all() and np.abs(values).max() > 0,
                          f"{name}: {os.path.basename(path)}: {key} is finite and nonzero after {STEPS} steps")

    # 4. Resume across the skipped steps, bit for bit.
    if name.startswith("pp2") and straight:
        first = ptrain_run(name, "--steps", "3", "--checkpoint", os.path.join(ck, f"{name}-b"))
        resumed = ptrain_run(name, "--steps", str(STEPS), "--resume", os.path.join(ck, f"{name}-b"), "--checkpoint",
                             os.path.join(ck, f"{name}-c"))
        if first and resumed:
            check(resumed["train_loss"] == straight["train_loss"][3:],
                  f"{name}: resumed steps 4-{STEPS} equal the straight run's losses")
            a, c = checkpoint_files(os.path.join(ck, f"{name}-a")), checkpoint_files(os.path.join(ck, f"{name}-c"))
            check(len(a) == len(c) == 2 and all(filecmp.cmp(x, y, shallow=False) for x, y in zip(a, c)),
                  f"{name}: the checkpoint after 3 + {STEPS - 3} steps equals {STEPS} straight steps byte for byte")
    # 7. A skip after a clean step: the residuals rescaled by the scaler's change, the rest bit-unchanged. From the
    # straight run's checkpoint after STEPS, one step at a time (--resume) until a step after a clean one overflows.
    if name == "pp2-quant" and straight:
        prev, prev_clean, pair = os.path.join(ck, f"{name}-a"), found[-1] == 0, None
        for k in range(STEPS + 1, STEPS + 9):
            nxt = os.path.join(ck, f"{name}-chain-{k}")
            if not ptrain_run(name, "--steps", str(k), "--resume", prev, "--checkpoint", nxt):
                break
            old, new = (struct.unpack("<3f", read_checkpoint(checkpoint_files(c)[0])["loss_scaler"]) for c in (prev, nxt))
            skipped = new == megatron_update(old, 1, hyst, window) != megatron_update(old, 0, hyst, window)
            if skipped and prev_clean:
                pair = (prev, nxt, k)
                break
            prev, prev_clean = nxt, not skipped
        check(pair is not None, f"{name}: a step after a clean one overflows within {STEPS + 8} steps")
        if pair:
            before, after, k = pair
            a, b = checkpoint_files(before), checkpoint_files(after)
            check(len(a) == len(b) == 2, f"{name}: a checkpoint file per stage before and after step {k}")
            residuals = set()
            for x, y in zip(a, b):
                sa, sb = read_checkpoint(x), read_checkpoint(y)
                tag = f"{name}: {os.path.basename(y)} (step {k - 1} clean, step {k} skipped)"
                same = [key for key in sa if key in initial or key.endswith(("/adam_m", "/adam_v"))]
                check(same and all(sa[key] == sb[key] for key in same), f"{tag}: {len(same)} parameters and moments "
                      "bit-unchanged by the skipped step")
                counters = [tuple(struct.unpack("<q", st[key])[0] for key in ("step", "optimizer_step")) for st in (sa, sb)]
                check(counters[1] == (counters[0][0] + 1, counters[0][1]) and counters[1][0] == k,
                      f"{tag}: (step, optimizer_step) {counters[0]} -> {counters[1]}: the iteration advances, the "
                      "optimizer's count not")
                old, new = (struct.unpack("<3f", st["loss_scaler"]) for st in (sa, sb))
                check(new == megatron_update(old, 1, hyst, window) and new[0] == old[0] / 2, f"{tag}: the scaler "
                      f"{old} -> {new}, Megatron's update on an overflow: backed off")
                ratio = np.float32(new[0]) / np.float32(old[0])
                for key in (key for key in sa if key.endswith("/residual")):
                    residuals.add(key)
                    ea, eb = (np.frombuffer(st[key], dtype=np.float32) for st in (sa, sb))
                    gradient = key.startswith("pp1->0/")  # the backward link: loss-scaled gradient units
                    want = ea * ratio if gradient else ea
                    check(np.isfinite(ea).all() and np.abs(ea).max() > 0 and want.tobytes() == eb.tobytes(),
                          f"{tag}: {key} after the skipped step is the kept one" +
                          (f" times new / old scale = {ratio}" if gradient else " (activation units)") +
                          ", bit for bit")
            check({"pp1->0/residual", "pp0->1/residual"} <= residuals, f"{name}: both links' residuals are checked "
                  f"({sorted(residuals)})")
# 5. ZeRO-1 under the scaler: each rank unscales its reduce-scattered shards, the flags summed over every rank: the same
# skips as plain dp (the same scaler states) and the same losses (AdamW is elementwise; the executor's, and the
# compiled step's above).
if "dp2" in results and "dp2-zero1" in results:
    (plain, plain_states), (zero, zero_states) = results["dp2"], results["dp2-zero1"]
    worst = max(abs(x - y) / abs(y) for x, y in zip(zero, plain))
    print(f"dp2-zero1 against dp2: losses {zero} vs {plain}, worst relative difference {worst:.3e}")
    check(zero_states == plain_states, "dp2-zero1: the scaler states of every step are plain dp 2's")
    check(len(zero) == STEPS and worst <= 1e-6, "dp2-zero1: the losses within 1e-6 relative of plain dp 2's")
finish()
