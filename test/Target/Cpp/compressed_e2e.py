#!/usr/bin/env python3
"""CTest codegen-cpu-compressed: compressed plans compiled to C++ and run under mpirun (issues 8 and 10).

    compressed_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

The bundled GPT, AdamW (lr 1e-3, warm-up 1), the same global batches of 16 x 64 bytes (seed 3):
1. --policy optimus-cc at pp=2 (1F1B, 4 micro-batches of 4 rows; CB = PowerSGD rank 16 with LEP on the cool-down
   send of link 1 -> 0) and at dp=2 x pp=2 (2 micro-batches; SC = DP PowerSGD rank 8 with error feedback on both
   stages, sc-all): 3 steps under mpirun give the losses of the multi-rank executor (ptrain-interpret
   --multi-rank, which runs the same codec kernels) on the same plan and tokens within 1e-5 relative (the
   executor computes model ops in double and rounds once; measured: equal to the printed 8 digits at pp=2,
   2e-7 relative at dp=2 x pp=2).
2. Exact-path PowerSGD (cb-rank=128 >= min(256, 128) on every backward send: the codes carry the gradient
   itself) is bit-equal to the uncompressed plan.
3. The runtime's byte counters: forward 0->1 = 4 x 4 x 64 x 128 x 4 bytes per step in both plans; backward 1->0
   = the same uncompressed, and (3 x 4 x 64 x 128 + (256 + 128) x 16) x 4 bytes (5 messages: P and Q) with
   optimus-cc. SC's dp collectives: for every ptrain.compressed_all_reduce_start of step.mlir, (n + m) r x 4
   bytes (P, then Q), or, when (n + m) r >= n m, the exact path's floats that carry M (n m of them, with P's
   section padded to 8 bytes where M continues into Q's: not the code's zero tail), per dp replica and step; the
   uncompressed all-reduce would send n m x 4.
4. Checkpoint after 3 steps, resume to 5 (ptrain-run --resume): losses and every stage's final checkpoint
   (parameters, moments, step, the link residual and warm-start Q) bit-identical to a straight 5-step run; the
   codec states are in stage 1's checkpoint and nonzero.
5. Errors: --policy without a pipeline, --compress-options without --policy, --resume of a missing checkpoint.
6. Interleaved 1F1B (--pp 2 --virtual-stages 2 --schedule interleaved, 4 micro-batches; docs/Compression.md,
   "Interleaved schedules"): --policy optimus-cc (CB on the 5 cool-down sends of the interleaved table, one
   residual and warm start per chunk boundary) gives the executor's losses within 1e-5 relative over 3 steps,
   and exact-path PowerSGD on every backward send is bit-equal to the uncompressed interleaved plan.
"""

import json
import math
import os
import re
import struct
import sys

from e2e import check, corpus, failures, finish, global_batches, read_checkpoint, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
SEED = 3
data = corpus(source, work)

common = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100", "--target", "cpu"]
pp2 = ["--pp", "2", "--micro-batches", "4"]
configs = {"none": pp2,
           "occ": pp2 + ["--policy", "optimus-cc"],
           "exact": pp2 + ["--policy", "optimus-cc", "--compress-options", "cb-rank=128 cb-sends=all sc=false"],
           "sc": ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000", "--policy",
                  "optimus-cc", "--compress-options", "sc-all=true sc-rank=8"]}
interleaved = ["--pp", "2", "--virtual-stages", "2", "--schedule", "interleaved", "--micro-batches", "4"]
configs.update({"inone": interleaved, "iocc": interleaved + ["--policy", "optimus-cc"],
                "iexact": interleaved + ["--policy", "optimus-cc", "--compress-options",
                                         "cb-rank=128 cb-sends=all sc=false"]})
for name, flags in configs.items():
    rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *flags, *common, "-o", os.path.join(work, name)])
    check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()

plan = json.load(open(os.path.join(work, "occ", "plan.json")))
keys = sorted(s["key"] for s in plan["codec_states"])
check(plan["policy"] == "optimus-cc" and keys == ["pp1->0/residual", "pp1->0/warm_start_q"],
      f"plan.json records the policy and the codec states: {plan['policy']}, {keys}")
sc_plan = json.load(open(os.path.join(work, "sc", "plan.json")))
check(any(s["key"].startswith("sc/") for s in sc_plan["codec_states"]), "plan.json of SC: per-gradient sc/ states")


def train(name, steps, extra=()):
    log = os.path.join(work, f"{name}-{steps}{'-'.join(extra).replace('/', '_')}.json")
    rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps", str(steps),
                   "--val-batches", "1", "--seed", str(SEED), "--log", log, "--timeout", "120", *extra], timeout=600)
    check(rc == 0, f"ptrain-run {name} {steps} steps {' '.join(extra)}" + ("" if rc == 0 else ":\n" + out))
    return json.load(open(log)) if rc == 0 else None


logs = {"none": train("none", 3), "exact": train("exact", 3), "sc": train("sc", 3),
        "occ": train("occ", 5, ["--checkpoint", os.path.join(work, "straight")]),
        "inone": train("inone", 3), "iocc": train("iocc", 3), "iexact": train("iexact", 3)}
if any(v is None for v in logs.values()):
    finish()
for name, log in logs.items():
    print(f"{name}: train {log['train_loss']} val {log['val_loss']}")

# 1. Against the multi-rank executor on the same tokens (run_data.py's batches).
tokens = global_batches(source, data, os.path.join(work, "tokens.bin"), 3, SEED)
for name in ("occ", "sc", "iocc"):
    rc, out = run([os.path.join(BIN, "ptrain-interpret"), os.path.join(work, name, "step.mlir"), "--weights", MODEL,
                   "--multi-rank", "--steps", "3", "--tokens-file", tokens], timeout=600)
    check(rc == 0, f"ptrain-interpret --multi-rank on {name}/step.mlir" + ("" if rc == 0 else ":\n" + out))
    if rc != 0:
        continue
    executor = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    mpi = logs[name]["train_loss"][:3]
    worst = max(abs(x - y) / abs(x) for x, y in zip(executor, mpi))
    print(f"{name}: executor {executor}, worst relative difference to mpirun {worst:.3e}")
    check(len(executor) == 3 and worst <= 1e-5, f"{name}: compiled plan under mpirun = executor within 1e-5 relative")
check(logs["occ"]["train_loss"][:3] != logs["none"]["train_loss"], "optimus-cc changes the training (CB is lossy)")

# 2. Exact path: bit-equal.
check(logs["exact"]["train_loss"] == logs["none"]["train_loss"] and logs["exact"]["val_loss"] == logs["none"]["val_loss"],
      "exact-path PowerSGD on every backward send: bit-equal to the uncompressed plan")

# 3. Bytes per step from the runtime's counters.
B, S, H, M, R = 4, 64, 128, 4, 16
full = B * S * H * 4
for name, log in (("none", logs["none"]), ("occ", logs["occ"])):
    t = log["traffic"]
    steps = log["steps"] - log["start_step"]
    print(f"{name}: traffic per step " + ", ".join(f"{k} {v['bytes'] // steps}" for k, v in t.items()))
expected = {"none": (M * full, M), "occ": ((M - 1) * full + (B * S + H) * R * 4, M + 1)}
for name, (bytes_, messages) in expected.items():
    t, steps = logs[name]["traffic"], logs[name]["steps"]
    check(t["pp forward 0->1"]["bytes"] == steps * M * full, f"{name}: forward 0->1 = {M * full} bytes per step")
    check(t["pp backward 1->0"]["bytes"] == steps * bytes_ and t["pp backward 1->0"]["messages"] == steps * messages,
          f"{name}: backward 1->0 = {bytes_} bytes in {messages} messages per step")

sc_ops = re.findall(r"ptrain\.compressed_all_reduce_start .*?#ptrain\.powersgd<rank = (\d+)>.*? : tensor<([0-9x]+)xf32>",
                    open(os.path.join(work, "sc", "step.mlir")).read())
code = full_sc = 0
for rank, shape in sc_ops:
    dims = [int(d) for d in shape.split("x")]
    n, m, r = math.prod(dims[:-1]), dims[-1], int(rank)
    if (n + m) * r >= n * m:  # the exact path: M's n m floats, in P's 8-byte-aligned section first, then Q's
        code += n * m * 4 if n * m <= n * r else -(-n * r * 4 // 8) * 8 + (n * m - n * r) * 4
    else:
        code += (n + m) * r * 4
    full_sc += n * m * 4
dp_bytes = logs["sc"]["traffic"]["dp collectives"]["bytes"] / 3
print(f"sc: {len(sc_ops)} compressed all-reduces per replica and step; dp collectives {dp_bytes:,.0f} B per step, "
      f"uncompressed {2 * full_sc:,} ({dp_bytes / (2 * full_sc):.4f})")
check(len(sc_ops) > 0 and dp_bytes == 2 * code, f"sc: dp collectives = 2 replicas x {code:,} code bytes per step")

# 4. Resume: 3 steps with a checkpoint, then --resume to step 5, against the straight 5-step run above.
short = train("occ", 3, ["--checkpoint", os.path.join(work, "after3")])
again = train("occ", 5, ["--resume", os.path.join(work, "after3"), "--checkpoint", os.path.join(work, "resumed")])
if short and again:
    check(again["start_step"] == 3 and again["train_loss"] == logs["occ"]["train_loss"][3:],
          f"resume after 3 steps: steps 4-5 losses {again['train_loss']} = the straight run's")
    for s in (0, 1):
        a = open(os.path.join(work, f"straight.stage{s}"), "rb").read()
        b = open(os.path.join(work, f"resumed.stage{s}"), "rb").read()
        check(a == b, f"stage {s}: the resumed run's final checkpoint equals the straight run's, byte for byte")
    states = read_checkpoint(os.path.join(work, "straight.stage1"))
    for key in ("pp1->0/residual", "pp1->0/warm_start_q"):
        values = struct.unpack(f"<{len(states.get(key, b'')) // 4}f", states.get(key, b""))
        norm = math.sqrt(sum(v * v for v in values))
        print(f"{key}: {len(values)} values, norm {norm:.4f}")
        check(norm > 0, f"stage 1's checkpoint holds the codec state {key} (nonzero)")

# 6. Interleaved: the codec states per chunk boundary, CB lossy, the exact path bit-equal.
iplan = json.load(open(os.path.join(work, "iocc", "plan.json")))
ikeys = sorted(s["key"] for s in iplan["codec_states"])
want = sorted(f"{link}/{what}" for link in ("pp0->1/c1->0", "pp1->0/c0->0", "pp1->0/c1->1")
              for what in ("residual", "warm_start_q"))
check(ikeys == want, f"interleaved plan.json: one residual and warm start per chunk boundary: {ikeys}")
check(logs["iocc"]["train_loss"] != logs["inone"]["train_loss"], "interleaved optimus-cc changes the training")
check(logs["iexact"]["train_loss"] == logs["inone"]["train_loss"] and
      logs["iexact"]["val_loss"] == logs["inone"]["val_loss"],
      "interleaved exact-path PowerSGD on every backward send: bit-equal to the uncompressed interleaved plan")

# 5. Errors.
rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--policy", "optimus-cc", *common, "-o",
               os.path.join(work, "bad")])
check(rc != 0 and "compression needs traffic between ranks" in out, "--policy on one rank")
rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, *pp2, "--compress-options", "cb-rank=8", *common, "-o",
               os.path.join(work, "bad")])
check(rc != 0 and "without --policy" in out, "--compress-options without --policy")
rc, out = run([os.path.join(BIN, "ptrain-run"), os.path.join(work, "occ"), "--data", data, "--steps", "5",
               "--resume", os.path.join(work, "missing")], timeout=60)
check(rc != 0 and "no checkpoint file" in out, "--resume of a missing checkpoint")

finish()
