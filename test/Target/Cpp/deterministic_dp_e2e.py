#!/usr/bin/env python3
"""CTest codegen-cpu-deterministic-dp: ptrain-compile --deterministic-dp (docs/Runtime.md, "Deterministic data
parallelism"): the step's gradients and losses are summed as one pairwise tree over the global micro-batches, so
one global batch split as dp x micro-batches gives the same bits at every dp, and a checkpoint resumes bit-equal
at another dp degree.

    deterministic_dp_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT (vocabulary 256), AdamW lr 1e-3, on a Megatron indexed dataset of Python standard-library files
(byte-level ids, end-of-document 0), global batch G = 4 micro-batches of 4 rows:
1. pp 1: dp 1 x 4 micro-batches, dp 2 x 2 and dp 4 x 1, 4 steps each: the losses, the validation losses and
   every state of the final checkpoints (parameters, AdamW moments, step) bit-equal. 1b: with a weighted mean
   (--ignore-index 10, fractional --class-weights), dp 1 x 4 and dp 2 x 2 for 3 steps: the same. 1c: at tp 2,
   dp 1 x 4 and dp 2 x 2 for 3 steps: the same, both tp ranks' states.
2. Control: the same dp 1 and dp 2 plans without --deterministic-dp: their parameters after 4 steps differ (the
   sequential accumulation and MPI's average are another order), so the mode is what makes them equal.
3. Resume at another dp (pp 1): the dp 2 run checkpointed after step 2, resumed at dp 1 and at dp 4 for steps 3..4:
   losses, checkpoint states and data position bit-equal to the straight dp 2 run of 4 steps.
4. pp 2: dp 2 x pp 2 straight for 4 steps, and its checkpoint after step 2 resumed at dp 1 x pp 2 for steps
   3..4: losses and every stage's checkpoint states bit-equal to the straight run; dp 1 x pp 2 under GPipe
   (another backward order) for 4 steps: the same.
5. The multi-rank executor (ptrain-interpret --multi-rank, the lowered step's oracle) on the pp 1 plans, 2 steps
   on the byte corpus's global batches: dp 1, 2 and 4 print the same losses (9 digits, a float32's round trip),
   and the generated dp 2 step (ptrain-run on the same batches) is within 1e-5 relative of them.
6. The constraints, named before anything is built: --dp 3, --policy optimus-cc.
7. fp16's loss scaler (docs/MixedPrecision.md, "The scaler with deterministic-dp"), --initial-loss-scale 2^27
   --loss-scale-window 2 (a real overflow at the start): dp 1 x 4 and dp 2 x 2 for 6 steps give the same losses and
   every checkpoint state bit for bit (scaler, both step counters, parameters, moments), some steps skipped and
   some not; the dp 2 run checkpointed after step 3 and resumed at dp 1 for steps 4..6 equals both.
"""

import json
import os
import struct
import sys

from e2e import (check, corpus, executor_losses, failures, finish, global_batches, read_checkpoint, run, setup,
                 stdlib_megatron)

build, source, work, BIN, MODEL = setup(sys.argv)
mega, _ = stdlib_megatron(work, 120, 110)

COMMON = ["--lr", "1e-3", "--warmup-steps", "2", "--total-steps", "100", "--target", "cpu"]


def compile_plan(name, dp, pp, micro_batches, deterministic=True, schedule="1f1b", extra=()):
    flags = ["--dp", str(dp), "--pp", str(pp), "--micro-batches", str(micro_batches), "--schedule", schedule, *COMMON,
             "-o", os.path.join(work, name), *extra] + (["--deterministic-dp"] if deterministic else [])
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags], timeout=600)
    check(rc == 0, f"ptrain-compile {' '.join(flags[:8])}{' --deterministic-dp' if deterministic else ''}" +
          ("" if rc == 0 else ":\n" + out))
    return os.path.join(work, name)


def ptrain_run(plan, name, steps, *extra):
    os.makedirs(os.path.join(work, name), exist_ok=True)
    rc, out = run([os.path.join(BIN, "ptrain-run"), plan, "--data", mega, "--steps", str(steps), "--val-batches", "2",
                   "--val-every", str(steps), "--no-plots", "--no-tensorboard", "--timeout", "120",
                   "--checkpoint", ck(name), "--log", os.path.join(work, name, "log.json"), *extra], timeout=600)
    check(rc == 0, f"ptrain-run {os.path.basename(plan)} ({name}): {steps} steps {' '.join(extra)}" +
          ("" if rc == 0 else ":\n" + out))
    return out


def ck(name):
    return os.path.join(work, name, "ck")


def log(name):
    return json.load(open(os.path.join(work, name, "log.json")))


def states(name, stage=None):
    """The checkpoint's states that are no codec state (there are none here): {key: bytes}; every stage's with
    pp 2 (stage None: the single file of pp 1)."""
    path = ck(name) + ("" if stage is None else f".stage{stage}")
    return read_checkpoint(path)


def same_states(a, b, stages=(None,), tp=None):
    """(equal, how many states, the first key that differs); with tp, every tensor-parallel rank's file."""
    n, first = 0, None
    files = [s for s in stages] if tp is None else [f"tp{t}" for t in range(tp)]
    for s in files:
        sa, sb = (read_checkpoint(ck(x) + f".{s}") if isinstance(s, str) else states(x, s) for x in (a, b))
        if sorted(sa) != sorted(sb):
            return False, n, f"the keys differ: {sorted(set(sa) ^ set(sb))[:3]}"
        for key in sorted(sa):
            n += 1
            if sa[key] != sb[key] and first is None:
                first = key
    return first is None, n, first


# 1. pp 1: one global batch of 4 micro-batches at dp 1, 2, 4.
plans = {dp: compile_plan(f"plan-dp{dp}", dp, 1, 4 // dp) for dp in (1, 2, 4)}
if failures:
    finish()
plan_json = json.load(open(os.path.join(plans[2], "plan.json")))
check(plan_json.get("deterministic_dp") is True and plan_json["global_batch"] == 16,
      f"plan.json records deterministic_dp and the global batch 16: {plan_json.get('deterministic_dp')}, "
      f"{plan_json['global_batch']}")
for dp in (1, 2, 4):
    ptrain_run(plans[dp], f"straight-dp{dp}", 4)
if failures:
    finish()
losses = {dp: log(f"straight-dp{dp}")["train_loss"] for dp in (1, 2, 4)}
vals = {dp: log(f"straight-dp{dp}")["val_loss"] for dp in (1, 2, 4)}
for dp in (1, 2, 4):
    print(f"dp {dp}: train {losses[dp]} val {vals[dp]}")
for dp in (2, 4):
    check(losses[dp] == losses[1] and vals[dp] == vals[1],
          f"dp {dp} x {4 // dp} micro-batches: the 4 training losses and the validation losses bit-equal to dp 1 x 4")
    equal, n, first = same_states(f"straight-dp{dp}", "straight-dp1")
    check(equal and n > 100, f"dp {dp}: every state of the checkpoint after step 4 bit-equal to dp 1's ({n} states"
          + ("" if equal else f"; first difference: {first}") + ")")

# 1b. A weighted mean (--ignore-index and fractional --class-weights): the step's weight sum is a tree too.
weights = os.path.join(work, "class_weights.txt")
with open(weights, "w") as f:
    f.write(" ".join(repr(0.3 + (i % 7) * 0.15) for i in range(256)))
weighted = {dp: compile_plan(f"weighted-dp{dp}", dp, 1, 4 // dp, extra=("--ignore-index", "10", "--class-weights",
                                                                        weights)) for dp in (1, 2)}
if not failures:
    for dp in (1, 2):
        ptrain_run(weighted[dp], f"weighted-dp{dp}", 3)
if not failures:
    equal, n, diff = same_states("weighted-dp2", "weighted-dp1")
    check(log("weighted-dp2")["train_loss"] == log("weighted-dp1")["train_loss"] and equal and
          log("weighted-dp1")["train_loss"] != losses[1][:3],
          f"--ignore-index 10 --class-weights: dp 2 x 2 bit-equal to dp 1 x 4 after 3 steps, losses and {n} states"
          + ("" if equal else f" (first difference: {diff})") + f"; losses {log('weighted-dp1')['train_loss']}")

# 1c. Tensor parallelism beside it: dp 2 x tp 2 (2 micro-batches) and dp 1 x tp 2 (4), 3 steps.
tensor = {dp: compile_plan(f"tp2-dp{dp}", dp, 1, 4 // dp, extra=("--tp", "2")) for dp in (1, 2)}
if not failures:
    for dp in (1, 2):
        ptrain_run(tensor[dp], f"tp2-dp{dp}", 3)
if not failures:
    equal, n, diff = same_states("tp2-dp2", "tp2-dp1", tp=2)
    check(log("tp2-dp2")["train_loss"] == log("tp2-dp1")["train_loss"] and equal and n > 100,
          f"tp 2: dp 2 x 2 bit-equal to dp 1 x 4 after 3 steps, losses and {n} states of both tp ranks"
          + ("" if equal else f" (first difference: {diff})"))

# 2. Control: without --deterministic-dp, dp 1 and dp 2 differ in the last bits.
control = {dp: compile_plan(f"control-dp{dp}", dp, 1, 4 // dp, deterministic=False) for dp in (1, 2)}
if not failures:
    for dp in (1, 2):
        ptrain_run(control[dp], f"control-dp{dp}", 4)
    equal, n, first = same_states("control-dp2", "control-dp1")
    params = [k for k in states("control-dp1") if "/" not in k]
    differ = [k for k in params if states("control-dp1")[k] != states("control-dp2")[k]]
    check(not equal and differ, f"control: without --deterministic-dp the dp 2 run's parameters differ from dp 1's "
          f"({len(differ)} of {len(params)} parameters differ)")

# 3. Resume at another dp (pp 1): the dp 2 checkpoint after step 2, resumed at dp 1 and at dp 4.
ptrain_run(plans[2], "first-dp2", 2)
for dp in (1, 4):
    out = ptrain_run(plans[dp], f"resumed-dp{dp}", 4, "--resume", ck("first-dp2"))
    check(f"was written at dp = 2; resharded to dp = {dp}" in out, f"the resume at dp {dp} reshards the dp 2 "
          "checkpoint")
if failures:
    finish()
first = log("first-dp2")["train_loss"]
for dp in (1, 4):
    resumed = log(f"resumed-dp{dp}")["train_loss"]
    print(f"resumed at dp {dp}: {first} + {resumed}")
    check(first + resumed == losses[2], f"dp 2 for steps 1..2, then dp {dp} for 3..4: the losses bit-equal to the "
          "straight dp 2 run's")
    equal, n, diff = same_states(f"resumed-dp{dp}", "straight-dp2")
    check(equal and n > 100, f"resumed at dp {dp}: every state after step 4 bit-equal to the straight dp 2 run's "
          f"({n} states" + ("" if equal else f"; first difference: {diff}") + ")")
    ours, theirs = json.load(open(ck(f"resumed-dp{dp}") + ".json")), json.load(open(ck("straight-dp2") + ".json"))
    check(ours["data"] == theirs["data"], f"resumed at dp {dp}: the data position after step 4 is the straight "
          f"run's ({ours['data'].get('consumed_samples')} samples)")

# 4. pp 2: dp 2 x pp 2 (2 micro-batches) straight; its checkpoint after step 2 resumed at dp 1 x pp 2 (4).
pp2 = compile_plan("plan-dp2-pp2", 2, 2, 2)
pp2_dp1 = compile_plan("plan-dp1-pp2", 1, 2, 4)
gpipe = compile_plan("plan-dp1-pp2-gpipe", 1, 2, 4, schedule="gpipe")
if failures:
    finish()
ptrain_run(pp2, "pp2-straight", 4)
ptrain_run(pp2, "pp2-first", 2)
out = ptrain_run(pp2_dp1, "pp2-resumed-dp1", 4, "--resume", ck("pp2-first"))
if failures:
    finish()
straight, first, resumed = (log(n)["train_loss"] for n in ("pp2-straight", "pp2-first", "pp2-resumed-dp1"))
print(f"pp 2: straight dp 2 {straight}\n      dp 2 then dp 1 {first} + {resumed}")
check(first + resumed == straight, "pp 2: dp 2 for steps 1..2, then dp 1 for 3..4: the losses bit-equal to the "
      "straight dp 2 x pp 2 run's")
equal, n, diff = same_states("pp2-resumed-dp1", "pp2-straight", stages=(0, 1))
check(equal and n > 100, f"pp 2: every state of both stages after step 4 bit-equal to the straight run's ({n} states"
      + ("" if equal else f"; first difference: {diff}") + ")")
# GPipe runs the backwards in another order than 1F1B: the tree pairs the same micro-batches.
ptrain_run(gpipe, "pp2-gpipe-dp1", 4)
if not failures:
    equal, n, diff = same_states("pp2-gpipe-dp1", "pp2-straight", stages=(0, 1))
    check(log("pp2-gpipe-dp1")["train_loss"] == straight and equal,
          "pp 2: dp 1 x 4 micro-batches under GPipe: the losses and every state after step 4 bit-equal to the 1F1B "
          "dp 2 x pp 2 run's" + ("" if equal else f" (first difference: {diff})"))

# 5. The multi-rank executor on the pp 1 plans, over the byte corpus's global batches (run_data.py's batch()).
data = corpus(source, work)
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), 2, 0)
executor = {dp: executor_losses(BIN, MODEL, plans[dp], tokens, 2) for dp in (1, 2, 4)}
print(f"executor: {executor}")
check(executor[1] and len(executor[1]) == 2 and executor[2] == executor[1] and executor[4] == executor[1],
      "the multi-rank executor: dp 2 and dp 4 give dp 1's losses, all 9 digits")
rc, out = run([os.path.join(BIN, "ptrain-run"), plans[2], "--data", data, "--steps", "2", "--val-batches", "1",
               "--no-plots", "--no-tensorboard", "--timeout", "120", "--log", os.path.join(work, "bytes-dp2.json")],
              timeout=600)
check(rc == 0, "ptrain-run dp 2 on the byte corpus" + ("" if rc == 0 else ":\n" + out))
if rc == 0 and executor[2]:
    generated = json.load(open(os.path.join(work, "bytes-dp2.json")))["train_loss"]
    worst = max(abs(x - y) / abs(y) for x, y in zip(generated, executor[2]))
    print(f"generated dp 2 {generated}; worst relative difference to the executor {worst:.3e}")
    check(len(generated) == 2 and worst <= 1e-5, "the generated dp 2 step within 1e-5 relative of the executor")

# 7. fp16's loss scaler under deterministic-dp: the same skips and bits at every dp, resume across dp bit-equal.
FP16 = ("--precision", "fp16", "--initial-loss-scale", str(2 ** 27), "--loss-scale-window", "2")
half = {dp: compile_plan(f"fp16-dp{dp}", dp, 1, 4 // dp, extra=FP16) for dp in (1, 2)}
if not failures:
    for dp in (1, 2):
        ptrain_run(half[dp], f"fp16-dp{dp}", 6)
    ptrain_run(half[2], "fp16-dp2-3", 3)
if not failures:
    os.makedirs(os.path.join(work, "fp16-resumed"), exist_ok=True)
    ptrain_run(half[1], "fp16-resumed", 6, "--resume", ck("fp16-dp2-3"))
if not failures:
    fp16_losses = {name: log(name)["train_loss"] for name in ("fp16-dp1", "fp16-dp2", "fp16-resumed")}
    print(f"fp16 deterministic-dp losses: {fp16_losses}")
    final = states("fp16-dp1")
    counters = tuple(struct.unpack("<q", final[k])[0] for k in ("step", "optimizer_step"))
    scaler = struct.unpack("<3f", final["loss_scaler"])
    check(counters[0] == 6 and 0 < counters[1] < 6, f"fp16 deterministic-dp: (step, optimizer_step) = {counters}, "
          f"scaler {scaler}: some of the 6 steps skipped on the overflow, some not")
    check(fp16_losses["fp16-dp2"] == fp16_losses["fp16-dp1"], "fp16 deterministic-dp: dp 2 x 2 gives dp 1 x 4's 6 "
          "losses bit for bit")
    for other in ("fp16-dp2", "fp16-resumed"):
        equal, n, diff = same_states(other, "fp16-dp1")
        check(equal and n > 100, f"fp16 deterministic-dp: {other}'s checkpoint after step 6 bit-equal to dp 1's ({n} "
              "states, the scaler and both counters included" + ("" if equal else f"; first difference: {diff}") + ")")
    check(fp16_losses["fp16-resumed"] == fp16_losses["fp16-dp1"][3:], "fp16 deterministic-dp: resumed at dp 1 after "
          "dp 2's step 3, steps 4-6 give the straight run's losses")

# 6. The constraints, named.
for flags, expect in ((["--dp", "3", "--micro-batches", "2"], "must be powers of two"),
                      (["--dp", "2", "--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc"],
                       "use --policy none")):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, "--deterministic-dp", *COMMON, "-o",
                   os.path.join(work, "bad")], timeout=300)
    check(rc == 1 and expect in out and "Traceback" not in out,
          f"--deterministic-dp {' '.join(flags)}: exit 1 naming it:\n  " + out.strip())
finish()
