#!/usr/bin/env python3
"""CTest codegen-cpu-zero: ZeRO-1 (ptrain-compile --zero 1, docs/DistributedOptimizer.md) under mpirun.

    zero_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

1. ptrain-compile the bundled GPT at --dp 2 and --dp 4 (pp 1, buckets of at most 1,000,000 bytes), each plain and
   with --zero 1; plan.json records "zero": 1 (and nothing for plain dp).
2. ptrain-run each for 5 steps with --memory-log: the step losses of --zero 1 equal plain dp's at the same dp
   within 1e-6 relative (the reduce-scatter averages the same values as the all-reduce; AdamW is elementwise),
   and every rank's optimizer state (ptrain-run --memory-log's optimizer_state_bytes, the resident bytes of the
   states of kind optimizer_moment, all of whose pages the run touched) is exactly the sum of the moment states' shard sizes in plan.json, between
   plain dp's / dp and that plus the padding (at most dp - 1 f32 per bucket and moment).
3. The multi-rank executor (ptrain-interpret --multi-rank) on the dp 2 ZeRO-1 step.mlir and the same global
   batches: within 1e-5 relative of the MPI run.
4. Resume at the same dp: 3 steps with --checkpoint, then --resume to 5: the losses of steps 4-5 and every
   replica's checkpoint file (each holds its own moment shards: PATH and PATH.dp1) byte for byte those of 5
   straight steps.
5. Resume at another dp (python/ptrain/reshard.py gathers the old replicas' moment shards and re-splits them):
   the dp 2 ZeRO-1 checkpoint at dp 4, and at dp 3 for step 4 (a bucket padded from 237,568 to 237,570
   elements) then back at dp 2 for step 5 (the padding cut), give the losses of the same resumes of plain dp's
   checkpoints within 1e-6 relative (plain dp copies replica 0's whole moments).
6. Clipping: --clip-norm 0.1 at dp 2 with and without --zero 1, 3 steps: the same losses within 1e-6 relative,
   and different from the unclipped ones (clipping is active).
7. ptrain-compile refuses --zero 1 with --dp 1, --optimizer sgd and auto with dp codecs other than
   PowerSGD (auto-dp-codecs=bf16), each by name.
8. The compressed reduce-scatter (docs/DistributedOptimizer.md, "Compression"): --zero 1 --policy mcbench
   --compress-options "dp-codec=quant:bits=8,granularity=block,block-size=256" at dp 2: plan.json lists one
   error-feedback residual per bucket; the executor on its step.mlir within 1e-4 relative of mpirun over 5 steps
   (a gradient one ulp off may land on the neighbouring 8-bit level); the runtime's dp byte counters below
   uncompressed ZeRO-1's by exactly what the codes save (per bucket and rank: 4 N' bytes of the reduce-scatter
   against 2 x (N' / 2 packed bytes + one f32 scale per block of 256)); 30 steps within 3% of uncompressed
   ZeRO-1's loss; 3 steps + --resume to 5 equal to 5 straight steps (losses and both replicas' checkpoints,
   residuals included, byte for byte); the dp 2 checkpoint resumed at dp 4 (the residuals averaged and their
   padding re-cut, python/ptrain/reshard.py) trains on within 3% of the same resume of uncompressed ZeRO-1.
9. PowerSGD on ZeRO-1's buckets (docs/DistributedOptimizer.md, "Compression"): --policy optimus-cc
   --compress-options sc-all=true at dp 2 x pp 2 (PowerSGD with error feedback on every stage's dp gradients,
   fused embedding sync on the tied embedding), with and without --zero 1: each gradient is all-reduced
   compressed alone and each rank keeps its shard of the average, so the 3 step losses equal plain dp's
   within 1e-6 relative; the step posts as many compressed all-reduces as plain dp's and no reduce-scatter
   (the tied gradient, reduced by the fused sync, is not compressed again). --policy auto with --zero 1 (its dp
   candidates PowerSGD only) compiles and trains 3 steps.
"""

import filecmp
import json
import math
import os
import sys

from e2e import check, corpus, executor_losses, failures, finish, global_batches, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
STEPS, SEED = 5, 3
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu", "--bucket-bytes",
          "1000000"]
configs = {f"dp{d}{'z' if z else ''}": ["--dp", str(d)] + (["--zero", "1"] if z else []) for d in (2, 3, 4)
           for z in (0, 1)}
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
plans = {name: json.load(open(os.path.join(work, name, "plan.json"))) for name in configs}
check(plans["dp2z"].get("zero") == 1 and "zero" not in plans["dp2"], "plan.json: zero = 1 with --zero 1, absent without")

logs, memory = {}, {}
for name in ("dp2", "dp2z", "dp4", "dp4z"):
    log, mem = os.path.join(work, f"{name}.json"), os.path.join(work, f"{name}.mem")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(STEPS),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--memory-log", mem, "--timeout", "120"],
                  timeout=600)
    check(rc == 0, f"ptrain-run {name} {STEPS} steps" + ("" if rc == 0 else ":\n" + out))
    if rc == 0:
        logs[name] = json.load(open(log))
        dp = plans[name]["dp"]
        memory[name] = [json.load(open(f"{mem}.rank{r}.json")) for r in range(dp)]

for dp in (2, 4):
    plain, zero = f"dp{dp}", f"dp{dp}z"
    if plain not in logs or zero not in logs:
        continue
    a, b = logs[plain]["train_loss"], logs[zero]["train_loss"]
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    print(f"dp {dp}: plain {a}\n      zero-1 {b}\n      worst relative difference {worst:.3e}")
    check(len(a) == len(b) == STEPS and worst <= 1e-6, f"dp {dp}: --zero 1 losses within 1e-6 relative of plain dp")
    moments = [s for s in plans[zero]["states"] if s["kind"] == "optimizer_moment"]
    expected = 4 * sum(math.prod(s["shape"]) for s in moments)
    buckets = len(moments) // 2
    plain_bytes = memory[plain][0]["optimizer_state_bytes"]
    ranks = [m["optimizer_state_bytes"] for m in memory[zero]]
    print(f"dp {dp}: optimizer state bytes per rank: plain {plain_bytes}, zero-1 {ranks} "
          f"(plain / dp = {plain_bytes / dp:.0f}; {buckets} buckets)")
    check(all(r == expected for r in ranks), f"dp {dp}: every rank's optimizer state is its moment shards "
          f"({expected} bytes)")
    check(plain_bytes / dp <= expected <= plain_bytes / dp + 2 * 4 * (dp - 1) * buckets,
          f"dp {dp}: optimizer state per rank is 1 / dp of plain dp's plus the padding")

# 3. The executor on the same IR and global batches.
if "dp2z" in logs:
    tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED,
                            rows=plans["dp2z"]["global_batch"], seq=plans["dp2z"]["seq"])
    executor = executor_losses(BIN, MODEL, os.path.join(work, "dp2z"), tokens, STEPS, timeout=600)
    if executor is not None:
        worst = max(abs(x - y) / abs(x) for x, y in zip(executor, logs["dp2z"]["train_loss"]))
        print(f"executor {executor}: worst relative difference to MPI {worst:.3e}")
        check(len(executor) == STEPS and worst <= 1e-5, "executor within 1e-5 relative of the MPI run")

# 4. Resume at the same dp, bit for bit; at another dp refused.
ck = os.path.join(work, "ck")
os.makedirs(ck)
runs = {"straight": ["--steps", str(STEPS), "--checkpoint", os.path.join(ck, "a")],
        "first": ["--steps", "3", "--checkpoint", os.path.join(ck, "b")],
        "resumed": ["--steps", str(STEPS), "--resume", os.path.join(ck, "b"), "--checkpoint", os.path.join(ck, "c")]}
resumed = {}
for name, flags in runs.items():
    log = os.path.join(work, f"ck-{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "dp2z"), "--data", data, "--val-batches", "1",
                   "--seed", str(SEED), "--log", log, "--timeout", "120", *flags], timeout=600)
    check(rc == 0, f"ptrain-run dp2z {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    resumed[name] = json.load(open(log)) if rc == 0 else {}
if all(resumed.values()):
    check(resumed["resumed"]["train_loss"] == resumed["straight"]["train_loss"][3:],
          f"resumed steps 4-5 {resumed['resumed']['train_loss']} equal the straight run's")
    for suffix in ("", ".dp1"):
        a, c = os.path.join(ck, "a" + suffix), os.path.join(ck, "c" + suffix)
        check(os.path.isfile(a) and os.path.isfile(c) and filecmp.cmp(a, c, shallow=False),
              f"checkpoint PATH{suffix} after 3 + 2 steps equals 5 straight steps byte for byte")
    check(not filecmp.cmp(os.path.join(ck, "a"), os.path.join(ck, "a.dp1"), shallow=False),
          "the replicas' checkpoints differ (each holds its own moment shards)")

# 5. Another dp: ZeRO-1's resharded moments against plain dp's copied ones, the same chain of resumes.
def resume_chain(zero):
    """Step losses of: dp 2 for 3 steps, then dp 4 to 5; and dp 3 to 4 (checkpoint), then dp 2 to 5."""
    z = "z" if zero else ""
    base = os.path.join(ck, "b") if zero else os.path.join(ck, "plain")
    losses = {}
    chain = [("plain-first", "dp2", ["--steps", "3", "--checkpoint", base]) if not zero else None,
             ("dp4", f"dp4{z}", ["--steps", str(STEPS), "--resume", base]),
             ("dp3", f"dp3{z}", ["--steps", "4", "--resume", base, "--checkpoint", base + "-dp3"]),
             ("dp3-dp2", f"dp2{z}", ["--steps", str(STEPS), "--resume", base + "-dp3"])]
    for name, plan, flags in filter(None, chain):
        log = os.path.join(work, f"chain-{z}{name}.json")
        rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, plan), "--data", data, "--val-batches",
                       "1", "--seed", str(SEED), "--log", log, "--timeout", "120", *flags], timeout=600)
        check(rc == 0, f"ptrain-run {plan} {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
        if zero and name == "dp4":
            check("resharded 10 ZeRO-1 AdamW moment shard(s) from the 2 old replicas' files" in out,
                  "the launcher names the resharded ZeRO-1 moments")
        losses[name] = json.load(open(log))["train_loss"] if rc == 0 else []
    return losses


def padded_sizes(name):
    plan = plans[name]
    return [s["shape"][0] * plan["dp"] for s in plan["states"] if s["key"].endswith("/adam_m") and "zero" in s["key"]]


check(padded_sizes("dp3z") != padded_sizes("dp2z") and len(padded_sizes("dp3z")) == len(padded_sizes("dp2z")),
      f"dp 3 pads a bucket that dp 2 does not (padded sizes {padded_sizes('dp2z')} and {padded_sizes('dp3z')})")
plain_chain, zero_chain = resume_chain(False), resume_chain(True)
for name in ("dp4", "dp3", "dp3-dp2"):
    a, b = plain_chain.get(name, []), zero_chain.get(name, [])
    worst = max((abs(x - y) / abs(x) for x, y in zip(a, b)), default=float("inf"))
    print(f"resume {name}: plain {a}, zero-1 {b}, worst relative difference {worst:.3e}")
    check(len(a) == len(b) > 0 and worst <= 1e-6, f"resume {name}: ZeRO-1's resharded moments train as plain dp's")

# 6. Clipping in generated C++: the norm of the dp shards (all-reduced over [dp]) against plain dp's.
clipped = {}
for name, flags in (("clip", []), ("clipz", ["--zero", "1"])):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--dp", "2", "--clip-norm", "0.1", *flags, *common,
                   "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile --dp 2 --clip-norm 0.1 {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", "3",
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120"], timeout=600)
    check(rc == 0, f"ptrain-run {name} 3 steps" + ("" if rc == 0 else ":\n" + out))
    clipped[name] = json.load(open(log))["train_loss"] if rc == 0 else []
a, b = clipped.get("clip", []), clipped.get("clipz", [])
worst = max((abs(x - y) / abs(x) for x, y in zip(a, b)), default=float("inf"))
print(f"clip-norm 0.1 at dp 2: plain {a}, zero-1 {b}, worst relative difference {worst:.3e}")
check(len(a) == len(b) == 3 and worst <= 1e-6, "clip-norm 0.1: --zero 1 losses within 1e-6 relative of plain dp")
check(len(a) == 3 and "dp2" in logs and a != logs["dp2"]["train_loss"][:3], "clipping changes the losses")

# 7. The driver's refusals.
refusals = {("--dp", "1"): "needs --dp > 1 (got --dp 1)",
            ("--dp", "2", "--optimizer", "sgd"): "needs --optimizer adamw (got --optimizer sgd)",
            ("--dp", "2", "--policy", "auto", "--compress-options", "auto-dp-codecs=bf16"):
                "under ZeRO-1 auto searches PowerSGD only on the data-parallel gradients"}
for flags, message in refusals.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--zero", "1", *flags, "-o",
                   os.path.join(work, "refused")])
    check(rc != 0 and message in out and not os.path.exists(os.path.join(work, "refused", "plan.json")),
          f"ptrain-compile --zero 1 {' '.join(flags)} is refused: {message}")

# 8. The quantized reduce-scatter.
Q8, LONG = "dp-codec=quant:bits=8,granularity=block,block-size=256", 30
for name, flags in (("dp2zq8", ["--dp", "2"]), ("dp4zq8", ["--dp", "4"])):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, "--zero", "1", "--policy", "mcbench",
                   "--compress-options", Q8, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)} --zero 1 --policy mcbench {Q8}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()
plans["dp2zq8"] = json.load(open(os.path.join(work, "dp2zq8", "plan.json")))
residuals = sorted(s["key"] for s in plans["dp2zq8"]["states"] if s["key"].endswith("/residual"))
shards = [s["shape"][0] for s in plans["dp2zq8"]["states"] if s["key"].endswith("/adam_m")]
print(f"dp2zq8: residuals {residuals}, moment shards {shards}")
check(residuals == sorted(f"sc/stage0.zero_bucket{k}/residual" for k in range(len(shards))),
      "plan.json: one error-feedback residual per ZeRO-1 bucket")
q8 = {}
for name, steps in (("dp2z", LONG), ("dp2zq8", LONG)):
    log = os.path.join(work, f"long-{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120"], timeout=900)
    check(rc == 0, f"ptrain-run {name} {steps} steps" + ("" if rc == 0 else ":\n" + out))
    q8[name] = json.load(open(log)) if rc == 0 else {}
if all(q8.values()):
    a, b = q8["dp2z"]["train_loss"], q8["dp2zq8"]["train_loss"]
    tail = lambda x: sum(x[-5:]) / 5
    print(f"{LONG} steps: ZeRO-1 {a[:3]} ... {a[-3:]}\n      8-bit {b[:3]} ... {b[-3:]}\n"
          f"      mean of the last 5: {tail(a):.6f} vs {tail(b):.6f} ({100 * (tail(b) / tail(a) - 1):+.3f}%)")
    check(len(b) == LONG and abs(tail(b) / tail(a) - 1) <= 0.03, "8-bit reduce-scatter within 3% of uncompressed")
    check(a != b, "the quantized plan's losses differ from the uncompressed ones (the codec is in the step)")

    def code_bytes(c):  # ptrain_codec_code_bytes of 8-bit block-256 quantization (symmetric) on c elements
        align8 = lambda x: (x + 7) // 8 * 8
        return align8(c) + align8(4 * ((c + 255) // 256))  # packed bytes, then one f32 scale per block
    dp_bytes = {n: q8[n]["traffic"]["dp collectives"]["bytes"] / LONG for n in q8}
    saved = 2 * sum(4 * 2 * c - 2 * code_bytes(c) for c in shards)  # 2 ranks, per step
    print(f"dp collectives per step: ZeRO-1 {dp_bytes['dp2z']:,.0f} B, 8-bit {dp_bytes['dp2zq8']:,.0f} B "
          f"(ratio {dp_bytes['dp2zq8'] / dp_bytes['dp2z']:.4f}; the codes save {saved:,} B)")
    check(dp_bytes["dp2z"] - dp_bytes["dp2zq8"] == saved, "the dp counters drop by exactly what the codes save")

# The executor on the quantized step.mlir.
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), STEPS, SEED,
                        rows=plans["dp2zq8"]["global_batch"], seq=plans["dp2zq8"]["seq"])
executor = executor_losses(BIN, MODEL, os.path.join(work, "dp2zq8"), tokens, STEPS, timeout=600)
if executor is not None and q8.get("dp2zq8"):
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, q8["dp2zq8"]["train_loss"]))
    print(f"8-bit: executor {executor}: worst relative difference to MPI {worst:.3e}")
    check(len(executor) == STEPS and worst <= 1e-4, "8-bit: executor within 1e-4 relative of the MPI run")

# Resume with the residuals in the checkpoint: at the same dp bit for bit, at dp 4 resharded.
qk = os.path.join(work, "qk")
os.makedirs(qk)
runs = {"straight": ("dp2zq8", ["--steps", str(STEPS), "--checkpoint", os.path.join(qk, "a")]),
        "first": ("dp2zq8", ["--steps", "3", "--checkpoint", os.path.join(qk, "b")]),
        "resumed": ("dp2zq8", ["--steps", str(STEPS), "--resume", os.path.join(qk, "b"), "--checkpoint",
                               os.path.join(qk, "c")]),
        "dp4": ("dp4zq8", ["--steps", str(STEPS), "--resume", os.path.join(qk, "b")])}
resumed = {}
for name, (plan, flags) in runs.items():
    log = os.path.join(work, f"qk-{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, plan), "--data", data, "--val-batches", "1",
                   "--seed", str(SEED), "--log", log, "--timeout", "120", *flags], timeout=600)
    check(rc == 0, f"ptrain-run {plan} {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    if name == "dp4" and rc == 0:
        check("averaged 'sc/stage0.zero_bucket0/residual'" in out, "the launcher names the averaged residuals")
    resumed[name] = json.load(open(log)) if rc == 0 else {}
if all(resumed.values()):
    check(resumed["resumed"]["train_loss"] == resumed["straight"]["train_loss"][3:],
          f"8-bit: resumed steps 4-5 {resumed['resumed']['train_loss']} equal the straight run's")
    for suffix in ("", ".dp1"):
        a, c = os.path.join(qk, "a" + suffix), os.path.join(qk, "c" + suffix)
        check(os.path.isfile(a) and os.path.isfile(c) and filecmp.cmp(a, c, shallow=False),
              f"8-bit: checkpoint PATH{suffix} after 3 + 2 steps equals 5 straight steps byte for byte")
    a, b = zero_chain.get("dp4", []), resumed["dp4"]["train_loss"]
    worst = max((abs(x - y) / abs(x) for x, y in zip(a, b)), default=float("inf"))
    print(f"resume at dp 4: uncompressed ZeRO-1 {a}, 8-bit {b}, worst relative difference {worst:.3e}")
    check(len(a) == len(b) > 0 and worst <= 0.03, "8-bit resumed at dp 4 within 3% of uncompressed ZeRO-1's resume")

# 9. PowerSGD on the ZeRO-1 buckets, against plain dp's PowerSGD.
SC = ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--policy", "optimus-cc", "--compress-options", "sc-all=true"]
powersgd = {}
AUTOZ = ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--policy", "auto", "--zero", "1"]
for name, flags in (("sc", SC), ("scz", SC + ["--zero", "1"]), ("autoz", AUTOZ)):
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
    if rc != 0:
        continue
    step = open(os.path.join(work, name, "step.mlir")).read()
    powersgd[name + "_ops"] = (step.count("ptrain.compressed_all_reduce_start"), step.count("reduce_scatter_start"))
    log = os.path.join(work, f"{name}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", "3",
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120"], timeout=600)
    check(rc == 0, f"ptrain-run {name} 3 steps" + ("" if rc == 0 else ":\n" + out))
    powersgd[name] = json.load(open(log))["train_loss"] if rc == 0 else []
if "sc_ops" in powersgd and "scz_ops" in powersgd:
    print(f"PowerSGD: (compressed all-reduces, reduce-scatters) plain dp {powersgd['sc_ops']}, "
          f"ZeRO-1 {powersgd['scz_ops']}")
    check(powersgd["sc_ops"][0] > 0 and powersgd["scz_ops"] == (powersgd["sc_ops"][0], 0),
          "PowerSGD under ZeRO-1: the same compressed all-reduces as plain dp, no reduce-scatter")
a, b = powersgd.get("sc", []), powersgd.get("scz", [])
worst = max((abs(x - y) / abs(x) for x, y in zip(a, b)), default=float("inf"))
print(f"PowerSGD at dp 2 x pp 2: plain dp {a}, zero-1 {b}, worst relative difference {worst:.3e}")
check(len(a) == len(b) == 3 and worst <= 1e-6, "PowerSGD: --zero 1 losses within 1e-6 relative of plain dp's")
check(len(powersgd.get("autoz", [])) == 3 and all(math.isfinite(x) for x in powersgd.get("autoz", [])),
      f"--zero 1 --policy auto trains 3 steps: {powersgd.get('autoz')}")
finish()
